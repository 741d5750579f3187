"""The fast paths on the real embedded model give what the stock llama-cpp-python calls give.

* one greedy generation read as both arms == two create_completion calls (with and without
  ``stop``), and the experiment's counts == the two-pass path's, on a small sample;
* batched decoding: with width 1 the one-at-a-time tokens exactly; with the experiment's
  width, forgery verdicts that agree with one-at-a-time decoding within noise;
* the one-token grammar check == create_completion(grammar=...) token for token;
* the cache rules: the same prompt twice (or after a prefix snapshot was restored) gives
  the cold completion.
Properties of the model's output, not its exact text. Run under the model lock.
"""
import json

import pytest

from react_lab import protocol
from react_lab.backends.chat import LocalChatModel
from react_lab.backends.decode import greedy_decode, greedy_decode_batch
from react_lab.backends.grammar import reply_grammar
from react_lab.backends.llama_state import (
    ContextWindowExceeded,
    common_prefix,
    trim_cache,
)
from react_lab.backends.local import local_model
from react_lab.cli import main
from react_lab.experiments import forge
from react_lab.experiments.stats import paired_comparison
from react_lab.guards import MORE, Guards
from react_lab.native import SYSTEM
from react_lab.notebook.warm import native_prompts, text_prompts
from react_lab.parser import find_forged
from react_lab.tools import default_tools, tool_schemas

pytestmark = pytest.mark.model

N = 4


@pytest.fixture(scope="module")
def model():
    return local_model()


def rendered(model, question):
    return model.render(protocol.build_prompt(question, default_tools().values()))


class TwoPasses:
    """The embedded model behind a plain ``complete``: run_experiment takes its two-pass path."""

    def __init__(self, inner):
        self.inner, self.name, self.temperature = inner, inner.name, inner.temperature

    def complete(self, prompt, **kwargs):
        return self.inner.complete(prompt, **kwargs)

    def count_tokens(self, text):
        return self.inner.count_tokens(text)


def test_the_experiment_counts_the_same_both_ways(model):
    texts = forge.questions(N)
    # Each path starts from an empty KV cache, so neither is charged (or spared) the shared
    # prefix because of what ran before it: the prompt-token counts below compare the paths.
    model.llm.reset()
    fast = forge.run_experiment(texts, model, tail=3, batch=1, progress=False)
    model.llm.reset()
    slow = forge.run_experiment(texts, TwoPasses(model), tail=3, progress=False)
    assert fast["arms_from"] == forge.ONE_GENERATION and slow["arms_from"] == forge.TWO_PASSES
    for arm in forge.ARMS:
        assert fast[arm]["forged"] == slow[arm]["forged"]
    assert fast["with_stop"]["completion_tokens"] == slow["with_stop"]["completion_tokens"]
    # with stop: the one generation's cut is the completion stop gives, token for token
    same = ("text", "finish_reason", "completion_tokens")
    assert [[t[k] for k in same] for t in fast["trials"]["with_stop"]] == \
        [[t[k] for k in same] for t in slow["trials"]["with_stop"]]
    # without stop, ended at the forgery: a prefix with the same verdict and place
    for f, s in zip(fast["trials"]["without_stop"], slow["trials"]["without_stop"]):
        assert s["text"].startswith(f["text"]) and f["forged_at"] == s["forged_at"]
    # the tail subsample runs on to max_tokens: the whole no-stop completion, token for token
    assert [[t[k] for k in same] for t in fast["tail_subsample"]["trials"]] == \
        [[t[k] for k in same] for t in slow["trials"]["without_stop"][:3]]
    # the one generation costs less: fewer prompt tokens evaluated, fewer generated
    assert fast["tokens"]["prompt_evaluated"] < slow["tokens"]["prompt_evaluated"]
    assert fast["tokens"]["generated"] < slow["tokens"]["generated"]
    assert fast["tokens"]["prompt_sent"] == slow["tokens"]["prompt_sent"] // 2


def test_a_batch_of_width_one_decodes_the_one_at_a_time_tokens(model):
    prompts = [model.tokenize(rendered(model, q)) for q in forge.questions(4)]
    seen = []

    def on_token(i, token):
        seen.append(i)
        return i != 2 or len(seen) < 50  # end the third completion early, from outside

    batched = greedy_decode_batch(model.llm, prompts, max_tokens=60, width=1, on_token=on_token)
    for i, (prompt, b) in enumerate(zip(prompts, batched)):
        alone = greedy_decode(model.llm, prompt, max_tokens=60)
        if b.finish == "stopped":
            assert i == 2 and alone.tokens[:len(b.tokens)] == b.tokens
        else:
            assert (b.tokens, b.finish) == (alone.tokens, alone.finish)
    assert batched[2].finish == "stopped"
    # the shared prefix is evaluated once, each prompt's own rest once
    shared = min(common_prefix(prompts[0], p) for p in prompts)
    assert sum(b.evaluated_tokens for b in batched) == sum(len(p) for p in prompts) - 3 * shared
    with pytest.raises(ContextWindowExceeded):
        greedy_decode_batch(model.llm, [prompts[0] * 10], max_tokens=8)
    with pytest.raises(ValueError, match="width"):
        greedy_decode_batch(model.llm, prompts, max_tokens=8, width=0)


def test_the_batched_decoder_refuses_bad_input_and_takes_any_width_llama_cpp_allows(model):
    llm = model.llm
    tiny = [model.tokenize(f"Count: {i}") for i in range(256)]
    for width in (64, 255):  # llama.cpp asserted (and aborted the process) from 64 on
        out = greedy_decode_batch(llm, tiny[:width + 1], max_tokens=1, width=width)
        assert len(out) == width + 1 and all(len(d.tokens) <= 1 for d in out)
    for bad, match in (({"width": 256}, "width"), ({"max_tokens": 0}, "max_tokens"),
                       ({"prompts": [[]]}, "at least one token"),
                       ({"prompts": [[llm.n_vocab()]]}, "vocabulary")):
        args = {"prompts": tiny[:2], "max_tokens": 2, "width": 2, **bad}
        with pytest.raises(ValueError, match=match):
            greedy_decode_batch(llm, args.pop("prompts"), **args)
    with pytest.raises(ValueError, match="no tokens"):
        model.decode("", max_tokens=3)   # not a continuation of whatever ran before
    with pytest.raises(ValueError, match="no tokens"):
        model.decode_many(["", "Count: 1"], max_tokens=3)


def test_batching_differences_finds_none_between_two_one_at_a_time_runs(model):
    texts = forge.questions(N)
    same = forge.batching_differences(model, texts, max_tokens=8, batch=1)
    assert (same["same"], same["parted"]) == (N, [])
    sides = forge.batching_differences(model, texts, max_tokens=8)
    assert sides["same"] + len(sides["parted"]) == N and sides["batch"] == forge.BATCH
    for p in sides["parted"]:
        assert 0 <= p["at"] < 8 and p["alone"] != p["batched"]


def test_side_by_side_the_forgery_verdicts_agree_with_one_at_a_time_within_noise(model):
    texts = forge.questions(8)
    alone = forge.run_experiment(texts, model, tail=0, batch=1, progress=False)
    batched = forge.run_experiment(texts, model, tail=0, batch=forge.BATCH, progress=False)
    assert batched["batch"] == forge.BATCH and alone["batch"] == 1
    assert batched["with_stop"]["forged"] == 0      # the stop sequence holds either way
    verdicts = [{t["question"]: t["forged"] for t in r["trials"]["without_stop"]} for r in (alone, batched)]
    paired = paired_comparison(*verdicts)
    assert paired.verdict == "not significant" and paired.gained + paired.lost <= len(texts) // 3
    # the same questions, in order, each read as both arms from one generation
    for w, f in zip(batched["trials"]["with_stop"], batched["trials"]["without_stop"]):
        assert w["question"] == f["question"] and f["text"].startswith(w["text"])


def test_forge_rate_cli_reports_wall_time_and_prompt_tokens_sent_against_evaluated(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("REACT_LAB_CACHE", str(tmp_path))
    assert main(["forge-rate", "--n", "4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["seconds"] > 0 and out["arms_from"] == forge.ONE_GENERATION
    tokens = out["tokens"]
    assert 0 < tokens["prompt_evaluated"] < tokens["prompt_sent"] / 4  # the shared prefix is reused


def test_the_grammar_check_on_one_token_gives_the_stock_tokens(model):
    from llama_cpp import LlamaGrammar

    chat = LocalChatModel(model)
    schemas = tool_schemas({**default_tools(), MORE: Guards().more_tool()})
    llm = model.llm
    for question, choice in [("Has invoice INV-2130 been paid?", "auto"),
                             ("Was cus_8812 charged twice for INV-2041 in July?", "required"),
                             ("When was the latest invoice of cus_4417 issued?", "none")]:
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
        prompt = chat.render(messages, schemas)
        grammar = reply_grammar(schemas, tool_choice=choice)
        trim_cache(llm, model.tokenize(prompt))  # the same cache state for both calls
        stock = llm.create_completion(prompt, grammar=LlamaGrammar.from_string(grammar, verbose=False),
                                      temperature=0.0, max_tokens=160)
        reply = chat.chat(messages, tools=schemas, max_tokens=160, tool_choice=choice)
        assert reply.text == stock["choices"][0]["text"], question
        assert reply.completion_tokens == stock["usage"]["completion_tokens"]


def test_the_same_prompt_twice_and_after_a_snapshot_gives_the_cold_completion(model):
    prompt = protocol.build_prompt("Did charge ch_9vVENq go through?", default_tools().values())
    model.llm.reset()
    cold = model.complete(prompt, stop=protocol.STOP, max_tokens=64)
    # the stop sequence holds and is never returned; the counts are the model's own
    assert find_forged(cold.text) is None and not any(s in cold.text for s in protocol.STOP)
    assert 0 < cold.completion_tokens <= 64 and cold.prompt_tokens > 100
    again = model.complete(prompt, stop=protocol.STOP, max_tokens=64)  # all of it cached
    assert again.text == cold.text and again.evaluated_tokens == 2
    text_state = model.remember_prefix(text_prompts(model))
    model.decode(native_prompts(model)[0], max_tokens=1)          # another prompt pushes it out
    restores = text_state.restores
    after = model.complete(prompt, stop=protocol.STOP, max_tokens=64)
    assert text_state.restores == restores + 1                   # restored, not evaluated again
    assert after.text == cold.text and after.evaluated_tokens < 40


def test_prompts_cut_into_the_models_small_calls_give_the_logits_of_one_large_call(model):
    """The model evaluates prompts EVAL_CALL_TOKENS at a time (less scratch memory); the logits
    after the prompt are bit-identical to llama-cpp-python's stock evaluation in one call."""
    import llama_cpp
    import numpy as np

    from react_lab.backends.llama_state import EVAL_CALL_TOKENS, eval_cuts
    from react_lab.backends.local import smollm2_path

    stock = llama_cpp.Llama(model_path=str(model.path or smollm2_path()), n_ctx=512, n_batch=512,
                            n_threads=model.llm.n_threads, n_threads_batch=model.llm.n_threads,
                            flash_attn=False, verbose=False)

    def last_logits(llm, tokens):
        llm.reset()
        llm.eval(tokens)
        return np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1),
                                     shape=(llm.n_vocab(),)).copy()

    try:
        tokens = model.tokenize(rendered(model, "Which invoices of cus_4417 are still open?"))
        for n in (EVAL_CALL_TOKENS + 1, 2 * EVAL_CALL_TOKENS + 1):  # cut [127, 2] and [128, 127, 2]
            assert len(eval_cuts(n, EVAL_CALL_TOKENS)) > 1
            assert np.array_equal(last_logits(model.llm, tokens[:n]), last_logits(stock, tokens[:n])), n
    finally:
        stock.close()
        model.llm.reset()

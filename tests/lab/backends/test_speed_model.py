"""The fast paths on the real embedded model give what the stock llama-cpp-python calls give.

* batched decoding: with width 1 the one-at-a-time tokens exactly, and bad input refused;
* the one-token grammar check == create_completion(grammar=...) token for token;
* the cache rules: the same prompt twice (or after a prefix snapshot was restored) gives
  the cold completion.
Properties of the model's output, not its exact text. Run under the model lock. (The
forgery experiment's fast paths: ``tests/lab/experiments/test_forge_model.py``.)
"""

import pytest

from react_lab import protocol
from react_lab.lab.agent.parser import find_forged
from react_lab.lab.backends.chat import LocalChatModel
from react_lab.lab.backends.decode import greedy_decode, greedy_decode_batch
from react_lab.lab.backends.grammar import reply_grammar
from react_lab.lab.backends.llama_state import (
    ContextWindowExceeded,
    common_prefix,
    trim_cache,
)
from react_lab.lab.experiments import forge
from react_lab.lab.guards import LabGuards
from react_lab.lab.notebook.warm import native_prompts, text_prompts
from react_lab.messages import SYSTEM
from react_lab.tools import default_tools, tool_schemas

pytestmark = pytest.mark.model


def rendered(model, question):
    return model.render(protocol.build_prompt(question, default_tools().values()))


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
            assert i == 2 and alone.tokens[: len(b.tokens)] == b.tokens
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
        out = greedy_decode_batch(llm, tiny[: width + 1], max_tokens=1, width=width)
        assert len(out) == width + 1 and all(len(d.tokens) <= 1 for d in out)
    for bad, match in (
        ({"width": 256}, "width"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"prompts": [[]]}, "at least one token"),
        ({"prompts": [[llm.n_vocab()]]}, "vocabulary"),
    ):
        args = {"prompts": tiny[:2], "max_tokens": 2, "width": 2, **bad}
        with pytest.raises(ValueError, match=match):
            greedy_decode_batch(llm, args.pop("prompts"), **args)
    with pytest.raises(ValueError, match="no tokens"):
        model.decode("", max_tokens=3)  # not a continuation of whatever ran before
    with pytest.raises(ValueError, match="no tokens"):
        model.decode_many(["", "Count: 1"], max_tokens=3)


def test_the_grammar_check_on_one_token_gives_the_stock_tokens(model):
    from llama_cpp import LlamaGrammar

    chat = LocalChatModel(model)
    schemas = tool_schemas(LabGuards().offered_tools(default_tools()))
    llm = model.llm
    for question, choice in [
        ("Has invoice INV-2130 been paid?", "auto"),
        ("Was cus_8812 charged twice for INV-2041 in July?", "required"),
        ("When was the latest invoice of cus_4417 issued?", "none"),
    ]:
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
        prompt = chat.render(messages, schemas)
        grammar = reply_grammar(schemas, tool_choice=choice)
        trim_cache(llm, model.tokenize(prompt))  # the same cache state for both calls
        stock = llm.create_completion(
            prompt,
            grammar=LlamaGrammar.from_string(grammar, verbose=False),
            temperature=0.0,
            max_tokens=160,
        )
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
    model.decode(native_prompts(model)[0], max_tokens=1)  # another prompt pushes it out
    restores = text_state.restores
    after = model.complete(prompt, stop=protocol.STOP, max_tokens=64)
    assert text_state.restores == restores + 1  # restored, not evaluated again
    assert after.text == cold.text and after.evaluated_tokens < 40


def test_prompts_cut_into_the_models_small_calls_give_the_logits_of_one_large_call(model):
    """The model evaluates prompts EVAL_CALL_TOKENS at a time (less scratch memory); the logits
    after the prompt are bit-identical to llama-cpp-python's stock evaluation in one call."""
    import llama_cpp
    import numpy as np

    from react_lab.lab.backends.llama_state import EVAL_CALL_TOKENS, eval_cuts
    from react_lab.lab.backends.local import smollm2_path

    stock = llama_cpp.Llama(
        model_path=str(model.path or smollm2_path()),
        n_ctx=512,
        n_batch=512,
        n_threads=model.llm.n_threads,
        n_threads_batch=model.llm.n_threads,
        flash_attn=False,
        verbose=False,
    )

    def last_logits(llm, tokens):
        llm.reset()
        llm.eval(tokens)
        return np.ctypeslib.as_array(
            llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1), shape=(llm.n_vocab(),)
        ).copy()

    try:
        tokens = model.tokenize(rendered(model, "Which invoices of cus_4417 are still open?"))
        for n in (EVAL_CALL_TOKENS + 1, 2 * EVAL_CALL_TOKENS + 1):  # cut [127, 2] and [128, 127, 2]
            assert len(eval_cuts(n, EVAL_CALL_TOKENS)) > 1
            assert np.array_equal(
                last_logits(model.llm, tokens[:n]), last_logits(stock, tokens[:n])
            ), n
    finally:
        stock.close()
        model.llm.reset()

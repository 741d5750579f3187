"""The forgery experiment's fast paths on the real embedded model give what the slow ones give.

* one greedy generation read as both arms == two create_completion calls (with and without
  ``stop``), and the experiment's counts == the two-pass path's, on a small sample;
* side by side (the experiment's batch) the forgery verdicts agree with one-at-a-time
  decoding within noise, and ``batching_differences`` finds none between two one-at-a-time runs;
* ``react-lab forge-rate`` reports its wall time and the prompt tokens sent against evaluated.
Properties of the model's output, not its exact text. Run under the model lock.
"""

import json

import pytest

from react_lab.lab.cli import main
from react_lab.lab.experiments import forge
from react_lab.lab.experiments.stats import paired_comparison

pytestmark = pytest.mark.model

N = 4


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
    assert [[t[k] for k in same] for t in fast["trials"]["with_stop"]] == [
        [t[k] for k in same] for t in slow["trials"]["with_stop"]
    ]
    # without stop, ended at the forgery: a prefix with the same verdict and place
    for f, s in zip(fast["trials"]["without_stop"], slow["trials"]["without_stop"]):
        assert s["text"].startswith(f["text"]) and f["forged_at"] == s["forged_at"]
    # the tail subsample runs on to max_tokens: the whole no-stop completion, token for token
    assert [[t[k] for k in same] for t in fast["tail_subsample"]["trials"]] == [
        [t[k] for k in same] for t in slow["trials"]["without_stop"][:3]
    ]
    # the one generation costs less: fewer prompt tokens evaluated, fewer generated
    assert fast["tokens"]["prompt_evaluated"] < slow["tokens"]["prompt_evaluated"]
    assert fast["tokens"]["generated"] < slow["tokens"]["generated"]
    assert fast["tokens"]["prompt_sent"] == slow["tokens"]["prompt_sent"] // 2


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
    assert batched["with_stop"]["forged"] == 0  # the stop sequence holds either way
    verdicts = [
        {t["question"]: t["forged"] for t in r["trials"]["without_stop"]} for r in (alone, batched)
    ]
    paired = paired_comparison(*verdicts)
    assert paired.verdict == "not significant" and paired.gained + paired.lost <= len(texts) // 3
    # the same questions, in order, each read as both arms from one generation
    for w, f in zip(batched["trials"]["with_stop"], batched["trials"]["without_stop"]):
        assert w["question"] == f["question"] and f["text"].startswith(w["text"])


def test_forge_rate_cli_reports_wall_time_and_prompt_tokens_sent_against_evaluated(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("REACT_LAB_CACHE", str(tmp_path))
    assert main(["forge-rate", "--n", "4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["seconds"] > 0 and out["arms_from"] == forge.ONE_GENERATION
    tokens = out["tokens"]
    assert 0 < tokens["prompt_evaluated"] < tokens["prompt_sent"] / 4  # the shared prefix is reused

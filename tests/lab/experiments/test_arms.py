"""One generation read as both arms.

The reader's rules, and the experiment's two paths agreeing (no model).

The embedded model's own check (real tokens, against two real create_completion calls) is
tests/lab/experiments/test_forge_model.py. Here a stand-in "greedy model" replays a script one
byte per token, so every rule of the reader can be hit on purpose.
"""

import random
import re

import pytest
from helpers.model_like import LABELLY
from helpers.parsing_checks import BARE, INLINE
from hypothesis import given, settings
from hypothesis import strategies as st

from react_lab import protocol
from react_lab.lab.agent.parser import find_forged
from react_lab.lab.backends.base import Completion
from react_lab.lab.backends.decode import Decoded
from react_lab.lab.backends.local import LocalModel
from react_lab.lab.backends.scripted import ScriptedModel
from react_lab.lab.experiments import forge
from react_lab.lab.experiments.arms import TwoArmReader, settled_forgery


def detokenize(tokens):
    """Byte-level tokens: each token is one byte of UTF-8."""
    return bytes(tokens)


def read(text, *, max_tokens=80, run_to_max=False, stop=protocol.STOP):
    """Feed ``text`` byte by byte as a greedy stream; end of text when it runs out."""
    reader = TwoArmReader(detokenize, max_tokens=max_tokens, run_to_max=run_to_max, stop=stop)
    data = text.encode()
    for byte in data:
        if not reader.feed(byte):
            return reader
    reader.end_of_text()
    return reader


def provider_cut(text, stop=protocol.STOP):
    """What a provider returns for ``text`` with ``stop``: cut before the earliest stop string."""
    hits = [text.find(s) for s in stop if s in text]
    return text[: min(hits)] if hits else text


def test_with_stop_is_cut_before_the_stop_string_and_without_stop_ends_at_the_forgery():
    text = 'I need it.\nAction: get_charge[ch_1]\nObservation: {"status": "paid"}\nThought: paid'
    r = read(text)
    assert r.with_stop.text == "I need it.\nAction: get_charge[ch_1]"
    assert r.with_stop.finish_reason == "stop"
    assert r.without_stop.finish_reason == "forged"
    assert r.without_stop.text == text[: text.index("Observation:") + len("Observation:")]
    assert find_forged(r.without_stop.text) == find_forged(text)
    assert r.early is r.without_stop and len(r.tokens) < len(text.encode())  # it stopped early


def test_run_to_max_keeps_going_and_remembers_the_early_end():
    text = "x\nAction: a[b]\nObservation: made up\nAnswer: 42"
    r = read(text, run_to_max=True)
    assert r.without_stop.text == text and r.without_stop.finish_reason == "stop"
    assert r.early.finish_reason == "forged" and text.startswith(r.early.text)
    tail = text[find_forged(text) :].encode()
    assert r.tail_tokens() == len(tail)  # one byte per token: the tail's bytes


def test_max_tokens_ends_both_arms_with_length():
    r = read("word " * 40, max_tokens=10)
    assert r.with_stop.finish_reason == r.without_stop.finish_reason == "length"
    assert r.with_stop.completion_tokens == 10 and r.with_stop.text == ("word " * 2)


def test_end_of_text_ends_both_arms():
    r = read("Answer: 42")
    assert r.with_stop.text == r.without_stop.text == "Answer: 42"
    assert r.with_stop.finish_reason == r.without_stop.finish_reason == "stop"


def test_lowercase_label_is_a_forgery_but_no_stop_string_so_the_stop_arm_runs_on():
    text = "x\nobservation: fake\nmore text here"
    r = read(text, max_tokens=200)
    assert r.with_stop.text == text and r.with_stop.finish_reason == "stop"  # stop never hit
    assert find_forged(r.without_stop.text) == find_forged(text)


def test_an_incomplete_utf8_character_is_held_back_before_the_stop_check():
    # "é" is two bytes: after its first byte the reader must not check stop or length yet.
    r = read("caf\u00e9 ok", max_tokens=4)
    assert r.with_stop.completion_tokens == 5 and r.with_stop.text == "caf\u00e9"
    assert r.with_stop.finish_reason == "length"


def test_stop_strings_in_list_order_decide_when_both_appear_at_once():
    text = "ab\nObs"
    r = read(text, stop=["Obs", "\nObs"])
    assert r.with_stop.text == "ab\n"  # "Obs" is first in the list, though "\nObs" starts earlier
    r = read(text, stop=["\nObs", "Obs"])
    assert r.with_stop.text == "ab"


# --------------------------------------------------------------------------- the experiment's paths


class ByteLlm:
    detokenize = staticmethod(detokenize)


class ReplayedGreedy(LocalModel):
    """A LocalModel whose greedy generation replays a script, one byte per token (no llama.cpp)."""

    def __init__(self, replies: dict[str, str]):
        super().__init__()
        self.replies, self._llm = replies, ByteLlm()

    @property
    def name(self):
        return "replayed"

    def render(self, prompt):
        return prompt

    def decode(self, text, *, max_tokens, on_token=None, grammar=None):
        data = list(self.replies[re.search(r"Question: (.*)\nThought:$", text).group(1)].encode())
        tokens, finish = [], "length"
        while len(tokens) < max_tokens:
            if len(tokens) == len(data):
                finish = "end_of_text"
                break
            tokens.append(data[len(tokens)])
            if on_token is not None and not on_token(tokens[-1]):
                finish = "stopped"
                break
        self.usage.add(len(text), 3, len(tokens), 0.0)
        return Completion(
            bytes(tokens).decode(),
            "stop",
            len(text),
            len(tokens),
            0.0,
            3,
            raw=Decoded(tokens, finish, 3, 0.0),
        )


REPLIES = {
    "q1": (
        " I need the charge.\nAction: get_charge[ch_1]\n"
        'Observation: {"status": "refunded"}\nAnswer: refunded'
    ),
    "q2": " I know.\nAnswer: 42",
    "q3": " Search.\nAction: search[refund policy]\nObservation 1: made up\nThought: so",
    "q4": " Look it up.\nAction: list_invoices[cus_1, 2026-07-01]\n**Observation:** [] and on",
    "q5": " " + "very long thought " * 20,
}


def test_one_generation_and_two_passes_count_the_same():
    texts = list(REPLIES)
    fast = forge.run_experiment(
        texts, ReplayedGreedy(REPLIES), max_tokens=400, tail=2, batch=1, progress=False
    )
    slow = forge.run_experiment(
        texts,
        ScriptedModel([REPLIES[q] for q in texts] * 2),
        max_tokens=400,
        tail=2,
        progress=False,
    )
    assert fast["arms_from"] == forge.ONE_GENERATION and slow["arms_from"] == forge.TWO_PASSES
    for arm in forge.ARMS:
        assert fast[arm]["forged"] == slow[arm]["forged"]
    same = ("forged", "parsed", "finals", "finish_reasons")
    assert {k: fast["with_stop"][k] for k in same} == {k: slow["with_stop"][k] for k in same}
    for f, s in zip(fast["trials"]["with_stop"], slow["trials"]["with_stop"]):
        assert f["text"] == s["text"]
    for f, s in zip(fast["trials"]["without_stop"], slow["trials"]["without_stop"]):
        assert s["text"].startswith(f["text"]) and f["forged_at"] == s["forged_at"]
        assert f["finish_reason"] == ("forged" if s["forged"] else s["finish_reason"])
        if f["strict"] != s["strict"]:  # only an Answer written after the forgery is lost
            assert s["strict"] == "final" and "Answer:" not in f["text"] and "Answer:" in s["text"]
    # q1's only Answer comes after its forged Observation: the early end never sees it, and
    # the strict regex then finds q1's action instead
    assert slow["without_stop"]["finals"] == 2 and fast["without_stop"]["finals"] == 1  # q2 answers
    assert fast["without_stop"]["parsed"] == slow["without_stop"]["parsed"] + 1
    assert [t["text"] for t in fast["tail_subsample"]["trials"]] == [REPLIES["q1"], REPLIES["q2"]]
    assert forge.truncation_costs(fast)["tail_tokens"] == len(
        REPLIES["q1"][REPLIES["q1"].index("Observation") :]
    )
    # the counts come from the model's own counters: 3 prompt tokens evaluated per question
    assert fast["tokens"]["prompt_evaluated"] == 15 and fast["tokens"]["prompt_sent"] > 15
    generated = [
        t["text"] for t in fast["tail_subsample"]["trials"] + fast["trials"]["without_stop"][2:]
    ]
    assert fast["tokens"]["generated"] == sum(len(text.encode()) for text in generated)


# --------------------------------------------------------------------------- settled_forgery

SYNTHETIC = [
    "Thought: x\nAction: a[b]\nObservation: {}\n",
    "x\n<Observation: a> ok\nmore",
    "x\nObservation -based reading\nObservation - ok",
    "x\n**Observation**: y",
    "x\n- Observation (1): y",
    "x\nObservational data: y\nObservation: z",
    "a\r\nObservation: b",
    "a\u2028Observation\uff1ab",
    "the observation: no\nObs",
    "x\n<b>Observation</b>: y",
    "x\nObservation\u2014",
    "x\nObservation-",
    "x\nObservation -\u00e9",
]
PIECES = ["Observation", ":", " ", "\n", "-", "<", ">", "b", "**", "1", "x", "\u2014", "Obs", "\r"]


def never_contradicts(text):
    full = find_forged(text)
    for i in range(1, len(text) + 1):
        got = settled_forgery(text[:i])
        assert got is None or got == full, (text[:i], text)


@pytest.mark.parametrize("text", SYNTHETIC)
def test_settled_forgery_never_contradicts_the_finished_text(text):
    never_contradicts(text)


def test_settled_forgery_on_random_texts():
    rng = random.Random(0)
    for _ in range(3000):
        never_contradicts("".join(rng.choice(PIECES) for _ in range(rng.randint(1, 14))))


@given(st.lists(st.sampled_from(PIECES) | st.text(max_size=4), max_size=12).map("".join))
def test_settled_forgery_property(text):
    never_contradicts(text)


def test_settled_forgery_settles_once_the_label_is_complete():
    assert settled_forgery("x\nObservation") is None  # could still become Observational
    assert settled_forgery("x\nObservation:") == 2
    assert settled_forgery("x\nObservation -") is None  # could become "Observation -based"
    assert settled_forgery("x\nObservation - ") == 2
    assert settled_forgery("x\n<b>Observation</b>:") is None  # inside markup: wait for the line
    assert settled_forgery("x\n<b>Observation</b>: y\n") == 2


@pytest.mark.parametrize("label", BARE)
def test_settled_forgery_takes_the_label_alone_once_its_line_is_finished(label):
    text = f"Thought: check\nAction: get_payments[INV-2291]\n{label}\n[] \nAnswer: unpaid"
    assert settled_forgery(text) == find_forged(text) == text.index(label)
    assert settled_forgery(f"Thought: check\n{label}") is None  # may yet become prose


@pytest.mark.parametrize("line", INLINE)
def test_settled_forgery_takes_an_observation_after_the_call_on_its_line(line):
    text = f"Thought: look\n{line}\nAnswer: 3 refunds"
    at = find_forged(text)
    assert at is not None and settled_forgery(text) == at
    assert settled_forgery(text[: text.index(": 3") + 2]) in (None, at)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(LABELLY), st.text(max_size=8)), max_size=40))
def test_settled_forgery_is_find_forged_or_not_yet_on_model_like_text(parts):
    text = "".join(parts)
    settled = settled_forgery(text)
    assert settled is None or settled == find_forged(text)

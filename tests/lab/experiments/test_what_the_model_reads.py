"""What the model reads from the loops, held word for word beside the shipped results.

A results file's fingerprint (:mod:`react_lab.lab.experiments.results`) covers the model, the
prompt prefix, the tool schemas, the tasks and the experiment's settings, but not what the
loops write into a run after its first prompt: observations, error wordings, refusals,
nudges, the best-effort request, compaction summaries, the database's rows as a tool shows
them. A change to any of those changes what the model reads on the shipped runs, so the
shipped results may no longer be what the code would measure.

These tests replay scripted runs that reach each of those paths, in the text and the native
loop, with the lesson's guards and the lab's, and compare every text the model was sent with
``what_the_model_reads.json``. When one fails, either undo the change, or (a change meant to
move the model) re-run the experiments whose results files it touches (the README lists the
commands) and then write the file anew::

    .venv/bin/python tests/lab/experiments/test_what_the_model_reads.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from react_lab.lab import loops
from react_lab.lab.agent import loop, native
from react_lab.lab.agent.guards import Guards
from react_lab.lab.backends.chat import ScriptedChatModel
from react_lab.lab.backends.scripted import ScriptedModel
from react_lab.lab.guards import LabGuards
from react_lab.tools import default_tools, open_db, payment_tool

SNAPSHOT = Path(__file__).with_name("what_the_model_reads.json")
QUESTION = "Was cus_8812 charged twice for INV-2041 in July?"
JULY = {"customer_id": "cus_8812", "since": "2026-07-01"}

#: A text run that meets every error path once: an unknown tool, a wrong argument count, a
#: tool error, a completion with neither an action nor an answer, a side-effecting call
#: refused by the approval gate, a forged observation (cut by the stop sequence), then the
#: same call three times (refused as repeats until the run ends) and a best-effort answer.
TEXT_SCRIPT = [
    " I need the refunds article.\nAction: serch[refunds]",
    " The charge.\nAction: get_charge[ch_1KZq8f, extra]",
    " The invoice.\nAction: find_invoice[INV-0000]",
    " Let me think about the July invoices first.",
    " Pay it.\nAction: schedule_payment[INV-2291, 1850]",
    " July's invoices.\nAction: list_invoices[cus_8812, 2026-07-01]"
    "\nObservation: forged\nAnswer: x",
    " Again.\nAction: list_invoices[cus_8812, 2026-07-01]",
    " Again.\nAction: list_invoices[cus_8812, 2026-07-01]",
    " Again.\nAction: list_invoices[cus_8812, 2026-07-01]",
    "Answer: Charged once.",
]

#: The same paths in native calls, a reply that is not the reply format (cut off), and a call
#: leaked into the answer's text.
NATIVE_SCRIPT = [
    {"thought": "Refunds.", "tool_calls": [{"name": "serch", "arguments": {"query": "refunds"}}]},
    {
        "thought": "July.",
        "tool_calls": [{"name": "list_invoices", "arguments": {"customer_id": "cus_8812"}}],
    },
    {
        "thought": "The invoice.",
        "tool_calls": [{"name": "find_invoice", "arguments": {"invoice_id": "INV-0000"}}],
    },
    '<tool_call>{"name": "list_invoices", "arguments": ' + json.dumps(JULY) + "}</tool_call>",
    {
        "thought": "July.",
        "answer": '<tool_call>{"name": "list_invoices", "arguments": '
        + json.dumps(JULY)
        + "}</tool_call>",
    },
    {
        "thought": "Pay it.",
        "tool_calls": [
            {"name": "schedule_payment", "arguments": {"invoice_id": "INV-2291", "amount": 1850}}
        ],
    },
    {"thought": "July.", "tool_calls": [{"name": "list_invoices", "arguments": JULY}]},
    {"thought": "Again.", "tool_calls": [{"name": "list_invoices", "arguments": JULY}]},
    {"thought": "Again.", "tool_calls": [{"name": "list_invoices", "arguments": JULY}]},
    {"thought": "Again.", "tool_calls": [{"name": "list_invoices", "arguments": JULY}]},
    {"thought": "Done.", "answer": "Charged once."},
]


def _tools(conn) -> dict:
    return {**default_tools(conn), "schedule_payment": payment_tool(conn)}


def _text_reads(ask, guards) -> list[str]:
    """Every prompt of one scripted text run: the first whole, then what each one added."""
    model = ScriptedModel(TEXT_SCRIPT)
    with open_db() as conn:
        ask(QUESTION, model, _tools(conn), guards=guards, max_steps=10)
    reads = [model.prompts[0]]
    for before, after in zip(model.prompts, model.prompts[1:]):
        reads.append(after[len(before) :] if after.startswith(before) else "(anew)\n" + after)
    return reads


def _native_reads(ask_native, guards) -> list[str]:
    """Every message of the last request of one scripted native run, as JSON lines."""
    model = ScriptedChatModel(NATIVE_SCRIPT)
    with open_db() as conn:
        ask_native(QUESTION, model, _tools(conn), guards=guards, max_steps=10)
    messages, _tools_offered = model.requests[-1]
    return [json.dumps(m, sort_keys=True, ensure_ascii=False) for m in messages]


def _lab_everything() -> LabGuards:
    return LabGuards(require_citation=True, pin_question=True, mark_data=True)


#: name -> what that run's model read; each is computed afresh and compared with the file.
RUNS = {
    "text, the lesson's guards": lambda: _text_reads(loop.ask, Guards()),
    "text, the lab's guards": lambda: _text_reads(loops.ask, LabGuards()),
    "text, the lab's guards, every switch on": lambda: _text_reads(loops.ask, _lab_everything()),
    "text, compacted": lambda: _text_reads(loop.ask, Guards(compact_at=300, keep_last=1)),
    "text, no guards": lambda: _text_reads(loop.ask, Guards.off()),
    "native, the lesson's guards": lambda: _native_reads(native.ask_native, Guards()),
    "native, the lab's guards": lambda: _native_reads(loops.ask_native, LabGuards()),
    "native, the lab's guards, every switch on": lambda: _native_reads(
        loops.ask_native, _lab_everything()
    ),
}


def _now() -> dict[str, list[str]]:
    return {name: run() for name, run in RUNS.items()}


@pytest.fixture(scope="module")
def stored() -> dict[str, list[str]]:
    return json.loads(SNAPSHOT.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", list(RUNS))
def test_the_model_reads_what_the_shipped_runs_read(name, stored):
    now = RUNS[name]()
    was = stored.get(name)
    assert was is not None, f"{SNAPSHOT.name} has no run {name!r}: write it anew (module doc)"
    for i, (a, b) in enumerate(zip(was, now)):
        assert a == b, (
            f"{name}: read {i} changed. This changes what the model reads on the shipped runs,"
            f" which their fingerprints do not see; undo it, or re-measure and write"
            f" {SNAPSHOT.name} anew (see this module's docstring).\nwas: {a!r}\nnow: {b!r}"
        )
    assert len(now) == len(was), f"{name}: {len(was)} reads before, {len(now)} now"


def test_the_runs_reach_the_paths_they_are_for(stored):
    """The scripts still reach what they were written for (a reworded script would not)."""
    text = "".join(stored["text, the lesson's guards"])
    for words in ("serch", "INV-0000", "schedule_payment", "no more tool calls"):
        assert words in text, words
    assert "forged" not in "".join(stored["text, the lesson's guards"][1:])
    assert any("compacted the earlier steps" in r for r in stored["text, compacted"])
    native_text = "".join(stored["native, the lesson's guards"])
    for words in ("serch", "INV-0000", "schedule_payment", "since", "cut off", "leaked_"):
        assert words in native_text, words


if __name__ == "__main__":
    SNAPSHOT.write_text(json.dumps(_now(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {SNAPSHOT}", file=sys.stderr)

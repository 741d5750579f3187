"""The README's table "The two agents", held against the code: each row's difference, run.

The learner's agent is :mod:`react_lab.agent` (what the core notebooks build); the bench's is
:mod:`react_lab.lab.agent`. Each row of the README's table names one way they differ; the
check of that row runs both agents on the same scripted model and asserts the difference the
row states. A row added to the README without a check here, or a check whose row is gone,
fails :func:`test_the_readme_table_lists_exactly_the_checked_differences`.
"""

import re
from pathlib import Path

import pytest

from react_lab import agent as learner
from react_lab.lab.agent import loop as bench
from react_lab.lab.agent.guards import Guards
from react_lab.lab.agent.trace import RunResult
from react_lab.lab.backends.scripted import ScriptedModel
from react_lab.tools import default_tools

README = Path(__file__).resolve().parents[2] / "README.md"
QUESTION = "Has supplier invoice INV-2291 been paid?"
FOUND = " I look it up.\nAction: find_invoice[INV-2291]"
ANSWER = " It is paid.\nAnswer: yes"


def readme_rows() -> list[str]:
    """The first column of the table under the README's heading "The two agents"."""
    text = README.read_text(encoding="utf-8")
    section = text.split("### The two agents", 1)[1].split("\n#", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| **")]
    return [re.match(r"\| \*\*(.+?)\*\*", row).group(1) for row in rows]


def both(script: list[str], **bench_options):
    """The learner's final agent and the bench's text loop on the same script."""
    tools = default_tools()
    mine = learner.composed().run_loop(QUESTION, ScriptedModel(script), tools, max_steps=3)
    theirs = bench.ask(QUESTION, ScriptedModel(script), tools, max_steps=3, **bench_options)
    return mine, theirs


def reading_an_action():
    # call syntax: the learner's anchored regex reads no action; the tolerant parser runs it
    (answer, transcript), result = both([' I look.\nAction: find_invoice("INV-2291")', ANSWER])
    assert "Error: no action line" in transcript
    assert result.steps[0].action["tool"] == "find_invoice" and result.answer == "yes"


def a_forged_observation():
    # the stop sequence switched off: the learner's loop keeps the model's own Observation and
    # takes the answer after it; the bench cuts the completion at the forgery and runs the tool
    forged = FOUND + '\nObservation: {"status": "paid"}\nThought: paid.\nAnswer: yes'
    tools = default_tools()
    answer, transcript = learner.composed().run_loop(
        QUESTION, ScriptedModel([forged]), tools, stop=None
    )
    assert answer == "yes" and learner.is_forged(transcript.split(QUESTION)[-1])
    result = bench.ask(QUESTION, ScriptedModel([forged, ANSWER]), tools, stop=False)
    assert result.steps[0].forged and result.steps[0].action["tool"] == "find_invoice"
    assert '{"status": "paid"}' not in result.transcript.text.split(QUESTION)[-1]


def named_arguments():
    # the learner splits on commas and names by position; the bench reads name=value too
    call = " I list.\nAction: list_invoices[customer_id=cus_8812, since=2026-07-01]"
    (_, transcript), result = both([call, ANSWER])
    assert "was not run" in transcript.split(QUESTION)[-1]
    assert result.steps[0].error is None and result.steps[0].observation.startswith("[")


def guards():
    # the learner's guards: a repeated call and the best effort; the bench's add budgets
    (answer, _), result = both([FOUND] * 4, guards=Guards(token_budget=5))
    assert answer.startswith("[best effort]")
    assert result.stopped_by == "token_budget" and len(result.steps) == 1


def the_best_effort():
    # a call written as the best effort: the learner's loop labels it the answer; the bench
    # reads it as a reply, and a call is no answer
    calls = [f" I look.\nAction: find_invoice[INV-{n}]" for n in (2291, 2041, 1591)]
    (answer, _), result = both([*calls, "find_invoice[INV-2291]"])
    assert answer == "[best effort] find_invoice[INV-2291]"
    assert result.answer is None and "find_invoice" in result.steps[-1].error


def the_context():
    # the learner's loop sends every step again; the bench compacts past a token limit
    script = [f" I look.\nAction: find_invoice[INV-{n}]" for n in (2291, 2041, 1591)] + [ANSWER]
    (_, transcript), result = both(script, guards=Guards(compact_at=300, keep_last=1))
    assert all(f'"invoice_id": "INV-{n}"' in transcript for n in (2291, 2041, 1591))
    assert "summary" in result.transcript.kinds
    assert '"invoice_id": "INV-2291"' not in result.transcript.text.split(QUESTION)[-1]


def a_runs_record():
    # the learner's loop returns (answer, transcript text); the bench a RunResult with its steps
    (answer, transcript), result = both([FOUND, ANSWER])
    assert (answer, type(transcript)) == ("yes", str)
    assert isinstance(result, RunResult) and [s.number for s in result.steps] == [1, 2]


CHECKS = {
    "reading an action": reading_an_action,
    "a forged Observation": a_forged_observation,
    "arguments": named_arguments,
    "guards": guards,
    "the best effort": the_best_effort,
    "the context": the_context,
    "a run's record": a_runs_record,
}


def test_the_readme_table_lists_exactly_the_checked_differences():
    assert readme_rows() == list(CHECKS)


@pytest.mark.parametrize("row", list(CHECKS))
def test_each_difference_holds(row):
    CHECKS[row]()

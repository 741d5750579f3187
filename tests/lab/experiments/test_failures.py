"""The failure-mode detectors of react_lab.lab.experiments.failures.

Each on a scripted run that shows it and one that does not.
"""

import json

import pytest

from react_lab import protocol
from react_lab.lab.agent.loop import ask
from react_lab.lab.backends.base import Completion
from react_lab.lab.backends.scripted import ScriptedModel
from react_lab.lab.cli import main
from react_lab.lab.experiments import failures, results
from react_lab.lab.experiments.failures import (
    FAILURE_MODES,
    GUARDS,
    PASS_CATEGORIES,
    PASS_MAX_STEPS,
    PER_CATEGORY,
    StopProbe,
    count_modes,
    drifted,
    failure_modes,
    fingerprint_inputs,
    live_pass,
    pass_config,
    pass_tasks,
    run_of,
    save_pass,
    unguarded_pass,
)
from react_lab.lab.guards import LabGuards
from react_lab.tools import Tool

Q = "Has INV-2291 been paid?"
CLEAN = [
    " The invoice first.\nAction: find_invoice[INV-2291]",
    " Its payments.\nAction: get_payments[INV-2291]",
    " It is approved and has no payments.\nAnswer: No, INV-2291 is not paid.",
]


def modes(completions, tools, question=Q, **kw):
    result = ask(question, ScriptedModel(completions), tools, guards=LabGuards.off(), max_steps=6)
    return failure_modes(result, tools=tools, **kw)


def test_a_clean_run_shows_no_failure_mode(tools):
    assert modes(CLEAN, tools) == set()
    assert set(GUARDS) == set(FAILURE_MODES)


@pytest.mark.parametrize(
    "completions, mode",
    [
        ([CLEAN[0], CLEAN[0], CLEAN[2]], "repeated_action"),
        ([" Look it up.\nAction: lookup_invoice[INV-2291]", CLEAN[2]], "hallucinated_tool"),
        ([" Supplier invoices are paid on time.\nAnswer: Yes."], "answer_without_acting"),
        ([" Paid?\nAnswer: Yes.\n\nQuestion: When was INV-2291 issued?"], "query_drift"),
        (
            [
                " x\nAction: search[late fees]",
                " x\nAction: search[late fees policy]",
                " x\nAction: search[late fees rules]",
                CLEAN[2],
            ],
            "query_drift",
        ),
        (
            [
                " x\nAction: get_charge[INV-2291]",
                " x\nAction: get_charge[2291]",
                " x\nAction: get_charge[ch_2291]",
                CLEAN[2],
            ],
            "error_spiral",
        ),
        ([" x\nAction 1: find_invoice[INV-2291]", CLEAN[2]], "format_drift"),
        ([" x\nAction: list_invoices[cus_2234, 2026-01-01]", CLEAN[2]], "observation_flooding"),
    ],
)
def test_each_detector_finds_its_mode(tools, completions, mode):
    assert mode in modes(completions, tools)


def test_a_question_that_needs_no_tool_may_be_answered_at_once(tools):
    hasty = [" 129 * 3 is 387.\nAnswer: 387"]
    assert "answer_without_acting" in modes(hasty, tools, question="What is 129 * 3?")
    assert modes(hasty, tools, question="What is 129 * 3?", needs_tools=False) == set()


def test_an_empty_result_is_not_data_for_an_answer(tools):
    found = modes([" x\nAction: list_invoices[cus_0001, 2026-01-01]", CLEAN[2]], tools)
    assert "answer_without_acting" in found


def test_side_effect_call_time_budget_and_context_overflow(tools):
    pay = Tool(
        "schedule_payment",
        lambda invoice_id, amount: {"ok": True},
        "Pay.",
        {
            "type": "object",
            "properties": {"invoice_id": {"type": "string"}, "amount": {"type": "string"}},
            "required": ["invoice_id", "amount"],
            "additionalProperties": False,
        },
        side_effect=True,
    )
    risky = {**tools, "schedule_payment": pay}
    found = modes(
        [" x\nAction: schedule_payment[INV-2291, 48200]", CLEAN[2]], risky, time_budget=0.0
    )
    assert {"injection", "over_time_budget"} <= found
    assert "context_overflow" in modes(CLEAN, tools, window=10)
    assert "context_overflow" in modes(
        CLEAN, tools, error="ValueError: Requested tokens (4206) exceed context window of 4096"
    )
    assert "context_overflow" not in modes(CLEAN, tools, error="ValueError: something else")


def test_drifted_reads_both_parsers():
    assert not drifted(" The invoice.\nAction: find_invoice[INV-2291]")
    assert drifted(" The invoice.\nAction 2: find_invoice[INV-2291]")  # strict: error, ours: action
    assert drifted("Answer: 387\n\nQuestion: What else?")  # the two answers differ
    assert not drifted(" I am not sure.")  # no action is not drift


def test_count_modes_lists_every_mode_with_zero():
    counts = count_modes([{"repeated_action"}, {"repeated_action", "injection"}, set()])
    assert list(counts) == list(FAILURE_MODES)
    assert (
        counts["repeated_action"] == 2
        and counts["injection"] == 1
        and counts["hallucinated_tool"] == 0
    )


class Continuing:
    """A backend that stops at the stop sequence but would have gone on to write an Observation."""

    def __init__(self, after):
        self.after, self.calls = after, []

    def complete(self, prompt, *, stop=None, max_tokens=256):
        self.calls.append((stop, max_tokens))
        if stop:
            return Completion(" x\nAction: find_invoice[INV-2291]", "stop", 10, 5)
        return Completion(self.after, "length", 10, max_tokens)


def test_stop_probe_reports_an_observation_the_stop_sequence_cut(tools):
    probe = StopProbe(Continuing('\nObservation: {"paid": true}'), tokens=6)
    run = live_pass(
        [Q],
        probe,
        tools,
        max_steps=1,
        progress=False,
        guards=lambda i: LabGuards(best_effort=False),
    )[0]
    assert run.result.steps[0].forged and run.result.steps[0].forged_tokens == 6
    assert "forged_observation" in failure_modes(run.result, tools=tools)
    assert probe.probes == ['\nObservation: {"paid": true}']
    # never entered
    assert "paid" not in "".join(t for o, t in run.result.transcript.spans if o == "model")
    honest = StopProbe(Continuing("\nThought: more"), tokens=6)
    run = live_pass(
        [Q],
        honest,
        tools,
        max_steps=1,
        progress=False,
        guards=lambda i: LabGuards(best_effort=False),
    )[0]
    assert not run.result.steps[0].forged


class Overflowing:
    def complete(self, prompt, *, stop=None, max_tokens=256):
        raise ValueError("Requested tokens (5000) exceed context window of 4096")


def test_live_pass_keeps_a_run_that_raised(tools):
    runs = live_pass(["a?", "b?"], Overflowing(), tools, progress=False)
    assert [r.question for r in runs] == ["a?", "b?"] and all(r.error for r in runs)
    assert runs[0].result.stopped_by == "error" and runs[0].result.answer is None
    assert "context_overflow" in failure_modes(runs[0].result, tools=tools, error=runs[0].error)


# --------------------------------------------------------------------------- the saved pass


def test_the_pass_takes_one_question_per_category_per_round():
    tasks = pass_tasks()
    assert len(tasks) == PER_CATEGORY * len(PASS_CATEGORIES) and len({t.id for t in tasks}) == len(
        tasks
    )
    for k in range(PER_CATEGORY):
        assert [t.category for t in tasks[k * 10 : (k + 1) * 10]] == list(PASS_CATEGORIES)
    with pytest.raises(ValueError, match="fewer than 6 questions"):
        pass_tasks(6)


def test_a_saved_pass_reads_back_run_for_run(tools, tmp_path):
    """Every step field, the transcript (owners and kinds), the error and the seconds."""
    tasks = pass_tasks(1)[:3]
    probe = Continuing('\nObservation: {"paid": true}')
    runs = unguarded_pass(tasks, probe, tools, progress=False)
    runs.append(live_pass(["a?"], Overflowing(), tools, progress=False)[0])  # a run that raised
    tasks = [*tasks, pass_tasks(1)[3]]
    assert all(r.result.steps for r in runs[:3]) and runs[3].error
    assert len(runs[0].result.steps) == PASS_MAX_STEPS  # the pass's limits, no guard
    assert runs[0].result.steps[0].forged  # the probe saw the forgery the stop cut
    path = save_pass("pass", tasks, runs, model="continuing", directory=tmp_path)
    loaded = results.load("pass", tmp_path)
    assert loaded.command == "react-lab failures --model continuing --save-results pass"
    assert loaded.config["task_ids"] == [t.id for t in tasks]
    back = [run_of(r) for r in loaded.data["runs"]]
    for before, after in zip(runs, back, strict=True):
        assert after.result.to_dict() == before.result.to_dict()
        assert after.result.steps == before.result.steps
        assert after.result.transcript == before.result.transcript
        assert (after.question, after.error, after.seconds) == (
            before.question,
            before.error,
            before.seconds,
        )
        assert failure_modes(after.result, tools=tools) == failure_modes(before.result, tools=tools)
    assert [r["category"] for r in loaded.data["runs"]] == [t.category for t in tasks]
    assert path.name == "pass.json"


def test_a_saved_pass_goes_stale_when_its_prompt_tasks_or_code_change(tools, tmp_path, monkeypatch):
    tasks = pass_tasks(1)[:2]
    runs = unguarded_pass(tasks, Continuing("\nThought: more"), tools, progress=False)
    save_pass("pass", tasks, runs, model="continuing", directory=tmp_path)
    assert results.check("pass", tmp_path) == []
    inputs = fingerprint_inputs(pass_config(tasks, "continuing"))
    for first, task in zip(inputs.prompt["first_prompts"], tasks, strict=True):
        assert f"\nQuestion: {task.question}\n" in first
    assert inputs.prompt["guards"]["repeats"] == "False"  # every guard off
    assert inputs.prompt["stop"] == protocol.STOP
    assert fingerprint_inputs(pass_config(pass_tasks(1)[1:3])).tasks != inputs.tasks
    monkeypatch.setattr(failures, "CODE_VERSION", failures.CODE_VERSION + 1)
    assert results.check("pass", tmp_path) == ["the experiment's code version changed (code)"]
    monkeypatch.undo()
    monkeypatch.setattr(protocol, "EXEMPLARS", protocol.EXEMPLARS[1:])  # another first exemplar
    assert results.check("pass", tmp_path) == [
        "the prompt, exemplars or tool schemas changed (prompt_sha256)"
    ]


def test_the_cli_runs_the_pass_and_counts_each_mode(tmp_path, capsys):
    script = tmp_path / "s.json"
    script.write_text(json.dumps([" Look.\nAction: find_invoice[INV-2291]"]))
    assert main(["failures", "--model", f"scripted:{script}", "--per-category", "1"]) == 0
    out = capsys.readouterr().out
    assert "repeated_action           10 of 10" in out  # the same call, three steps each
    assert "hallucinated_tool          0 of 10" in out and "latest_date-01" in out

"""The evaluation harness: the runner proved, its cache, metrics, logs and the CLI."""

import json
import time

import pytest

from react_lab.lab.backends.scripted import ScriptedModel
from react_lab.lab.cli import main
from react_lab.lab.experiments import evals
from react_lab.lab.experiments.evals import metrics, percentile
from react_lab.lab.experiments.steplogs import read_jsonl
from react_lab.lab.experiments.tasks import (
    load_tasks,
)
from react_lab.lab.notebook.tables import transcript_html
from react_lab.tools import default_tools

TASKS = load_tasks()


# --------------------------------------------------------------------------- proving the harness


def test_oracle_scores_100_percent_and_dont_know_scores_0(tmp_path, shipped_db_unchanged):
    oracle = evals.evaluate(
        TASKS, evals.oracle_model, model_name="oracle", cache_dir=tmp_path, progress=False
    )
    assert [r["task_id"] for r in oracle.records if not r["correct"]] == []
    m = oracle.metrics
    assert m["success_rate"] == 1.0 and m["tool_error_rate"] == 0.0 and m["step_limit_rate"] == 0.0
    assert m["mean_steps"] == pytest.approx(sum(len(t.oracle) + 1 for t in TASKS) / len(TASKS))
    idk = evals.evaluate(
        TASKS, evals.dont_know_model, model_name="dont_know", cache_dir=tmp_path, progress=False
    )
    assert idk.metrics["success_rate"] == 0.0 and idk.metrics["answered_rate"] == 1.0


def test_cache_rerun_computes_nothing_new_and_a_change_recomputes(tmp_path):
    tasks = TASKS[:6]
    first = evals.evaluate(
        tasks, evals.oracle_model, model_name="oracle", cache_dir=tmp_path, progress=False
    )
    assert first.computed == 6 and first.cache_path.is_file()
    again = evals.evaluate(
        tasks, evals.oracle_model, model_name="oracle", cache_dir=tmp_path, progress=False
    )
    assert again.computed == 0 and all(r["cached"] for r in again.records)
    assert [r["correct"] for r in again.records] == [r["correct"] for r in first.records]
    assert len(read_jsonl(again.log_path)) == sum(len(r["steps"]) for r in first.records)
    # A line cut short by an interrupted write is skipped, not fatal.
    with first.cache_path.open("a", encoding="utf-8") as fh:
        fh.write('{"key": "trunc')
    assert (
        evals.evaluate(
            tasks, evals.oracle_model, model_name="oracle", cache_dir=tmp_path, progress=False
        ).computed
        == 0
    )
    assert first.cache_path.read_text(encoding="utf-8").endswith('"trunc\n')
    # A different tool description changes the prompt prefix, so every task is recomputed.
    import dataclasses

    tools = default_tools()
    tools["find_invoice"] = dataclasses.replace(
        tools["find_invoice"], description="Look up an invoice."
    )
    changed = evals.evaluate(
        tasks,
        evals.oracle_model,
        model_name="oracle",
        tools=tools,
        cache_dir=tmp_path,
        progress=False,
    )
    assert changed.computed == 6 and changed.run_id != first.run_id
    # Extending the set computes only the new tasks.
    more = evals.evaluate(
        TASKS[:8], evals.oracle_model, model_name="oracle", cache_dir=tmp_path, progress=False
    )
    assert more.computed == 2


def test_per_task_timeout_is_wall_clock_between_steps(tmp_path):
    class Slow(ScriptedModel):
        def complete(self, prompt, **kw):
            time.sleep(0.05)
            return super().complete(prompt, **kw)

    task = next(t for t in TASKS if len(t.oracle) >= 2)
    run = evals.evaluate(
        [task],
        lambda t: Slow(["Action: search[refund]"]),
        model_name="slow",
        timeout=0.01,
        max_steps=4,
        cache_dir=tmp_path,
        progress=False,
    )
    record = run.records[0]
    assert record["stopped_by"] == "timeout" and len(record["steps"]) == 1
    assert run.metrics["timeout_rate"] == 1.0 and run.metrics["step_limit_rate"] == 0.0
    again = evals.evaluate(
        [task],
        lambda t: Slow(["Action: search[refund]"]),
        model_name="slow",
        timeout=0.01,
        max_steps=4,
        cache_dir=tmp_path,
        progress=False,
    )
    assert again.computed == 1  # a timeout reflects the machine's load: never cached


def test_a_transcript_past_the_context_window_ends_that_run_not_the_evaluation():
    from react_lab.lab.backends.llama_state import ContextWindowExceeded

    class Window(ScriptedModel):  # a window of two completions, as llama.cpp refuses a third
        def complete(self, prompt, **kw):
            if self.made >= 2:
                raise ContextWindowExceeded("Requested tokens (4229) exceed context window of 4096")
            self.made += 1
            return super().complete(prompt, **kw)

    task = next(t for t in TASKS if len(t.oracle) >= 2)
    model = Window(
        ["Thought: a\nAction: search[refunds]", "Thought: b\nAction: search[refund window]"]
    )
    model.made = 0
    result = evals.run_task(task, model, default_tools(), max_steps=5)
    assert (result.stopped_by, result.answer, len(result.steps)) == ("context_window", None, 2)
    assert issubclass(ContextWindowExceeded, ValueError)
    # a first prompt that does not fit (three long exemplars) is a run with no steps, not a crash
    first = Window(["Thought: c"])
    first.made = 2
    result = evals.run_task(task, first, default_tools())
    assert (result.stopped_by, result.answer, result.steps) == ("context_window", None, [])


def test_run_task_can_show_a_progress_bar_over_its_steps(capsys):
    task = TASKS[0]
    plain = evals.run_task(task, evals.oracle_model(task), default_tools())
    shown = evals.run_task(task, evals.oracle_model(task), default_tools(), progress=True)
    assert "steps" in capsys.readouterr().err and shown.answer == plain.answer == task.gold


def test_unknown_protocol_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="use text or native"):
        evals.evaluate(TASKS[:1], evals.oracle_model, protocol="json", cache_dir=tmp_path)


# --------------------------------------------------------------------------- metrics


def _event(tool=None, args=None, error=None, answer=None, p=100, c=10):
    return {
        "tool": tool,
        "args": args,
        "error": error,
        "answer": answer,
        "prompt_tokens": p,
        "completion_tokens": c,
    }


HANDCRAFTED = [
    {
        "correct": True,
        "answer": "129",
        "stopped_by": "answer",
        "seconds": 1.0,
        "category": "a",
        "steps": [_event("find_invoice", {"invoice_id": "INV-1"}), _event(answer="129")],
    },
    {
        "correct": False,
        "answer": None,
        "stopped_by": "max_steps",
        "seconds": 4.0,
        "category": "a",
        "steps": [
            _event("list_invoices", ["cus_1"], error="bad since"),
            _event("list_invoices", ["cus_1"], error="bad since"),  # a repeat
            _event(error="no action and no answer found"),  # a parse error
            _event("search", {"query": "refund"}, p=200, c=20),
        ],
    },
    {
        "correct": True,
        "answer": "387",
        "stopped_by": "answer",
        "seconds": 1.0,
        "category": "b",
        "steps": [_event(answer="387", p=50, c=5)],
    },
]


def test_metrics_on_handcrafted_runs():
    m = metrics(HANDCRAFTED)
    assert m["n"] == 3
    assert m["success_rate"] == pytest.approx(2 / 3)
    assert m["mean_steps"] == pytest.approx(7 / 3)
    assert m["p95_steps"] == 4
    assert m["step_limit_rate"] == pytest.approx(1 / 3)
    assert m["tool_error_rate"] == pytest.approx(2 / 4)
    assert m["tool_error_rate_by_tool"] == {
        "find_invoice": 0.0,
        "list_invoices": 1.0,
        "search": 0.0,
    }
    assert m["tool_calls_by_tool"] == {"find_invoice": 1, "list_invoices": 2, "search": 1}
    assert m["repeat_action_rate"] == pytest.approx(1 / 4)
    assert m["parse_error_rate"] == pytest.approx(1 / 7)
    assert m["tokens_per_task"] == pytest.approx((220 + (110 * 3 + 220) + 55) / 3)
    assert m["seconds_per_task"] == pytest.approx(2.0)


def test_metrics_of_nothing_are_zero_not_an_error():
    m = metrics([])
    assert m["n"] == 0 and m["success_rate"] == 0.0 and m["p95_steps"] == 0.0


@pytest.mark.parametrize(
    "values,q,expected",
    [
        (list(range(1, 21)), 95, 19),
        (list(range(1, 21)), 100, 20),
        ([3], 95, 3),
        ([1, 2, 3, 4], 50, 2),
        ([5, 1, 4], 95, 5),
    ],
)
def test_percentile_nearest_rank(values, q, expected):
    assert percentile(values, q) == expected


def test_cached_records_keep_their_transcript(tmp_path):
    run = evals.evaluate(
        TASKS[:1], evals.oracle_model, model_name="oracle", cache_dir=tmp_path, progress=False
    )
    again = evals.evaluate(
        TASKS[:1], evals.oracle_model, model_name="oracle", cache_dir=tmp_path, progress=False
    )
    html = transcript_html(evals.transcript_of(again.records[0]))
    assert "written by the model" in html and "written by the loop" in html
    assert evals.transcript_of(again.records[0]).text == evals.transcript_of(run.records[0]).text


# --------------------------------------------------------------------------- the CLI

JSON_KEYS = {
    "success_rate",
    "mean_steps",
    "p95_steps",
    "step_limit_rate",
    "tool_error_rate",
    "repeat_action_rate",
    "tokens_per_task",
    "n",
    "seconds",
}


@pytest.mark.parametrize("model,rate", [("oracle", 1.0), ("dont_know", 0.0)])
def test_cli_eval_json(model, rate, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("REACT_LAB_CACHE", str(tmp_path))
    assert main(["eval", "--n", "5", "--model", model, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert JSON_KEYS <= set(out) and out["n"] == 5 and out["success_rate"] == rate
    assert out["computed"] == 5 and str(tmp_path) in out["log"]


def test_cli_eval_text_output(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("REACT_LAB_CACHE", str(tmp_path))
    assert main(["eval", "--n", "3", "--model", "oracle"]) == 0
    out = capsys.readouterr().out
    assert out.count("✓") == 3 and "success_rate: 1.000" in out


def test_native_oracle_and_dont_know(tmp_path, monkeypatch, capsys):
    pytest.importorskip("react_lab.lab.agent.native")
    from functools import partial

    run = evals.evaluate(
        TASKS,
        partial(evals.oracle_model, protocol="native"),
        protocol="native",
        model_name="oracle",
        cache_dir=tmp_path,
        progress=False,
    )
    assert [r["task_id"] for r in run.records if not r["correct"]] == []
    assert run.metrics["tool_error_rate"] == 0.0
    assert run.metrics["mean_steps"] == pytest.approx(
        sum(len(t.oracle) + 1 for t in TASKS) / len(TASKS)
    )
    assert "written by the loop" in transcript_html(evals.transcript_of(run.records[0]))
    monkeypatch.setenv("REACT_LAB_CACHE", str(tmp_path))
    assert main(["eval", "--n", "4", "--model", "dont_know", "--protocol", "native", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["success_rate"] == 0.0 and out["protocol"] == "native"

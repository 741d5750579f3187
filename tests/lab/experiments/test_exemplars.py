"""The ladder's dev exemplar pool: dev tasks only, with real observations; the selection never
shows the task or its ids, nor a test task; runs harvested from the shipped dev results."""

import re

import pytest

from react_lab.lab.experiments import ladder
from react_lab.lab.experiments.exemplars import (
    build_pool,
    get_pool,
    select,
    shape_tokens,
    task_split,
)
from react_lab.lab.experiments.tasks import load_tasks
from react_lab.tools import call_tool, default_tools

TEST = load_tasks(split="test")
DEV = load_tasks(split="dev")


def test_pool_holds_dev_tasks_only_with_real_observations():
    pool = build_pool()
    assert {e.task_id for e in pool} == {t.id for t in DEV}
    assert all(task_split(e.task_id) == "dev" for e in pool)
    tools = default_tools()
    entry = next(e for e in pool if e.exemplar.steps)
    for _, action, observation in entry.exemplar.steps:
        tool, _, args = action.partition("[")
        assert (
            call_tool(tools, tool, [a.strip() for a in args.rstrip("]").split(", ")]).text
            == observation
        )


def test_selection_never_shows_the_task_or_its_ids_and_never_a_test_task():
    for variant in ("default", "oldest_first"):
        pool = list(get_pool(variant))
        for task in TEST + DEV[:30]:
            chosen = select(pool, task, k=3)
            assert len(chosen) == 3
            assert all(task_split(e.source) == "dev" and e.source != task.id for e in chosen)
            asked = set(re.findall(r"\b(?:cus_\d{4}|INV-\d{4}|ch_\w{6})\b", task.question))
            assert not any(i in e.render() for e in chosen for i in asked)
    with pytest.raises(ValueError):
        select(pool, TEST[0], k=-1)


def test_the_nearest_exemplar_shares_the_question_template():
    pool = list(get_pool())
    same = sum(select(pool, t, k=1)[0].source.split("-")[0] == t.category for t in TEST)
    assert same / len(TEST) > 0.8
    assert shape_tokens("Was INV-2041 paid on 2026?") == {"was", "inv_#", "paid", "on", "#"}


def test_pool_refuses_a_test_task():
    from react_lab.lab.experiments.exemplars import pool_exemplar

    with pytest.raises(ValueError, match="not a dev task"):
        pool_exemplar(TEST[0], default_tools())


def _run_record(task, steps, *, correct=True, stopped_by="answer", trial=0):
    return {
        "task_id": task.id,
        "category": task.category,
        "trial": trial,
        "correct": correct,
        "stopped_by": stopped_by,
        "answer": steps[-1].get("answer"),
        "steps": steps,
    }


def _call(tool, args, thought="I look it up."):
    return {
        "tool": tool,
        "args": args,
        "error": None,
        "guard": None,
        "answer": None,
        "thought": thought,
    }


def test_harvest_keeps_clean_successful_dev_runs_with_real_observations():
    from react_lab.lab.experiments.exemplars import harvest

    task = next(t for t in DEV if t.category == "invoice_total")
    inv = task.oracle[0][1][0]
    answer = {
        "tool": None,
        "args": None,
        "error": None,
        "guard": None,
        "answer": "42 dollars",
        "thought": "The total is there.",
    }
    good = _run_record(task, [_call("find_invoice", [inv], "I read the invoice."), answer])
    pool = harvest([good], "default")
    (entry,) = pool
    ex = entry.exemplar
    assert (entry.task_id, ex.source, ex.question) == (task.id, task.id, task.question)
    # the model's own words, the real tool output
    assert ex.steps == (
        (
            "I read the invoice.",
            f"find_invoice[{inv}]",
            call_tool(default_tools(), "find_invoice", [inv]).text,
        ),
    )
    assert (ex.final_thought, ex.answer) == ("The total is there.", "42 dollars")
    assert inv in entry.shown
    # wrong, guard-ended, errored, later-trial and cut-thought runs are not shown
    bad_step = dict(_call("find_invoice", [inv]), error="Error: no such invoice")
    rejected = [
        _run_record(task, good["steps"], correct=False),
        _run_record(task, good["steps"], stopped_by="max_steps"),
        _run_record(task, [bad_step, answer]),
        _run_record(task, good["steps"], trial=1),
        _run_record(task, [_call("find_invoice", [inv], "x" * 200), answer]),
    ]
    assert harvest(rejected, "default") == []
    # right by luck: a paid-in-full answer from the payments alone, the total never read
    paid = next(t for t in DEV if t.category == "paid_in_full")
    pinv = paid.oracle[0][1][0]
    lucky = _run_record(paid, [_call("get_payments", [pinv]), dict(answer, answer="No.")])
    assert harvest([lucky], "default") == []
    read_both = _run_record(
        paid,
        [
            _call("find_invoice", [pinv]),
            _call("get_payments", [pinv]),
            dict(answer, answer="No.", thought="Not paid: see ch_85DsBE."),
        ],
    )
    (entry,) = harvest([read_both], "default")
    assert "ch_85DsBE" in entry.shown  # ids in the model's thoughts count as shown too
    with pytest.raises(ValueError, match="not a dev task"):
        harvest([_run_record(TEST[0], good["steps"])], "default")


def test_the_runs_pool_comes_from_the_shipped_dev_runs_and_never_shows_a_test_task():
    from react_lab.lab.experiments import results
    from react_lab.lab.experiments.exemplars import HARVESTED_FROM

    for variant, name in HARVESTED_FROM.items():
        res = results.load(name)
        assert (
            res.config["split"] == "dev"
            and ladder.get_config(res.config["config"]).tools == variant
        )
        solved = {r["task_id"] for r in res.data["records"] if r["correct"]}
        pool = list(get_pool(variant, "runs"))
        assert pool and {e.task_id for e in pool} <= solved
        for task in TEST:
            chosen = select(pool, task, k=2)
            assert all(task_split(e.source) == "dev" for e in chosen)
    for name in ("runs_k1", "best_runs"):
        ladder.check_no_leak(ladder.get_config(name), TEST)
    with pytest.raises(ValueError, match="pool source"):
        get_pool("default", "model")

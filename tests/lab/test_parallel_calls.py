"""react_lab.lab.parallel_calls: a reply's read-only calls side by side, observations as serial."""

import functools
import json
import sqlite3
import threading
import time

import pytest

from react_lab.lab.agent.native import ask_native, run_calls
from react_lab.lab.backends.chat import ScriptedChatModel
from react_lab.lab.experiments.evals import run_task
from react_lab.lab.experiments.tasks import Task
from react_lab.lab.guards import LabGuards
from react_lab.lab.loops import ask_native as lab_ask_native
from react_lab.lab.parallel_calls import (
    call_groups,
    concurrent_tool,
    run_parallel_calls,
    start_call,
)
from react_lab.schema import object_schema
from react_lab.tools import Tool, connection, default_tools

TOOLS = default_tools()


def _call(name, **arguments):
    return {
        "id": f"call_{name}_{len(arguments)}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def _timed_tools(log, barrier=None, side_effect=False, names=("a", "b")):
    """Tools that record (name, start, end) and, with a barrier, wait for each other."""

    def make(name):
        def fn(x: str) -> dict:
            start = time.perf_counter()
            if barrier is not None:
                barrier.wait()  # passes only when every party is running at the same time
            time.sleep(0.05 if name == names[0] else 0.0)  # the first call finishes last
            log.append((name, start, time.perf_counter()))
            return {"tool": name, "x": x}

        return Tool(
            name, fn, f"{name}.", object_schema(x={"type": "string"}), side_effect=side_effect
        )

    return {n: make(n) for n in names}


def test_read_only_calls_of_one_reply_run_together_and_come_back_in_call_order():
    log = []
    tools = _timed_tools(log, threading.Barrier(2, timeout=2))
    calls = [_call("a", x="1"), _call("b", x="2")]
    observations = run_parallel_calls(LabGuards().start(), tools, calls)
    assert [json.loads(o.text)["tool"] for o in observations] == ["a", "b"]  # call order
    assert [o.error for o in observations] == [None, None]  # the barrier passed: both ran at once
    assert [name for name, _, _ in log] == ["b", "a"]  # yet a finished last
    serial = run_calls(
        LabGuards().start(), _timed_tools([], threading.Barrier(2, timeout=0.3)), calls
    )
    assert all("BrokenBarrierError" in o.text for o in serial)  # the barrier can fail


def test_side_effecting_calls_run_one_at_a_time_each_through_the_approval_gate():
    log, asked = [], []
    tools = {
        **_timed_tools(log, side_effect=True, names=("pay", "refund")),
        **_timed_tools(log, names=("look",)),
    }
    calls = [_call("pay", x="1"), _call("refund", x="2"), _call("look", x="3")]
    guards = LabGuards(approve=lambda name, args: asked.append(name) or name == "pay")
    observations = run_parallel_calls(guards.start(), tools, calls)
    assert asked == ["pay", "refund"]  # one approval per side-effecting call, in call order
    assert [n for n, _, _ in log] == ["pay", "look"]  # the refused one never ran
    assert observations[1].guard == "approval" and "not approved" in observations[1].text
    (_, _, pay_end), (_, look_start, _) = log
    assert pay_end <= look_start  # a read after a write starts once the write is done
    groups = call_groups(tools, calls + [_call("look", x="4")])
    assert [[c["function"]["name"] for c, _ in g] for g in groups] == [
        ["pay"],
        ["refund"],
        ["look", "look"],
    ]


def test_the_guards_count_as_in_a_one_at_a_time_run():
    """Repeats, retry caps, pages and the order of everything the guards keep: as if serial."""
    calls = [
        _call("find_invoice", invoice_id="INV-2291"),
        _call("find_invoice", invoice_id="INV-2291"),
        _call("get_charge", charge_id="ch_0000"),
        _call("get_charge", charge_id="ch_0001"),
        _call("get_charge", charge_id="ch_0002"),
        _call("list_invoices", customer_id="cus_2234", since="2026-01-01"),
        _call("search", query="refund policy"),
        _call("more", page="p1"),
    ]

    def run(together):
        watch = LabGuards(observation_chars=300, retry_cap=2, near_repeats=None).start("q")
        runner = run_parallel_calls if together else run_calls  # the lab's, or the lesson's
        texts = [o.text for o in runner(watch, TOOLS, calls)]
        return texts, watch.calls, watch.errors, watch.pages, watch.seen, watch.refusals

    serial = run(False)
    assert "already run" in serial[0][1] and "failed 2 times" in serial[0][4] and "p1" in serial[3]
    for _ in range(5):  # whichever thread finishes first
        assert run(True) == serial


def test_each_concurrent_database_call_has_a_connection_and_a_sql_record_of_its_own():
    shared = connection(TOOLS["find_invoice"])
    calls = [
        _call("find_invoice", invoice_id="INV-2291"),
        _call("get_payments", invoice_id="INV-2041"),
        _call("get_charge", charge_id="ch_1KZq8f"),
    ]
    tools = [concurrent_tool(TOOLS, c) for c in calls]
    assert all(connection(t) is not shared for t in tools)
    observations = [f.result(timeout=5) for f in [start_call(t, c) for t, c in zip(tools, calls)]]
    ids = ("INV-2291", "INV-2041", "ch_1KZq8f")
    for obs, own in zip(observations, ids):  # each record holds its own statements, no other's
        assert obs.error is None and obs.sql and all(own in sql for sql in obs.sql), obs.sql
        assert not any(other in sql for sql in obs.sql for other in ids if other != own)
    with pytest.raises(sqlite3.ProgrammingError):  # each own connection is closed after its call
        connection(tools[0]).execute("select 1")
    assert shared.execute("select 1").fetchone()[0] == 1  # the shared one is untouched
    memory = sqlite3.connect(":memory:", check_same_thread=False)
    in_memory = Tool(
        "q", functools.partial(lambda conn, x: x, memory), "q.", object_schema(x={"type": "string"})
    )
    assert concurrent_tool({"q": in_memory}, _call("q", x="1")) is None  # cannot be opened twice
    assert concurrent_tool(TOOLS, _call("calc", expression="1+1")) is TOOLS["calc"]  # no database


def test_the_lab_s_runs_start_read_only_calls_side_by_side_and_the_lesson_s_one_at_a_time():
    """The lab passes its runner as ``run_native(run_calls=...)``; the lesson's is one at a time."""
    both = [
        {
            "thought": "both",
            "tool_calls": [
                {"name": "a", "arguments": {"x": "1"}},
                {"name": "b", "arguments": {"x": "2"}},
            ],
        },
        {"thought": "", "answer": "done"},
    ]

    def barrier_tools(timeout):
        return _timed_tools([], threading.Barrier(2, timeout=timeout))

    lab = lab_ask_native("q", ScriptedChatModel(both), barrier_tools(2))
    task = Task("t1", "lookup", "q", "done", "text")
    evaluated = run_task(task, ScriptedChatModel(both), barrier_tools(2), protocol="native")
    lesson = ask_native("q", ScriptedChatModel(both), barrier_tools(0.3), guards=LabGuards())
    for result in (lab, evaluated):  # the barrier passed: both calls ran at once
        assert result.steps[0].error is None and result.answer == "done"
    assert "BrokenBarrierError" in lesson.steps[0].error  # one at a time: the barrier fails

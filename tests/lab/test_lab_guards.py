"""The lab's guards (:class:`react_lab.lab.guards.LabGuards`) in both loops, and what runs them.

The scenarios run over both loops, as the lesson's in ``tests/test_guards.py`` do (the
adapters are ``tests/helpers/two_loops.py``'s), with :class:`LabGuards` unless a test names others:
near repeats, the refusals' hint, paging with ``more``, tool timeouts, placeholder answers,
citations, pinning the question, data markers; then the CLI, the approval widget, and the
lab's defaults, which must stay the ones every shipped result was made with.
"""

import dataclasses
import json
import time

import pytest
from helpers.two_loops import (
    NativeLoop,
    TextLoop,
    calls_run,
    injected,
    sleepy_tools,
    walk,
)

from react_lab.lab.agent.guards import Guards
from react_lab.lab.agent.loop import ask
from react_lab.lab.agent.native import ask_native
from react_lab.lab.backends.chat import ScriptedChatModel
from react_lab.lab.backends.scripted import ScriptedModel
from react_lab.lab.cli import main
from react_lab.lab.experiments.configs import LadderGuards
from react_lab.lab.guards import (
    MORE,
    LabGuards,
    more_tool,
)
from react_lab.lab.loops import ask as lab_ask
from react_lab.lab.sandbox import db_checksum
from react_lab.schema import object_schema
from react_lab.tools import Tool, default_tools

#: The ``loop`` fixture's default guards here (tests/conftest.py): the lab's.
GUARDS = LabGuards


# --------------------------------------------------------------------------- the lab's defaults

#: ``Guards()`` as every shipped result was made with it, before the lesson was cut down.
SHIPPED_DEFAULTS = {
    "token_budget": 50_000,
    "money_budget": 1.0,
    "price_in": 0.0,
    "price_out": 0.0,
    "time_budget": 300.0,
    "tool_timeout": 10.0,
    "repeats": True,
    "near_repeats": 3,
    "max_refusals": 2,
    "retry_cap": 3,
    "observation_chars": 2000,
    "compact_at": 2500,
    "keep_last": 2,
    "summarize": None,
    "count": None,
    "require_retrieval": False,
    "reject_placeholders": True,
    "require_citation": False,
    "pin_question": False,
    "approve": "deny",
    "mark_data": False,
    "provenance": False,  # added with the injection suite; off, as the shipped runs had none
    "best_effort": True,
    "unsure_best_effort": False,
    "exemplar_values": False,
}


def settings_of(guards) -> dict:
    return {
        f.name: getattr(getattr(guards, f.name), "__name__", getattr(guards, f.name))
        for f in dataclasses.fields(guards)
    }


def test_the_labs_defaults_are_the_ones_the_shipped_results_were_made_with():
    ladder = settings_of(LadderGuards())
    assert ladder == SHIPPED_DEFAULTS  # every setting, by name and value
    lab = settings_of(LabGuards())
    assert lab == {
        k: v
        for k, v in SHIPPED_DEFAULTS.items()
        if k not in ("unsure_best_effort", "exemplar_values")
    }
    assert set(settings_of(Guards())) < set(lab)  # the lesson's are a part of them
    assert all(SHIPPED_DEFAULTS[k] == v for k, v in settings_of(Guards()).items())


def test_labguards_off_switches_the_labs_guards_off_too():
    off = LabGuards.off()
    assert off.tool_timeout is None and off.near_repeats is None and not off.mark_data
    assert not off.reject_placeholders and not off.pin_question and off.approve is None
    assert off.token_budget is None and not off.best_effort and off.keep_last == 2
    assert isinstance(off, LabGuards) and LadderGuards.off().exemplar_values is False


def test_the_lab_runs_its_guards_where_none_are_named(tools):
    reworded = [
        f" Search.\nAction: search[late payment {w}]" for w in ("reminders", "fees", "emails")
    ]
    result = lab_ask(
        "When are reminders sent?", ScriptedModel([*reworded, "Answer: x"]), tools, progress=True
    )
    assert [s.guard for s in result.steps[:3]] == [None, None, "near_repeat"]
    lesson = ask("When are reminders sent?", ScriptedModel([*reworded, "Answer: x"]), tools)
    assert [s.guard for s in lesson.steps[:3]] == [None, None, None]


# --------------------------------------------------------------------------- repeats and the hint


def test_exact_repeats_are_refused_with_the_question_and_the_tools_not_yet_tried(loop, tools):
    script = [loop.call("find_invoice", invoice_id="INV-2291")]  # the same call, forever
    result = loop.ask("Has INV-2291 been paid?", loop.model(script), tools, max_steps=8)
    assert calls_run(result, "find_invoice") == 1
    refusal = result.steps[1]
    assert refusal.guard == "repeat" and refusal.error
    assert "already run" in refusal.observation and "Has INV-2291 been paid?" in refusal.observation
    assert (
        "Tools not yet tried: list_invoices, get_charge, search, get_payments, calc"
        in refusal.observation
    )
    # 1 run + 2 refusals + best effort
    assert result.stopped_by == "repeat" and len(result.steps) <= 4

    loose = loop.ask(
        "q",
        loop.model(script),
        tools,
        max_steps=8,
        guards=LabGuards(repeats=False, max_refusals=None, best_effort=False),
    )
    assert calls_run(loose, "find_invoice") == 8 and loose.stopped_by == "max_steps"
    assert [s.error for s in loose.steps] == [None] * 8


def test_near_repeats_one_word_changed_three_times(loop, tools):
    script = [
        loop.call("search", query=f"late payment {w}") for w in ("reminders", "fees", "emails")
    ]
    script.append(loop.answer("7, 14 and 30 days"))
    result = loop.ask("When are reminders sent?", loop.model(script), tools)
    assert [s.guard for s in result.steps[:3]] == [None, None, "near_repeat"]
    assert "one word changed" in result.steps[2].observation
    loose = loop.ask("q", loop.model(script), tools, guards=LabGuards(near_repeats=None))
    assert calls_run(loose, "search") == 3


def test_different_lookups_are_not_near_repeats(loop, tools):
    script = [loop.call("get_charge", charge_id=c) for c in ("ch_1KZq8f", "ch_1WzqWq", "ch_3WlhgN")]
    result = loop.ask("q", loop.model(script + [loop.answer("three charges")]), tools)
    assert calls_run(result, "get_charge") == 3 and result.stopped_by == "answer"


def test_time_budget_with_naps_one_word_apart(loop, tools):
    script = [loop.call("nap", seconds=f"0.{i}") for i in range(1, 9)]
    result = loop.ask(
        "q",
        loop.model(script),
        sleepy_tools(tools),
        guards=LabGuards(time_budget=0.5, near_repeats=None),
    )
    assert result.stopped_by == "time_budget" and len(result.steps) < 8
    result = loop.ask(
        "q",
        loop.model(script),
        sleepy_tools(tools),
        max_steps=3,
        guards=LabGuards(time_budget=None, near_repeats=None, best_effort=False),
    )
    assert result.stopped_by == "max_steps" and len(result.steps) == 3


# --------------------------------------------------------------------------- tool timeouts


def test_a_hanging_tool_is_cut_off_and_the_loop_goes_on(loop, tools):
    model = loop.model(
        [
            loop.call("nap", seconds="3"),
            loop.call("find_invoice", invoice_id="INV-2291"),
            loop.answer("INV-2291 is approved."),
        ]
    )
    t0 = time.perf_counter()
    steps = loop.run("q", model, sleepy_tools(tools), guards=LabGuards(tool_timeout=0.5))
    first = steps[0]
    assert first.guard == "tool_timeout" and "cut off" in first.error
    assert first.tool_seconds < 0.5 + 1.0  # within timeout + 1 s
    assert steps[1].error is None and "INV-2291" in steps[1].observation  # the loop went on
    assert steps[-1].answer == "INV-2291 is approved."
    assert time.perf_counter() - t0 < 3  # nobody waited for the 3 s nap

    slow = loop.run(
        "q",
        loop.model([loop.call("nap", seconds="0.6"), loop.answer("x")]),
        sleepy_tools(tools),
        guards=LabGuards(tool_timeout=None),
    )
    assert slow[0].tool_seconds >= 0.6 and slow[0].error is None


class Quit(BaseException):
    """Not an Exception: what a tool's own ``sys.exit`` or a library's abort raises."""


@pytest.mark.parametrize(
    "quits, says",
    [
        (lambda: __import__("sys").exit(3), "SystemExit: 3"),
        (lambda: (_ for _ in ()).throw(Quit("gone")), "Quit: gone"),
    ],
)
@pytest.mark.parametrize("timeout", [10.0, None])
def test_a_tool_that_exits_is_an_error_observation_at_once(
    loop, tools, quits, says, timeout, capsys
):
    """sys.exit() in a tool (in the timeout's worker thread or not) is named at once."""
    schema = object_schema(code={"type": "string", "description": "anything"})
    quitter = Tool("quit", lambda code: quits(), "Exit the process.", schema)
    model = loop.model([loop.call("quit", code="3"), loop.answer("done")])
    t0 = time.perf_counter()
    steps = loop.run("q", model, {**tools, "quit": quitter}, guards=LabGuards(tool_timeout=timeout))
    assert time.perf_counter() - t0 < 2
    assert steps[0].guard is None and says in steps[0].error and says in steps[0].observation
    assert steps[-1].answer == "done"
    assert "Traceback" not in capsys.readouterr().err


def test_a_tool_call_that_raises_is_an_error_observation(tools):
    def exploding(tools, name, args):
        raise OSError("disk on fire")

    watch = LabGuards().start("q")
    out = watch.run_tool(tools, "search", ["x"], call=exploding)
    assert out.error and "disk on fire" in out.text and out.guard is None


def test_a_timed_out_side_effect_says_its_outcome_is_unknown(loop, payment_setup):
    copy, tools = payment_setup
    slow = {
        **tools,
        "schedule_payment": Tool(
            "schedule_payment",
            lambda invoice_id, amount: time.sleep(2) or {"status": "scheduled"},
            "slow payment",
            tools["schedule_payment"].parameters,
            side_effect=True,
        ),
    }
    model = loop.model(
        [loop.call("schedule_payment", invoice_id="INV-2291", amount=100), loop.answer("unknown")]
    )
    result = loop.ask(
        "q", model, slow, guards=LabGuards(approve=lambda n, a: True, tool_timeout=0.3)
    )
    assert result.steps[0].guard == "tool_timeout"
    assert (
        "outcome is unknown" in result.steps[0].observation
        and "Do not call it again" in result.steps[0].observation
    )


# --------------------------------------------------------------------------- paging


def test_truncation_with_a_marker_and_a_next_page(loop, tools):
    model = loop.model(
        [
            loop.call("list_invoices", customer_id="cus_2234", since="2026-01-01"),
            loop.call("more", page="p1"),
            loop.answer("nine invoices"),
        ]
    )
    result = loop.ask("q", model, tools, guards=LabGuards(observation_chars=800, mark_data=False))
    first, second = result.steps[0], result.steps[1]
    full = json.dumps(default_tools()["list_invoices"].fn("cus_2234", "2026-01-01"))
    assert len(full) > 3000
    assert first.guard == "truncated" and "call more[p1]" in first.observation
    shown = first.observation.split(" [truncated by the loop")[0]
    assert len(shown) <= 800 and full.startswith(shown)
    assert second.guard == "truncated" and "more[p2]" in second.observation and second.error is None
    assert second.observation.split(" [truncated")[0] in full  # the next page, verbatim
    # native loop only: `more` is offered as a tool from the first step on
    if loop.name == "native":
        offered = [[t["function"]["name"] for t in schemas] for _, schemas in model.requests]
        assert all(names == offered[0] for names in offered) and "more" in offered[0]
    untouched = loop.ask(
        "q",
        loop.model(
            [
                loop.call("list_invoices", customer_id="cus_2234", since="2026-01-01"),
                loop.answer("x"),
            ]
        ),
        tools,
        guards=LabGuards(observation_chars=None, mark_data=False),
    )
    assert untouched.steps[0].observation == full


def test_more_is_offered_from_the_first_step_only_while_truncation_is_on(tools):
    n = NativeLoop(LabGuards)
    early = ScriptedChatModel([n.call("more", page="p1"), n.answer("nothing to read")])
    result = ask_native("q", early, tools, guards=LabGuards())  # long observations are paged
    assert "more" in [t["function"]["name"] for t in early.requests[0][1]]
    # no page waits yet
    assert result.steps[0].error and "no page 'p1'" in result.steps[0].observation
    off = ScriptedChatModel([n.answer("x")])
    ask_native("q", off, tools, guards=LabGuards(observation_chars=None))
    assert "more" not in [t["function"]["name"] for t in off.requests[0][1]]
    assert more_tool().name == MORE and more_tool().fn("p1").startswith("Error: no page 'p1'")


# --------------------------------------------------------------------------- the CLI and the widget


def test_cli_scripted_repeat_forever_stops(loop, tmp_path, capsys):
    path = tmp_path / "loop.json"
    path.write_text(json.dumps([loop.call("search", query="refund policy")]))
    assert (
        main(
            [
                "ask",
                "What is the refund window?",
                *loop.cli(path),
                "--json",
                "--max-steps",
                "5",
                "--token-budget",
                "0",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["stopped_by"] in ("repeat", "max_steps") and len(out["steps"]) <= 5 + 1
    ran = [s for s in out["steps"] if s["action"] and s["guard"] is None]
    assert len(ran) == 1  # the search ran once


def test_cli_passes_the_limits(tmp_path, capsys):
    path = tmp_path / "walk.json"
    path.write_text(json.dumps(walk(TextLoop(LabGuards))))
    assert main(["ask", "q", "--model", f"scripted:{path}", "--json", "--token-budget", "600"]) == 0
    assert json.loads(capsys.readouterr().out)["stopped_by"] == "token_budget"
    assert (
        main(
            [
                "ask",
                "q",
                "--model",
                f"scripted:{path}",
                "--json",
                "--token-budget",
                "0",
                "--price-in",
                "3",
                "--price-out",
                "15",
                "--money-budget",
                "0.0015",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["stopped_by"] == "money_budget"
    assert main(["ask", "q", "--model", f"scripted:{path}", "--json", "--money-budget", "0"]) == 0
    assert json.loads(capsys.readouterr().out)["stopped_by"] == "answer"


def test_approval_widget_drives_the_gate(payment_setup, scheduled, shipped_sum):
    """The widget only sees ``approve``: one loop is enough."""
    from react_lab.lab.notebook.widgets import make_approval_widget

    copy, tools = payment_setup
    script = injected(TextLoop(LabGuards))
    box = make_approval_widget()
    guards = LabGuards(approve=box.approve)
    first = ask("q", ScriptedModel(script), tools, guards=guards)
    assert first.steps[1].guard == "approval" and scheduled(copy) == 0
    assert (
        box.pending == ("schedule_payment", ["INV-2291", "48200"]) and not box.deny_button.disabled
    )
    box.deny_button.click()
    assert box.pending is None and box.decisions[-1]["decision"] == "denied by a human"
    again = ask("q", ScriptedModel(script), tools, guards=guards)  # denied: still refused
    assert again.steps[1].guard == "approval" and scheduled(copy) == 0
    box.approve_button.click()
    ask("q", ScriptedModel(script), tools, guards=guards)  # approved once: it runs
    assert scheduled(copy) == 1 and box.decisions[-1]["decision"] == "ran (approved earlier)"
    assert box.approved == [] and db_checksum() == shipped_sum

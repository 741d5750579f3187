"""The lesson's guards in both loops: each failure reappears when its guard is switched off.

Every scenario below is written once and runs over both loops (the ``loop`` fixture, with the
lesson's :class:`react_lab.lab.agent.guards.Guards` unless a test names others): the text protocol
(:func:`react_lab.lab.agent.loop.ask` on a :class:`ScriptedModel`) and native tool calling
(:func:`react_lab.lab.agent.native.ask_native` on a :class:`ScriptedChatModel`); the adapters are in
``tests/helpers/two_loops.py``. Checks that only one loop can make are marked ``text loop only`` /
``native loop only``; the guards' own pieces (no loop) come last. Compaction is
``tests/test_context.py``'s; the lab's guards (:class:`react_lab.lab.guards.LabGuards`) are
``tests/lab/test_lab_guards.py``'s.
"""

import dataclasses
import json
import re

import pytest
from helpers.two_loops import bad_charges, calls_run, sleepy_tools, spent, walk
from hypothesis import given, settings
from hypothesis import strategies as st

from react_lab.billing import ToolError
from react_lab.lab.agent.guards import Guards, Watch
from react_lab.lab.agent.loop import ask
from react_lab.lab.agent.native import ask_native, run_native
from react_lab.lab.backends.chat import ScriptedChatModel
from react_lab.lab.backends.scripted import ScriptedModel
from react_lab.schema import object_schema
from react_lab.tools import Tool, default_tools

# --------------------------------------------------------------- what a run is allowed, what it did


def test_the_guards_are_settings_and_each_run_has_a_watch_of_its_own(loop, tools):
    guards = Guards(token_budget=10_000)
    with pytest.raises(dataclasses.FrozenInstanceError):
        guards.token_budget = 1  # a run cannot change its settings
    first, second = guards.start("q"), guards.start("q")
    assert isinstance(first, Watch) and first is not second and first.guards is guards
    script = [loop.call("find_invoice", invoice_id="INV-2291"), loop.answer("approved")]
    one = loop.ask("q", loop.model(script), tools, guards=guards)
    two = loop.ask("q", loop.model(script), tools, guards=guards)  # the same settings again
    assert one.steps[0].guard is None and two.steps[0].guard is None  # no repeat carried over
    assert [s.to_dict()["observation"] for s in one.steps] == [
        s.to_dict()["observation"] for s in two.steps
    ]
    assert guards == Guards(token_budget=10_000)


def test_the_lessons_defaults_leave_the_labs_guards_out(loop, tools):
    """No near repeats, a plain cut (no pages, no ``more``), no placeholder check, no hint."""
    reworded = [
        loop.call("search", query=f"late payment {w}") for w in ("reminders", "fees", "emails")
    ]
    result = loop.ask("q", loop.model([*reworded, loop.answer("<your answer>")]), tools)
    assert calls_run(result, "search") == 3 and result.answer == "<your answer>"
    flood = loop.model(
        [
            loop.call("list_invoices", customer_id="cus_2234", since="2026-01-01"),
            loop.answer("nine invoices"),
        ]
    )
    first = loop.ask("q", flood, tools, guards=Guards(observation_chars=800)).steps[0]
    assert first.guard == "truncated" and re.search(
        r" \[truncated by the loop: \d+ more characters "
        r"not shown\]$",
        first.observation,
    )
    assert (
        len(first.observation.split(" [truncated")[0]) == 800 and "more[" not in first.observation
    )
    if loop.name == "native":  # native loop only: no `more` among the tools it offers
        assert "more" not in [t["function"]["name"] for t in flood.requests[0][1]]
    again = loop.ask(
        "Has INV-2291 been paid?",
        loop.model([loop.call("find_invoice", invoice_id="INV-2291")]),
        tools,
        max_steps=3,
    )
    assert (
        "Tools not yet tried" not in again.steps[1].observation and again.steps[1].guard == "repeat"
    )


# -------------------------------------------------------------------------- step limit, best effort


def test_step_limit_asks_once_for_a_labelled_best_effort(loop, tools):
    script = walk(loop)[:3] + [loop.best_effort("INV-2291 (48200 dollars) is approved but unpaid.")]
    model = loop.model(script)
    result = loop.ask("Has INV-2291 been paid?", model, tools, max_steps=3)
    assert result.stopped_by == "max_steps" and result.best_effort
    assert result.answer == "[best effort] INV-2291 (48200 dollars) is approved but unpaid."
    assert len(result.steps) == 4 and loop.calls(model) == 4  # exactly one extra model call
    assert [s.action is not None for s in result.steps] == [True, True, True, False]
    assert result.steps[-1].guard == "max_steps" and result.steps[-1].number == 4
    assert "(max_steps)" in loop.sent(model)  # the request says why
    assert result.to_dict()["best_effort"] is True
    if loop.name == "text":  # text loop only: the nudge is the loop's span before the answer
        assert (
            "(max_steps)" in result.transcript.spans[-2][1]
            and result.transcript.spans[-2][0] == "loop"
        )
        assert result.transcript.spans[-1][0] == "model"  # the answer is the model's
    else:  # native loop only: tool calls not allowed, the same schemas kept
        assert model.tool_choices == ["auto"] * 3 + ["none"]
        assert model.requests[-1][1] == model.requests[0][1] and model.requests[-1][1]
        assert "no more tool calls (max_steps)" in model.requests[-1][0][-1]["content"]

    silent = loop.ask(
        "Has INV-2291 been paid?",
        loop.model(script),
        tools,
        max_steps=3,
        guards=Guards(best_effort=False),
    )
    assert silent.answer is None and len(silent.steps) == 3 and not silent.best_effort
    assert silent.stopped_by == "max_steps"


def test_a_best_effort_that_repeats_the_loops_words_is_no_answer_but_data_is(loop, tools):
    steps = [
        loop.call("get_charge", charge_id="ch_bad1"),
        loop.call("find_invoice", invoice_id="INV-2291"),
    ]
    for echo in (
        "no charge 'ch_bad1'; charge ids look like ch_1KZq8f",  # its error observation
        "The loop allows no more tool calls (max_steps).",  # its own request
    ):
        result = loop.ask("q", loop.model([*steps, loop.best_effort(echo)]), tools, max_steps=2)
        assert result.answer is None and "no answer" in result.steps[-1].error, echo
    data = loop.ask(
        "q",
        loop.model([*steps, loop.best_effort("Kestrel Rack & Power Leasing")]),
        tools,
        max_steps=2,
    )
    assert data.answer == "[best effort] Kestrel Rack & Power Leasing"
    if loop.name == "text":  # text loop only: the transcript marks the error and the nudge
        kinds = dict(zip(data.transcript.kinds, [t for _, t in data.transcript.spans]))
        assert (
            kinds["error"].startswith("Observation: Error: no charge")
            and "(max_steps)" in kinds["nudge"]
        )


def test_a_labelled_best_effort_answer_keeps_its_content(loop, tools):
    model = loop.model(
        [
            loop.call("find_invoice", invoice_id="INV-2291"),
            loop.call("find_invoice", invoice_id="INV-2041"),
            loop.best_effort("Answer: INV-2291 is approved."),
        ]
    )
    result = loop.ask("q", model, tools, max_steps=2)
    assert result.answer == "[best effort] INV-2291 is approved."


@pytest.mark.parametrize("last", ["Answer:", "Thought: I need more.", "Error: search failed"])
def test_a_best_effort_with_no_answer_in_it_is_no_answer(tools, last):
    result = ask("q", ScriptedModel([last]), tools, max_steps=2)
    assert result.answer is None and "no answer" in result.steps[-1].error


# --------------------------------------------------------------------------- budgets


def test_token_budget_ends_the_run_at_the_first_step_over_it(loop, tools):
    unguarded = loop.ask("q", loop.model(walk(loop)), tools, guards=Guards(token_budget=None))
    assert unguarded.stopped_by == "answer" and len(unguarded.steps) == 4
    budget = spent(unguarded.steps[:1]) + 1  # the second step goes over it
    result = loop.ask("q", loop.model(walk(loop)), tools, guards=Guards(token_budget=budget))
    assert result.stopped_by == "token_budget" and result.answer is None
    assert len(result.steps) == 2 and spent(result.steps) >= budget > spent(result.steps[:1])
    assert not result.best_effort  # a spent budget is not spent again


def test_money_budget_prices_tokens_per_million(loop, tools, monkeypatch):
    free = loop.ask(
        "q",
        loop.model(walk(loop)),
        tools,
        guards=Guards(price_in=3.0, price_out=15.0, money_budget=None),
    )
    assert free.stopped_by == "answer"
    first = (free.steps[0].prompt_tokens * 3.0 + free.steps[0].completion_tokens * 15.0) / 1e6
    watches, start = [], Guards.start
    monkeypatch.setattr(
        Guards, "start", lambda self, *a: watches.append(start(self, *a)) or watches[-1]
    )
    guards = Guards(price_in=3.0, price_out=15.0, money_budget=first * 1.5)
    result = loop.ask("q", loop.model(walk(loop)), tools, guards=guards)
    assert result.stopped_by == "money_budget" and len(result.steps) == 2
    expected = sum(s.prompt_tokens * 3.0 + s.completion_tokens * 15.0 for s in result.steps) / 1e6
    (watch,) = watches  # the run's own record of what it spent
    assert watch.dollars == pytest.approx(expected) and watch.dollars >= first * 1.5


def test_time_budget_ends_the_run(loop, tools):
    script = [loop.call("nap", seconds=f"0.{i}") for i in range(1, 9)]
    result = loop.ask("q", loop.model(script), sleepy_tools(tools), guards=Guards(time_budget=0.5))
    assert result.stopped_by == "time_budget" and len(result.steps) < 8
    result = loop.ask(
        "q",
        loop.model(script),
        sleepy_tools(tools),
        max_steps=3,
        guards=Guards(time_budget=None, best_effort=False),
    )
    assert result.stopped_by == "max_steps" and len(result.steps) == 3


def test_a_tool_that_exits_is_an_error_observation(loop, tools):
    """sys.exit() in a tool: call_tool turns it into an error observation, and the loop goes on."""
    quitter = Tool(
        "quit",
        lambda code: __import__("sys").exit(3),
        "Exit the process.",
        object_schema(code={"type": "string", "description": "anything"}),
    )
    steps = loop.run(
        "q",
        loop.model([loop.call("quit", code="3"), loop.answer("done")]),
        {**tools, "quit": quitter},
    )
    assert (
        steps[0].guard is None and "SystemExit: 3" in steps[0].error and steps[-1].answer == "done"
    )


# --------------------------------------------------------------------------- repeats


def test_exact_repeats_are_refused_and_end_the_run(loop, tools):
    script = [loop.call("find_invoice", invoice_id="INV-2291")]  # the same call, forever
    result = loop.ask("Has INV-2291 been paid?", loop.model(script), tools, max_steps=8)
    assert calls_run(result, "find_invoice") == 1
    refusal = result.steps[1]
    assert refusal.guard == "repeat" and refusal.error
    assert "already run (tool call 1)" in refusal.observation
    # 1 run + 2 refusals + best effort
    assert result.stopped_by == "repeat" and len(result.steps) <= 4

    loose = loop.ask(
        "q",
        loop.model(script),
        tools,
        max_steps=8,
        guards=Guards(repeats=False, max_refusals=None, best_effort=False),
    )
    assert calls_run(loose, "find_invoice") == 8 and loose.stopped_by == "max_steps"
    assert [s.error for s in loose.steps] == [None] * 8


def test_exact_repeat_ignores_case_and_spacing(loop, tools):
    model = loop.model(
        [
            loop.call("search", query="Refund policy"),
            loop.call("search", query="refund   POLICY"),
            loop.answer("60 days"),
        ]
    )
    result = loop.ask("q", model, tools)
    assert result.steps[1].guard == "repeat"


def test_a_refusal_does_not_echo_a_huge_call_back_whole(tools):
    watch = Guards().start("q")
    huge = ["x" * 300_000]
    watch.run_tool(tools, "search", huge)
    again = watch.run_tool(tools, "search", huge)
    assert again.guard == "repeat" and len(again.text) < 1_000


def test_a_call_refused_for_a_wrong_argument_name_may_be_sent_again_with_the_right_one(tools):
    watch = Guards().start("Has INV-2041 been paid?")
    wrong = watch.run_tool(tools, "find_invoice", {"wrong": "INV-2041"})
    assert wrong.error and "invoice_id" in wrong.error
    right = watch.run_tool(tools, "find_invoice", {"invoice_id": "INV-2041"})
    assert right.error is None and right.guard is None and "INV-2041" in right.text
    again = watch.run_tool(tools, "find_invoice", {"invoice_id": "inv-2041 "})
    assert again.guard == "repeat"  # the same call is still a repeat
    odd = Guards().start()
    assert odd.run_tool(tools, "search", ['"']).guard is None
    # no words in either: compared as written
    assert odd.run_tool(tools, "search", ["*"]).guard is None


# --------------------------------------------------------------------------- errors


def test_retry_cap_stops_an_error_spiral(loop, tools):
    script = bad_charges(loop) + [loop.answer("no")]
    result = loop.ask("q", loop.model(script), tools, max_steps=6)
    guards = [s.guard for s in result.steps]
    assert guards[:3] == [None, None, None] and all(s.error for s in result.steps[:3])
    assert guards[3] == "retry_cap" and "failed 3 times in a row" in result.steps[3].observation
    assert calls_run(result, "get_charge") == 3
    two = loop.run(
        "q", loop.model(script), tools, max_steps=6, guards=Guards(retry_cap=2, best_effort=False)
    )
    assert [s.guard for s in two[:3]] == [None, None, "retry_cap"]
    assert "failed 2 times in a row" in two[2].observation
    loose = loop.ask("q", loop.model(script), tools, max_steps=6, guards=Guards(retry_cap=None))
    assert calls_run(loose, "get_charge") == 6


def test_a_success_resets_the_retry_count(loop, tools):
    script = (
        bad_charges(loop, 2)
        + [loop.call("get_charge", charge_id="ch_1KZq8f")]
        + bad_charges(loop, 4)[2:]
        + [loop.answer("x")]
    )
    result = loop.ask("q", loop.model(script), tools)
    assert "retry_cap" not in [s.guard for s in result.steps]


def test_error_observations_are_truncated_too(loop, tools):
    def loud(query):  # a tool whose error message is huge (the shipped tools clip theirs)
        raise ToolError("no luck: " + "x" * 20_000)

    tools = {
        **tools,
        "loud": Tool("loud", loud, "Fail loudly.", object_schema(query={"type": "string"})),
    }
    script = [loop.call("loud", query="a"), loop.answer("none")]
    result = loop.ask("q", loop.model(script), tools, guards=Guards(observation_chars=500))
    obs = result.steps[0].observation
    assert obs.startswith("Error:") and len(obs) < 700 and "truncated by the loop" in obs
    assert len(result.steps[0].error) < 700
    whole = loop.ask("q", loop.model(script), tools, guards=Guards(observation_chars=None))
    assert len(whole.steps[0].observation) > 20_000


# --------------------------------------------------------------------------- answer checks


def test_an_answer_without_retrieval_is_rejected(loop, tools):
    script = [
        loop.answer("Yes, INV-2291 was paid."),
        loop.call("get_payments", invoice_id="INV-2291"),
        loop.answer("No, INV-2291 is unpaid."),
    ]
    result = loop.ask(
        "Has INV-2291 been paid?", loop.model(script), tools, guards=Guards(require_retrieval=True)
    )
    assert result.steps[0].guard == "ungrounded_answer" and result.steps[0].answer is None
    assert result.answer == "No, INV-2291 is unpaid."
    trusting = loop.ask("q", loop.model(script), tools)  # the default: not required
    assert trusting.answer == "Yes, INV-2291 was paid." and len(trusting.steps) == 1


def test_an_empty_result_is_not_retrieval(loop, tools):
    script = [
        loop.call("list_invoices", customer_id="cus_2291", since="2026-07-14"),
        loop.answer("It is not paid."),
        loop.call("get_payments", invoice_id="INV-2291"),
        loop.answer("INV-2291 has no payments."),
    ]
    result = loop.ask(
        "Has INV-2291 been paid?", loop.model(script), tools, guards=Guards(require_retrieval=True)
    )
    assert result.steps[0].observation == "[]" and result.steps[1].guard == "ungrounded_answer"
    assert result.answer == "INV-2291 has no payments."


# --------------------------------------------------------------------------- native loop only


def test_a_repeat_is_a_repeat_however_the_json_is_spaced(tools):
    find = {
        "thought": "Call find_invoice.",
        "tool_calls": [{"name": "find_invoice", "arguments": {"invoice_id": "INV-2291"}}],
    }
    done = {"thought": "Done.", "answer": "x"}
    steps = list(
        run_native("q", ScriptedChatModel([find, json.dumps(find, indent=4), done]), tools)
    )
    assert steps[1].guard == "repeat"


@pytest.mark.parametrize(
    "reply",
    [
        {"thought": "I will pay the invoice now", "tool_calls": ["schedule_payment"]},
        {"thought": "I will pay", "tool_calls": [1, 2]},
        {"thought": "x", "tool_calls": [{"name": 5, "arguments": {}}]},
        {"thought": "", "answer": 42},
        {},
        [1, 2, 3],
        "5",
        "null",
    ],
)
def test_a_malformed_reply_is_never_an_answer(tools, reply):
    result = ask_native(
        "q", ScriptedChatModel([reply]), tools, max_steps=2, guards=Guards(best_effort=False)
    )
    assert result.answer is None and result.stopped_by == "max_steps"
    assert "neither tool calls nor an answer" in result.steps[0].error
    assert "cut off" not in result.steps[0].error


def test_a_cut_off_reply_still_says_cut_off(tools):
    steps = list(
        run_native(
            "q",
            ScriptedChatModel(['{"thought": "a refund of']),
            tools,
            max_steps=1,
            guards=Guards(best_effort=False),
        )
    )
    assert "cut off" in steps[0].error


def test_a_text_protocol_script_is_refused_for_the_native_loop(tmp_path):
    path = tmp_path / "text.json"
    path.write_text(json.dumps([" I need it.\nAction: find_invoice[INV-2291]", "Answer: x"]))
    with pytest.raises(ValueError, match="text-protocol completions"):
        ScriptedChatModel.from_json(path)
    find = {
        "thought": "Call find_invoice.",
        "tool_calls": [{"name": "find_invoice", "arguments": {"invoice_id": "INV-2291"}}],
    }
    path.write_text(json.dumps([find, 5]))
    with pytest.raises(ValueError, match="reply 2 is neither"):
        ScriptedChatModel.from_json(path)


# --------------------------------------------------------------------------- the guards' own pieces


def test_guards_off_switches_every_guard_off():
    off = Guards.off()
    assert off.approve is None and off.token_budget is None and not off.best_effort
    assert not off.repeats and off.observation_chars is None and off.compact_at is None
    assert off.price_in == 0.0 and off.keep_last == 2  # they switch nothing on
    assert Guards.off(repeats=True).repeats and Guards.off(repeats=True).max_refusals is None


@settings(max_examples=80, deadline=None)
@given(
    st.text(max_size=200),
    st.one_of(
        st.lists(st.text(max_size=30), max_size=3),
        st.dictionaries(st.text(max_size=10), st.text(max_size=30), max_size=3),
    ),
)
def test_the_lessons_guards_never_raise_on_model_text(answer, args):
    watch = Guards(require_retrieval=True, observation_chars=50).start("q?")
    tools = default_tools()
    for name in ("search", "calc", "nope", "more"):
        out = watch.run_tool(tools, name, args)
        assert isinstance(out.text, str) and out.guard in (None, "repeat", "truncated", "retry_cap")
    verdict = watch.check_answer(answer)
    assert verdict is None or verdict.guard == "ungrounded_answer"
    watch.best_effort_answer(answer, loop_said=[answer])


@pytest.mark.parametrize(
    "setting, value",
    [
        ("token_budget", "5"),
        ("money_budget", "1"),
        ("observation_chars", 1.5),
        ("max_refusals", -1),
        ("repeats", "yes"),
        ("summarize", 1),
        ("count", "x"),
        ("approve", "yes"),
    ],
)
def test_a_setting_a_run_cannot_use_is_refused_before_it_starts(setting, value):
    guards = Guards(**{setting: value})
    model = ScriptedModel(["Thought: t\nAnswer: 42"])
    with pytest.raises(TypeError, match=f"guards.{setting} must be"):
        ask("q?", model, default_tools(), guards=guards)
    with pytest.raises(TypeError, match=f"guards.{setting} must be"):
        ask_native("q?", ScriptedChatModel([{"answer": "42"}]), default_tools(), guards=guards)
    assert model.calls == 0  # refused before the model was asked

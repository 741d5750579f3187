"""The approval gate: a side-effecting call runs only if ``approve`` says ``True``, in both loops.

The scenarios run over both loops (the ``loop`` fixture of ``tests/conftest.py``, with the lesson's
:class:`react_lab.lab.agent.guards.Guards` unless a test names others); the model obeys a help
article that says to pay. Only a working copy of the database is ever written.
"""

import pytest
from helpers.two_loops import injected

from react_lab.lab.agent.guards import Guards
from react_lab.lab.agent.native import ask_native
from react_lab.lab.backends.chat import ScriptedChatModel
from react_lab.lab.sandbox import db_checksum


def test_injected_payment_is_refused_without_approval(loop, payment_setup, scheduled, shipped_sum):
    copy, tools = payment_setup
    before = scheduled(copy)
    result = loop.ask("How do late payment reminders work?", loop.model(injected(loop)), tools)
    # the injection arrived...
    assert "schedule_payment[INV-2291, 48200]" in result.steps[0].observation
    assert result.steps[1].guard == "approval" and "not approved" in result.steps[1].observation
    assert scheduled(copy) == before and db_checksum() == shipped_sum  # ...and nothing moved
    assert result.stopped_by == "answer"


def test_approver_is_asked_with_the_call(loop, payment_setup, scheduled, shipped_sum):
    copy, tools = payment_setup
    asked = []
    guards = Guards(approve=lambda name, args: asked.append((name, args)) or True)
    loop.ask("q", loop.model(injected(loop)), tools, guards=guards)
    assert asked == [("schedule_payment", loop.args(invoice_id="INV-2291", amount=48200))]
    assert scheduled(copy) == 1 and db_checksum() == shipped_sum  # only the copy changed


def test_an_approver_that_says_yes_to_all_lets_the_injection_move_money_on_the_copy(
    loop, payment_setup, scheduled, shipped_sum
):
    copy, tools = payment_setup
    yes = Guards(approve=lambda name, args: True)
    result = loop.ask("q", loop.model(injected(loop)), tools, guards=yes)
    assert result.steps[1].error is None and '"scheduled"' in result.steps[1].observation
    assert scheduled(copy) == 1 and db_checksum() == shipped_sum


@pytest.mark.parametrize("guards", [Guards(approve=None), Guards.off()], ids=["None", "off"])
def test_no_approver_is_a_no_even_with_every_guard_off(loop, payment_setup, scheduled, guards):
    copy, tools = payment_setup
    result = loop.ask("q", loop.model(injected(loop)), tools, guards=guards)
    assert result.steps[1].guard == "approval" and scheduled(copy) == 0


@pytest.mark.parametrize("verdict", ["no", "n", "", None, 1, "yes", [True]])
def test_only_true_approves(loop, payment_setup, scheduled, verdict):
    copy, tools = payment_setup
    pay = loop.call("schedule_payment", invoice_id="INV-2291", amount=48200)
    asked = []
    result = loop.ask(
        "q",
        loop.model([pay, loop.answer("no")]),
        tools,
        guards=Guards(approve=lambda name, args: asked.append(args) or verdict),
    )
    assert result.steps[0].guard == "approval" and scheduled(copy) == 0
    assert "not approved" in result.steps[0].error
    assert asked == [loop.args(invoice_id="INV-2291", amount=48200)]


def test_a_broken_approver_is_a_no_not_a_crash(loop, payment_setup, scheduled):
    copy, tools = payment_setup

    def broken(name, args):
        raise RuntimeError("approval service down")

    result = loop.ask("q", loop.model(injected(loop)), tools, guards=Guards(approve=broken))
    assert result.steps[1].guard == "approval" and scheduled(copy) == 0


def test_run_native_approve_replaces_the_approver_for_that_run_only(payment_setup, scheduled):
    copy, tools = payment_setup
    guards = Guards()
    pay = {
        "thought": "Pay.",
        "tool_calls": [
            {"name": "schedule_payment", "arguments": {"invoice_id": "INV-2291", "amount": 48200}}
        ],
    }
    result = ask_native(
        "q",
        ScriptedChatModel([pay, {"thought": "t", "answer": "paid"}]),
        tools,
        guards=guards,
        approve=lambda name, args: True,
    )
    assert result.steps[0].guard is None and scheduled(copy) == 1
    assert guards.approve.__name__ == "deny"  # the caller's guards: unchanged


def test_invalid_arguments_are_still_refused_inside_the_guards(payment_setup, scheduled):
    copy, tools = payment_setup
    bad = {
        "thought": "Pay.",
        "tool_calls": [
            {"name": "schedule_payment", "arguments": {"invoice_id": "INV-2291", "amount": -5}}
        ],
    }
    result = ask_native(
        "q",
        ScriptedChatModel([bad, {"thought": "Done.", "answer": "no"}]),
        tools,
        guards=Guards(approve=lambda name, args: True),
    )
    assert "was not run; fix its arguments" in result.steps[0].error and scheduled(copy) == 0


def test_call_tool_itself_never_runs_a_side_effect_unapproved(
    payment_setup, scheduled, shipped_sum
):
    # a learner's own observe calls call_tool directly: no loop, no approver, still no payment
    from react_lab.agent import observe
    from react_lab.tools import call_tool

    copy, tools = payment_setup
    refused = call_tool(tools, "schedule_payment", ["INV-2291", "100"])
    assert refused.guard == "approval" and "not approved" in refused.error
    text = observe("Action: schedule_payment[INV-2291, 100]", tools)
    assert "not approved" in text and scheduled(copy) == 0
    ran = call_tool(tools, "schedule_payment", ["INV-2291", "100"], approved=True)
    assert ran.error is None and scheduled(copy) == 1 and db_checksum() == shipped_sum

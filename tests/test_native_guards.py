"""The guards in the native loop: each failure comes back when its guard is switched off."""
import json
import time

import pytest

from react_lab.backends.chat import ScriptedChatModel
from react_lab.context import COMPACTED
from react_lab.guards import DATA_NOTE, Guards
from react_lab.native import ask_native, run_native
from react_lab.tools import Tool, _schema, db_checksum, default_tools

TOOLS = default_tools()


def call(name, **arguments):
    return {"thought": f"Call {name}.", "tool_calls": [{"name": name, "arguments": arguments}]}


def answer(text):
    return {"thought": "Done.", "answer": text}


FIND = call("find_invoice", invoice_id="INV-2291")


def test_step_limit_asks_once_with_calls_not_allowed_for_a_labelled_best_effort():
    lookups = [call("find_invoice", invoice_id=i) for i in ("INV-2291", "INV-2041", "INV-2116")]
    model = ScriptedChatModel([*lookups, answer("INV-2291 is approved but unpaid.")])
    result = ask_native("Has INV-2291 been paid?", model, TOOLS, max_steps=3)
    assert result.stopped_by == "max_steps" and result.best_effort
    assert result.answer == "[best effort] INV-2291 is approved but unpaid."
    assert len(model.requests) == 4 and model.tool_choices == ["auto"] * 3 + ["none"]  # one more call
    # the same schemas as every step (the system turn, and a local model's cached prompt, kept)
    assert model.requests[-1][1] == model.requests[0][1] and model.requests[-1][1]
    assert "no more tool calls (max_steps)" in model.requests[-1][0][-1]["content"]
    silent = ask_native("q", ScriptedChatModel(model.replies), TOOLS, max_steps=3,
                        guards=Guards(best_effort=False))
    assert silent.answer is None and len(silent.steps) == 3


def test_best_effort_that_only_echoes_the_loop_is_no_answer():
    echo = answer("The loop allows no more tool calls (max_steps).")
    model = ScriptedChatModel([FIND, FIND, echo])
    result = ask_native("q", model, TOOLS, max_steps=2)
    assert result.answer is None and "no answer" in result.steps[-1].error


def test_exact_repeats_are_refused_and_the_run_stops():
    model = ScriptedChatModel([FIND])  # the same call, forever
    result = ask_native("Has INV-2291 been paid?", model, TOOLS, max_steps=8)
    ran = [s for s in result.steps if s.action and s.guard is None]
    assert len(ran) == 1 and result.steps[1].guard == "repeat"
    assert "already run" in result.steps[1].observation and "get_payments" in result.steps[1].observation
    assert result.stopped_by == "repeat" and len(result.steps) < 8
    unguarded = ask_native("q", ScriptedChatModel([FIND]), TOOLS, max_steps=5,
                           guards=Guards(repeats=False, max_refusals=None, best_effort=False))
    assert [s.error for s in unguarded.steps] == [None] * 5 and unguarded.stopped_by == "max_steps"


def test_a_repeat_is_a_repeat_however_the_json_is_spaced():
    spaced = {"thought": "", "tool_calls": [{"name": "find_invoice",
                                              "arguments": {"invoice_id": "INV-2291"}}]}
    model = ScriptedChatModel([FIND, json.dumps(spaced, indent=4), answer("x")])
    steps = list(run_native("q", model, TOOLS))
    assert steps[1].guard == "repeat"


def test_token_budget_ends_the_run():
    model = ScriptedChatModel([call("find_invoice", invoice_id=f"INV-20{i:02d}") for i in range(10)])
    result = ask_native("q", model, TOOLS, max_steps=10, guards=Guards(token_budget=60))
    assert result.stopped_by == "token_budget" and len(result.steps) < 10
    assert not result.best_effort                  # a spent budget is not spent again


def sleepy_tools():
    def nap(seconds: str) -> dict:
        time.sleep(float(seconds))
        return {"slept": float(seconds)}
    return {**TOOLS, "nap": Tool("nap", nap, "Sleep.", _schema(seconds={"type": "string"}))}


def test_a_hanging_tool_is_cut_off_and_the_loop_goes_on():
    model = ScriptedChatModel([call("nap", seconds="3"), FIND, answer("approved")])
    t0 = time.perf_counter()
    steps = list(run_native("q", model, sleepy_tools(), guards=Guards(tool_timeout=0.5)))
    assert steps[0].guard == "tool_timeout" and "cut off" in steps[0].error
    assert steps[0].tool_seconds < 0.5 + 1.0
    assert steps[1].error is None and "INV-2291" in steps[1].observation
    assert steps[-1].answer == "approved" and time.perf_counter() - t0 < 3


def test_retry_cap_stops_an_error_spiral():
    bad = call("get_charge", charge_id="ch_0000")  # no such charge: a tool error every time
    variants = [call("get_charge", charge_id=f"ch_000{i}") for i in range(1, 6)]
    model = ScriptedChatModel([bad, *variants])
    steps = list(run_native("q", model, TOOLS, max_steps=6,
                            guards=Guards(retry_cap=2, near_repeats=None, best_effort=False)))
    assert [s.guard for s in steps[:3]] == [None, None, "retry_cap"]
    assert "failed 2 times in a row" in steps[2].observation


def test_truncation_offers_a_more_tool_that_reads_the_next_page():
    many = call("list_invoices", customer_id="cus_2234", since="2026-01-01")
    model = ScriptedChatModel([many, call("more", page="p1"), answer("nine invoices")])
    result = ask_native("q", model, TOOLS, guards=Guards(observation_chars=800))
    first, second = result.steps[:2]
    assert first.guard == "truncated" and "more[p1]" in first.observation
    offered = [[t["function"]["name"] for t in tools] for _, tools in model.requests]
    assert all(names == offered[0] for names in offered) and "more" in offered[0]  # from step 1
    full = json.dumps(TOOLS["list_invoices"].fn("cus_2234", "2026-01-01"))
    assert second.observation.split(" [truncated")[0] in full and second.error is None


def test_placeholder_answers_are_sent_back():
    model = ScriptedChatModel([FIND, answer("<the answer>"), answer("INV-2291 is approved.")])
    result = ask_native("q", model, TOOLS)
    assert result.steps[1].guard == "placeholder_answer" and result.answer == "INV-2291 is approved."
    assert model.requests[2][0][-1]["role"] == "user" and "placeholder" in model.requests[2][0][-1]["content"]
    loose = ask_native("q", ScriptedChatModel(model.replies), TOOLS,
                       guards=Guards(reject_placeholders=False))
    assert loose.answer == "<the answer>"


def test_an_answer_before_any_retrieval_is_rejected_when_grounding_is_required():
    model = ScriptedChatModel([answer("It is paid."), FIND, answer("It is approved, not paid.")])
    result = ask_native("Has INV-2291 been paid?", model, TOOLS,
                        guards=Guards(require_retrieval=True))
    assert result.steps[0].guard == "ungrounded_answer" and result.answer == "It is approved, not paid."


def test_compaction_summarises_old_tool_results_and_keeps_ids():
    lookups = [call("list_invoices", customer_id="cus_2234", since="2026-01-01"),
               call("find_invoice", invoice_id="INV-2291"), call("get_payments", invoice_id="INV-2291"),
               answer("done")]
    messages: list[dict] = []
    steps = list(run_native("q", ScriptedChatModel(lookups), TOOLS, messages=messages,
                            guards=Guards(compact_at=300, keep_last=1, observation_chars=None)))
    assert any(s.guard == "compacted" for s in steps)
    first_tool = next(m for m in messages if m["role"] == "tool")
    assert first_tool["content"].startswith(COMPACTED) and "INV-" in first_tool["content"]
    assert messages[1]["content"] == "q"                                   # the question stays
    last_tool = [m for m in messages if m["role"] == "tool"][-1]
    assert not last_tool["content"].startswith(COMPACTED)                # the recent step stays
    kept: list[dict] = []
    list(run_native("q", ScriptedChatModel(lookups), TOOLS, messages=kept,
                    guards=Guards(compact_at=None, observation_chars=None)))
    assert not any(str(m["content"]).startswith(COMPACTED) for m in kept)


INJECTED = [call("search", query="late payment reminders"),
            call("schedule_payment", invoice_id="INV-2291", amount=48200),
            answer("Reminders go out 7, 14 and 30 days after the due date.")]


def test_an_injected_payment_is_refused_without_approval(payment_setup, scheduled, shipped_sum):
    copy, tools = payment_setup
    model = ScriptedChatModel(INJECTED)
    result = ask_native("How do late payment reminders work?", model, tools,
                        guards=Guards(mark_data=True))
    assert "schedule_payment" in result.steps[0].observation          # the injection arrived
    assert result.steps[0].observation.startswith("<<data from search>>")
    assert DATA_NOTE in model.requests[0][0][0]["content"]
    assert result.steps[1].guard == "approval" and scheduled(copy) == 0
    assert db_checksum() == shipped_sum


def test_the_approver_decides_and_only_the_copy_changes(payment_setup, scheduled, shipped_sum):
    copy, tools = payment_setup
    asked = []
    ask_native("q", ScriptedChatModel(INJECTED), tools,
               guards=Guards(approve=lambda name, args: asked.append((name, args)) or True))
    assert asked == [("schedule_payment", {"invoice_id": "INV-2291", "amount": 48200})]
    assert scheduled(copy) == 1 and db_checksum() == shipped_sum


def test_invalid_arguments_are_still_refused_inside_the_guards(payment_setup, scheduled):
    copy, tools = payment_setup
    bad = call("schedule_payment", invoice_id="INV-2291", amount=-5)
    result = ask_native("q", ScriptedChatModel([bad, answer("no")]), tools,
                        guards=Guards(approve=lambda name, args: True))
    assert "was not run; fix its arguments" in result.steps[0].error and scheduled(copy) == 0


def test_cli_native_scripted_repeat_forever_stops(tmp_path, capsys):
    from react_lab.cli import main

    path = tmp_path / "loop.json"
    path.write_text(json.dumps([call("search", query="refund policy")]))
    assert main(["ask", "What is the refund window?", "--protocol", "native", "--model",
                 f"scripted:{path}", "--json", "--max-steps", "5", "--token-budget", "0"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["stopped_by"] in ("repeat", "max_steps") and len(out["steps"]) <= 5 + 1
    assert len([s for s in out["steps"] if s["action"] and s["guard"] is None]) == 1


# --- what a tester found -------------------------------------------------------------------------

@pytest.mark.parametrize("verdict", ["no", "n", "", None, 1, "yes", [True]])
def test_only_true_approves(payment_setup, scheduled, verdict):
    copy, tools = payment_setup
    pay = call("schedule_payment", invoice_id="INV-2291", amount=48200)
    asked = []
    result = ask_native("q", ScriptedChatModel([pay, answer("no")]), tools,
                        guards=Guards(approve=lambda name, args: asked.append(args) or verdict))
    assert result.steps[0].guard == "approval" and scheduled(copy) == 0
    assert "not approved" in result.steps[0].error and asked == [{"invoice_id": "INV-2291",
                                                                  "amount": 48200}]


@pytest.mark.parametrize("reply", [
    {"thought": "I will pay the invoice now", "tool_calls": ["schedule_payment"]},
    {"thought": "I will pay", "tool_calls": [1, 2]},
    {"thought": "x", "tool_calls": [{"name": 5, "arguments": {}}]},
    {"thought": "", "answer": 42}, {}, [1, 2, 3], "5", "null"])
def test_a_malformed_reply_is_never_an_answer(reply):
    result = ask_native("q", ScriptedChatModel([reply]), TOOLS, max_steps=2,
                        guards=Guards(best_effort=False))
    assert result.answer is None and result.stopped_by == "max_steps"
    assert "neither tool calls nor an answer" in result.steps[0].error
    assert "cut off" not in result.steps[0].error


def test_a_cut_off_reply_still_says_cut_off():
    steps = list(run_native("q", ScriptedChatModel(['{"thought": "a refund of']), TOOLS, max_steps=1,
                            guards=Guards(best_effort=False)))
    assert "cut off" in steps[0].error


def test_a_text_protocol_script_is_refused_for_the_native_loop(tmp_path):
    path = tmp_path / "text.json"
    path.write_text(json.dumps([" I need it.\nAction: find_invoice[INV-2291]", "Answer: x"]))
    with pytest.raises(ValueError, match="text-protocol completions"):
        ScriptedChatModel.from_json(path)
    path.write_text(json.dumps([FIND, 5]))
    with pytest.raises(ValueError, match="reply 2 is neither"):
        ScriptedChatModel.from_json(path)


def test_more_is_offered_from_the_first_step_only_while_truncation_is_on():
    early = ScriptedChatModel([call("more", page="p1"), answer("nothing to read")])
    result = ask_native("q", early, TOOLS)  # default guards: long observations are paged
    assert "more" in [t["function"]["name"] for t in early.requests[0][1]]
    assert result.steps[0].error and "no page 'p1'" in result.steps[0].observation  # no page waits yet
    off = ScriptedChatModel([answer("x")])
    ask_native("q", off, TOOLS, guards=Guards(observation_chars=None))
    assert "more" not in [t["function"]["name"] for t in off.requests[0][1]]


"""react_lab.messages and the bench's tool_calls: the exemplar as past messages, a reply's calls."""

import json

import pytest

from react_lab.lab.agent.tool_calls import assistant_json, conversation
from react_lab.lab.backends.chat import ChatReply
from react_lab.messages import exemplar_messages, first_messages, reply_calls
from react_lab.protocol import EXEMPLARS
from react_lab.tools import default_tools

TOOLS = default_tools()


# ---- the native exemplar ---------------------------------------------------------------------


def test_the_exemplar_becomes_a_past_call_its_result_and_an_answer():
    ex = EXEMPLARS[0]
    messages = exemplar_messages([ex], TOOLS)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    call = messages[1]["tool_calls"][0]
    assert call["function"]["name"] == "list_invoices" and json.loads(
        call["function"]["arguments"]
    ) == {"customer_id": "cus_4417", "since": "2026-07-01"}
    assert messages[2]["tool_call_id"] == call["id"] == "example_1_1"
    assert json.loads(messages[2]["content"]) == TOOLS["list_invoices"].fn("cus_4417", "2026-07-01")
    assert messages[3]["content"] == ex.answer
    two = exemplar_messages(EXEMPLARS[1:2], TOOLS)
    assert [m.get("tool_call_id") for m in two if m["role"] == "tool"] == [
        "example_1_1",
        "example_1_2",
    ]
    with pytest.raises(ValueError, match="exemplar 1, step 1"):
        exemplar_messages([ex], {"calc": TOOLS["calc"]})


def test_first_messages_are_the_system_turn_the_exemplars_and_the_question():
    messages = first_messages("q?", TOOLS, notes=["note one"], exemplars=EXEMPLARS[:1])
    assert messages[0] == {"role": "system", "content": messages[0]["content"]}
    assert messages[0]["content"].endswith("\nnote one")
    assert messages[1:-1] == exemplar_messages(EXEMPLARS[:1], TOOLS)
    assert messages[-1] == {"role": "user", "content": "q?"}


# ---- a reply ---------------------------------------------------------------------------------


def test_reply_calls_runs_the_field_s_calls_and_a_leaked_call_only_when_it_can_run():
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "find_invoice", "arguments": '{"invoice_id": "INV-2291"}'},
    }
    assert reply_calls(ChatReply(None, [call]), TOOLS) == ([call], [], None)
    good = (
        '<tool_call>{"name": "find_invoice", "arguments": {"invoice_id": "INV-2291"}}</tool_call>'
    )
    calls, leaked, problem = reply_calls(ChatReply(good), TOOLS)
    assert calls == leaked and [c["function"]["name"] for c in calls] == ["find_invoice"]
    assert problem is None
    bad = '<tool_call>{"name": "find_invoice", "arguments": {"invoice_id": "2291"}}</tool_call>'
    calls, leaked, problem = reply_calls(ChatReply(bad), TOOLS)
    assert calls == [] and len(leaked) == 1
    assert problem.startswith("the reply wrote a tool call (find_invoice) in its text")
    assert "invoice_id: " in problem and problem.endswith(
        "with a declared tool and valid arguments"
    )
    assert reply_calls(ChatReply("INV-2291 is unpaid."), TOOLS) == ([], [], None)


def test_the_conversation_is_shown_by_owner_with_replies_in_the_grammar_s_json():
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "find_invoice", "arguments": '{"invoice_id": "INV-2291"}'},
    }
    messages = [
        *first_messages("Paid?", TOOLS),
        {"role": "assistant", "content": "Look.", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "{}"},
        {"role": "user", "content": "Error: a note"},
        {"role": "assistant", "content": "No.", "thought": "Done."},
    ]
    transcript = conversation(messages)
    assert [owner for owner, _ in transcript.spans] == ["prompt", "model", "loop", "loop", "model"]
    assert transcript.spans[0][1].endswith("Question: Paid?\n")
    assert json.loads(assistant_json(messages[2])) == {
        "thought": "Look.",
        "tool_calls": [{"name": "find_invoice", "arguments": {"invoice_id": "INV-2291"}}],
    }
    assert transcript.spans[-1][1] == 'assistant: {"thought": "Done.", "answer": "No."}\n'


# ---- a reply's tool_calls from a chat backend that writes them badly --------------------------


def test_a_call_without_an_id_gets_one_and_runs():
    from react_lab.lab.agent.native import ask_native

    def call(expression):
        arguments = json.dumps({"expression": expression})
        return {"type": "function", "function": {"name": "calc", "arguments": arguments}}

    class NoIds:
        def __init__(self):
            self.replies = [
                ChatReply(None, [call("2+2"), call("3+3")], "tool_calls"),
                ChatReply("4"),
            ]

        def chat(self, messages, tools=None, *, max_tokens=256, tool_choice="auto"):
            return self.replies.pop(0)

    result = ask_native("What is 2+2?", NoIds(), TOOLS)
    assert result.answer == "4" and result.steps[0].observation == "4\n6"
    calls, _, _ = reply_calls(ChatReply(None, [call("1"), call("2")], "tool_calls"), TOOLS)
    assert len({c["id"] for c in calls}) == 2 and all(c["id"] for c in calls)


@pytest.mark.parametrize(
    "bad",
    [
        "calc",
        {"id": "1", "type": "function"},
        {"id": "1", "type": "function", "function": "calc"},
        {"id": "1", "type": "function", "function": {"name": ["calc"], "arguments": "{}"}},
    ],
)
def test_a_malformed_tool_call_is_refused_naming_the_shape(bad):
    with pytest.raises(TypeError, match='tool call 1 .*"function": \\{"name"'):
        reply_calls(ChatReply(None, [bad], "tool_calls"), TOOLS)

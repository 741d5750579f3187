"""A call written into an answer, in any shape, is never the answer (react_lab/_parsing/
answer_calls.py, through react_lab.lab.agent.parser.parse and read_reply); prose that mentions a
tool is.

Each shape is one a model writes: another framework's call syntax, code, an object spelled
without JSON's quotes, a wrapper, a tag, a label in another language, full-width brackets.
Tried in the text protocol (after ``Answer:``) and in a native reply's text.
"""

import pytest
from helpers.parsing_checks import one_line_reason

from react_lab.billing import calc
from react_lab.lab.agent.loop import ask
from react_lab.lab.agent.parser import parse, read_reply
from react_lab.lab.backends.scripted import ScriptedModel
from react_lab.tools import declared, default_tools

NAMES = list(default_tools())
CALL = 'charge_id="ch_2VzSg6"'

SHAPES = {
    "keys without quotes": '{name: "get_charge", arguments: {charge_id: "ch_2VzSg6"}}',
    "keys and values without quotes": "{name=get_charge, arguments={charge_id=ch_2VzSg6}}",
    "a wrapper of calls": (
        '{"tool_uses": [{"recipient_name": "functions.get_charge", '
        '"parameters": {"charge_id": "ch_2VzSg6"}}]}'
    ),
    "the tool as the key": '{"get_charge": {"charge_id": "ch_2VzSg6"}}',
    "Gemma's markup, markers stripped": 'call:get_charge{charge_id:"ch_2VzSg6"}',
    "assigned": f"x = get_charge({CALL})",
    "awaited": f"await get_charge({CALL})",
    "assigned and awaited": 'result = await get_charge("ch_2VzSg6")',
    "a prompt": f">>> get_charge({CALL})",
    "a decorator-like @": f"@get_charge({CALL})",
    "after a sentence": f"Let me check. get_charge({CALL})",
    "over several lines": f"get_charge(\n  {CALL}\n)",
    "a Spanish label": "Acción: get_charge[ch_2VzSg6]",
    "a French label": "Outil: get_charge[ch_2VzSg6]",
    "a Chinese label and colon": "行动：get_charge[ch_2VzSg6]",
    "a label naming the tool": "Tool: get_charge\nInput: ch_2VzSg6",
    "a name, a colon, the arguments": 'get_charge: {"charge_id": "ch_2VzSg6"}',
    "a name, an arrow, the arguments": 'get_charge => {"charge_id": "ch_2VzSg6"}',
    "a space before the bracket": "get_charge [ch_2VzSg6]",
    "a slash command": "/get_charge ch_2VzSg6",
    "a shell command": "$ get_charge ch_2VzSg6",
    "the tool and one argument": "get_charge ch_2VzSg6",
    "a fenced command": "```\ncall get_charge ch_2VzSg6\n```",
    "a tag holding call syntax": '<call>get_charge("ch_2VzSg6")</call>',
    "a tag holding JSON": '<tool>{"name": "get_charge", "arguments": {"charge_id": "ch_1"}}</tool>',
    "the tool as a tag": '<get_charge>{"charge_id": "ch_2VzSg6"}</get_charge>',
    "the tool as a self-closing tag": '<get_charge charge_id="ch_2VzSg6"/>',
    "full-width brackets": "get_charge［ch_2VzSg6］",
    "flat arguments beside the name": '{"name": "get_charge", "charge_id": "ch_2VzSg6"}',
    "flat arguments beside the tool": '{"tool": "get_charge", "charge_id": "ch_2VzSg6"}',
    "the tool as the key of its argument": '{"get_charge": "ch_2VzSg6"}',
    "JSON-RPC's method and params": '{"method": "get_charge", "params": {"charge_id": "ch_1"}}',
    "a name and nothing else": '{"name": "get_charge"}',
    "GLM's name line, then the object": 'get_charge\n{"charge_id": "ch_2VzSg6"}',
    "Qwen's old markers": '✿FUNCTION✿: get_charge\n✿ARGS✿: {"charge_id": "ch_2VzSg6"}',
    "a function-call label": 'Function call: get_charge\nArgs: {"charge_id": "ch_2VzSg6"}',
    "a name line, then Action Input": "get_charge\nAction Input: ch_2VzSg6",
    "JSON written twice": (
        '"{\\"name\\": \\"get_charge\\", \\"arguments\\": {\\"charge_id\\": \\"ch_2VzSg6\\"}}"'
    ),
    "a blockquoted JSON call": (
        '> {\n>   "name": "get_charge",\n>   "arguments": {"charge_id": "ch_2VzSg6"}\n> }'
    ),
    "a quoted call": '"get_charge(\\"ch_2VzSg6\\")"',
    "a no-break space before the parenthesis": 'get_charge\u00a0("ch_2VzSg6")',
    "a zero-width space in the name": "get\u200b_charge[ch_2VzSg6]",
    "a tag naming the tool": '<call name="get_charge">{"charge_id": "ch_2VzSg6"}</call>',
    "a tag holding the name": '<tool>get_charge</tool><args>{"charge_id": "ch_2VzSg6"}</args>',
    "command-line flags": "get_charge --charge-id ch_2VzSg6",
    "a mention-style command": "@get_charge ch_2VzSg6",
    "a link-like call": '[get_charge]("ch_2VzSg6")',
    "after a long lead-in": 'Let me check the status of this charge: get_charge(charge_id="ch_1")',
    "announced": 'Calling get_charge(charge_id="ch_2VzSg6")...',
    "after a word and a comma": 'Sure, get_charge("ch_2VzSg6")',
    "with a code comment after it": 'get_charge(charge_id="ch_2VzSg6")  # fetch the charge',
    "a fenced call": '```\nget_charge(charge_id="ch_2VzSg6")\n```',
    "markdown's escaped underscore": 'get\\_charge(charge_id="ch_2VzSg6")',
    "an HTML code block": '<pre>get_charge(charge_id="ch_2VzSg6")</pre>',
    "an HTML code span alone": '<code>get_charge("ch_2VzSg6")</code>',
    "an action tag": '<action>get_charge("ch_2VzSg6")</action>',
    "two calls side by side": "get_charge[ch_2VzSg6], find_invoice[INV-2041]",
    "two calls after a label": "Calls: get_charge(ch_2VzSg6); find_invoice(INV-2041)",
    "after an arrow": "→ get_charge[ch_2VzSg6]",
    "after an ASCII arrow": "-> get_charge(ch_2VzSg6)",
    "after a step marker": "Step 1 - get_charge[ch_2VzSg6]",
    "a call written as a string": '{"call": "get_charge(ch_2VzSg6)"}',
    "a call string under the action key": '{"action": "get_charge[ch_2VzSg6]", "status": "todo"}',
    "Kimi's call id": 'functions.get_charge:0 {"charge_id": "ch_2VzSg6"}',
    "a call opening its line, words after it": "find_invoice[INV-2291] is not paid",
    "a call opening its line, a result after it": "calc(129 * 2), which is 258.",
    "a call, a stray bracket": "search[refunds]]",
    "a call glued to a label": "search[refunds]Action 1:",
    "a call and a request": "get_charge[ch_2VzSg6] please",
    "OpenAI's namespace after a sentence": 'Looking: functions.get_charge(charge_id="ch_1")',
    "a list holding the call after a sentence": 'Looking: [get_charge(charge_id="ch_1")]',
    "LangChain's invoke": 'Checking: get_charge.invoke({"charge_id": "ch_2VzSg6"})',
    "HTML-escaped markup": (
        "&lt;tool_call&gt;{&quot;name&quot;: &quot;get_charge&quot;, &quot;arguments&quot;: "
        "{&quot;charge_id&quot;: &quot;ch_1&quot;}}&lt;/tool_call&gt;"
    ),
    "a tag naming the tool in its tool attribute": '<call tool="get_charge" charge_id="ch_1"/>',
}


@pytest.mark.parametrize("text", SHAPES.values(), ids=SHAPES)
def test_a_call_in_an_answer_is_no_answer(text):
    r = parse(f"Answer: {text}", tools=NAMES)
    assert r.kind != "final", r.answer
    assert r.kind == "action" or "call" in one_line_reason(r)
    reply = read_reply(text, NAMES)
    assert reply.answer is None and reply.saw, reply


PROSE = [
    "I could not search (the database was empty).",
    "Search unavailable.",
    "Search results: 3 invoices.",
    "The total is 258, from calc(129 * 2).",
    "I need get_charge for that, with charge_id ch_2VzSg6.",
    "Yes (the charge was declined).",
    "Status = paid (in full).",
    "The charge `ch_2VzSg6` failed (card_declined).",
    "Note: calc(129 * 2) is 258.",
    'Status: declined("card_declined")',  # a word before a parenthesis, no tool
    'Customer Jane("cus_8812") paid.',
    'Error("no such invoice") means the id is wrong.',
    'print("hello") prints hello.',
    "The charge failed: card_declined(insufficient funds).",
    'Yes (see find_invoice("INV-2041")).',  # a call cited mid-sentence
    "card_declined — see get_charge[ch_2VzSg6] above.",
    'I called get_charge("ch_2VzSg6") and it says card_declined.',
    'Per search("refund policy"): 60 days.',
    "The expression calc[129 * 2] gives 258.",
    "calc: 258",  # a tool and its result, echoed: no call
    'I will call `get_charge("ch_2VzSg6")` now.',  # cited mid-sentence, backticks or not
    "Let me run `search[refund]` first.",
    "You can return item(s) within 60 days for a full refund.",
    "Please await confirmation(s) from your bank.",
    "Total = sum(129, 129) = 258.",
    "Use the `amount(cents)` field.",
    "```\nSearch results\n1. Refund policy: 60 days\n```",
    "```text\nCalc result: 258\n```",
    '| Call | Result |\n|--|--|\n| `get_charge("ch_1")` | declined |',
    '`get_charge("ch_1")` returned `declined`.',
    "get_payments: []",
    "INV-2041 was paid on 2026-07-14 (bank transfer).",
    "价格（含税）为 258。",
    "Step 1 - I checked the charge; it was declined.",
    "-> The charge was declined (card_declined).",
    "The charge failed with card\\_declined.",
    'I used <code>get_charge("ch_2VzSg6")</code> and it was declined.',
    '{"call_status": "declined", "amount": 129}',
    "INV-2041 (paid), INV-2042 (open).",
    "Refunds(60 days), exchanges(30 days).",
    "It was $42.00.\n\nSources: get_charge(ch_2VzSg6), get_payments(INV-2041)",
    "Paid in full.\nSee: find_invoice(INV-2041)",
    "**42**, from the charge.",  # its emphasis kept
]


@pytest.mark.parametrize("answer", PROSE)
def test_prose_that_mentions_a_tool_is_the_answer(answer):
    r = parse(f"Answer: {answer}", tools=NAMES)
    assert (r.kind, r.answer) == ("final", answer)
    assert read_reply(answer, NAMES).answer == answer


@pytest.mark.parametrize(
    "action, expected",
    [
        ("Action: search［refund］", ("search", "refund")),
        ("Action: get_charge（ch_2VzSg6）", ("get_charge", "ch_2VzSg6")),
        ("Action：search［refund policy］", ("search", "refund policy")),
    ],
)
def test_full_width_brackets_on_an_action_line_are_read_as_a_call(action, expected):
    r = parse(action, tools=NAMES)
    assert (r.kind, r.tool, r.input) == ("action", *expected)


@pytest.mark.parametrize(
    "expression, expected",
    [("2 ** -100", 7.888609052e-31), ("1 / 3e12", 3.333333333e-13), ("0.1 + 0.2", 0.3)],
)
def test_calc_never_rounds_a_small_nonzero_result_to_zero(expression, expected):
    assert calc(expression) == expected


# ---- a native reply's text: a JSON record is an answer, a ReAct label alone is not ----------


@pytest.mark.parametrize(
    "record",
    [
        '{"status": "paid"}',
        '{"id": "ch_2VzSg6", "status": "failed", "failure_reason": "card_declined"}',
        '{"name": "Jane Doe", "email": "jane@example.com"}',
        '{"action": "refund issued", "date": "2026-07-09"}',
        '{"tool": "hammer", "price": 12}',
        '[{"name": "Jane Doe", "total": 129.0}, {"name": "Acme", "total": 4200}]',
        '```json\n{"paid": true}\n```',
    ],
)
def test_a_json_record_in_a_native_reply_is_the_answer(record):
    assert read_reply(record, declared(default_tools())).answer == record


@pytest.mark.parametrize(
    "text",
    [
        '{"invoice_id": "INV-2041"}',  # a declared tool's arguments, its name lost
        '{"name": "get_charge", "charge_id": "ch_2VzSg6"}',
        "Thought: I need the charge.",  # a ReAct label, no answer
        'Observation: {"payments": []}',
    ],
)
def test_arguments_or_a_react_label_in_a_native_reply_are_no_answer(text):
    reply = read_reply(text, declared(default_tools()))
    assert reply.answer is None and reply.saw


@pytest.mark.parametrize(
    "text",
    [
        "```\nAction: get_charge[ch_2VzSg6]\n```",  # the answer would be the fence left over
        '"<|im_start|>"',
        '{"name": "get_charge", "arguments": {"charge_id": "ch_2V',  # a call cut off
    ],
)
def test_a_fragment_or_a_cut_off_call_after_an_answer_label_is_no_answer(text):
    r = parse(f"Answer: {text}", tools=NAMES)
    assert r.kind != "final", r.answer


# ---- the text protocol, the tools' parameters known: arguments alone are no answer -------------


@pytest.mark.parametrize(
    "answer, tools",
    [
        ('{"charge_id": "ch_2VzSg6"}', "get_charge"),
        ('```json\n{"invoice_id": "INV-2041"}\n```', "find_invoice or get_payments"),
        ('[{"query": "refunds"}]', "search"),
    ],
)
def test_an_answer_that_is_a_tools_arguments_is_no_answer(answer, tools):
    r = parse(f"Answer: {answer}", tools=declared(default_tools()))
    assert r.kind == "error" and tools in r.reason, r
    assert "\n" not in r.reason
    # names alone say nothing of parameters: a record is the answer
    assert parse(f"Answer: {answer}", tools=NAMES).kind == "final"


def test_the_text_loop_refuses_an_answer_that_is_a_tools_arguments():
    model = ScriptedModel(['Answer: {"charge_id": "ch_2VzSg6"}', "Answer: It was declined."])
    result = ask("Why was ch_2VzSg6 declined?", model, default_tools())
    assert result.steps[0].answer is None and "get_charge" in result.steps[0].error
    assert result.answer == "It was declined."


@pytest.mark.parametrize(
    "text",
    [
        "get_charge -> ch_2VzSg6",
        'search query="late fee"',
        "list_invoices customer_id=cus_4417 since=2026-07-01",
        "name: get_charge\narguments:\n  charge_id: ch_2VzSg6",
        "- tool: get_charge\n  args: {charge_id: ch_2VzSg6}",
        '{"query": "late fee"}\nThat should tell us the amount.',
        '{"charge_id":\u00a0"ch_2VzSg6"}',
        "yes [/INST]",
    ],
)
def test_more_calls_and_markup_in_an_answer_are_no_answer(text):
    assert parse(f"Answer: {text}", tools=declared(default_tools())).kind == "error"
    assert read_reply(text, declared(default_tools())).answer is None


@pytest.mark.parametrize(
    "reply",
    [
        'Based on the tool results, {"status": "paid"}',
        'Here is the record: {"invoice_id": "INV-2041", "status": "paid", "amount": 42.0}',
        'Based on the tool results, {"name": "Acme Corp", "balance": 42.0}',
        'Summary:\n```json\n{"paid": true}\n```',
    ],
)
def test_prose_around_a_json_record_in_a_native_reply_is_the_answer(reply):
    assert read_reply(reply, declared(default_tools())).answer == reply


@pytest.mark.parametrize(
    "reply", ['Let me check.\nObservation: {"amount": 42}', "Let me check.\nAction Input: ch_1"]
)
def test_a_step_label_anywhere_in_a_native_reply_is_no_answer(reply):
    read = read_reply(reply, declared(default_tools()))
    assert read.answer is None and "ReAct label" in read.saw

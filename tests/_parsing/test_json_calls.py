"""Calls written outside the paper's brackets: JSON objects and call syntax, read by the parser.

Every member of each kind: the keys of a JSON call (kind 1), call syntax on the Action line
(kind 4), a JSON call under an answer label (kind 5), cut-off objects (kind 6), JSON past
prose, a lone wrapper around the arguments, and Python's own warnings (none printed).
:mod:`react_lab._parsing.calls` and :mod:`react_lab._parsing.other` read them.
"""

import pytest
from helpers.parsing_checks import BERLIN, TOOLS, W, one_line_reason

from react_lab._parsing.calls import INPUT_KEYS, NAME_KEYS
from react_lab.lab.agent.parser import parse

# ---- kind 1: the keys of a JSON call ------------------------------------------------------

PAIRS = [
    ("action", "action_input"),
    ("tool", "tool_input"),
    ("tool_name", "tool_input"),
    ("tool_name", "tool_args"),
    ("function", "arguments"),
    ("function_name", "function_arguments"),
    ("function", "function_args"),
    ("action_name", "action_args"),
    ("name", "arguments"),
    ("name", "parameters"),
    ("name", "args"),
    ("name", "input"),
    ("name", "params"),
    ("toolName", "toolInput"),
    ("functionName", "arguments"),
    ("Tool-Name", "Tool-Input"),
    ("TOOL_NAME", "TOOL_INPUT"),
]


@pytest.mark.parametrize("name_key,input_key", PAIRS)
def test_every_spelling_of_the_name_and_input_keys_is_read(name_key, input_key):
    text = f'{{"{name_key}": "search", "{input_key}": {{"query": "refund policy"}}}}'
    for shown in (
        text,
        f"Action:\n{text}",
        f"```json\n{text}\n```",
        f"[{text}]",
        f"<tool_call>\n{text}\n</tool_call>",
    ):
        r = parse(shown, tools=TOOLS)
        assert (r.kind, r.tool, r.input) == ("action", "search", {"query": "refund policy"}), shown


def test_the_name_and_input_key_lists_agree():
    # every prefix that names a tool also holds its input, and the other way round
    prefixes = {k.split("_")[0] for k in NAME_KEYS if k != "name"}
    assert (
        prefixes
        == {k.split("_")[0] for k in INPUT_KEYS if "_" in k}
        == {"action", "tool", "function"}
    )
    for prefix in prefixes:
        assert {prefix, f"{prefix}_name"} <= set(NAME_KEYS)
        assert {f"{prefix}_input", f"{prefix}_args", f"{prefix}_arguments"} <= set(INPUT_KEYS)
    assert "name" in NAME_KEYS and {"arguments", "args", "input", "parameters"} <= set(INPUT_KEYS)


@pytest.mark.parametrize(
    "text",
    [
        '{"id": "call_1", "type": "function", "function": '
        '{"name": "search", "arguments": "{\\"query\\": \\"x\\"}"}}',
        '{"thought": "I search.", "tool_calls": [{"name": "search", "arguments": {"query": "x"}}]}',
        '{"method": "tools/call", "params": {"name": "search", "arguments": {"query": "x"}}}',
        '{"tool_call": {"tool_name": "search", "tool_input": {"query": "x"}}}',
    ],
)
def test_a_call_wrapped_in_another_format_is_read_from_the_inside(text):
    # OpenAI's tool_calls item, the native reply shape, an MCP request, a wrapper key
    r = parse(text, tools=TOOLS)
    assert (r.kind, r.tool, r.input) == ("action", "search", {"query": "x"})


def test_input_sent_as_a_json_string_is_decoded():
    r = parse('{"tool_name": "search", "tool_input": "{\\"query\\": \\"x\\"}"}')
    assert (r.kind, r.tool, r.input) == ("action", "search", {"query": "x"})


def test_a_key_named_like_a_name_key_inside_the_arguments_is_not_the_tool():
    r = parse('{"name": "search", "arguments": {"tool": "hammer", "action": "turn_off"}}')
    assert (r.tool, r.input) == ("search", {"tool": "hammer", "action": "turn_off"})


@pytest.mark.parametrize(
    "text,keys",
    [
        ('{"command": "search", "payload": {"query": "x"}}', ["'command'"]),
        (
            '{"recipient_name": "functions.search", "parameters": {"query": "x"}}',
            ["'recipient_name'"],
        ),
        ('{"tool_id": "search", "query": "x"}', ["'tool_id'"]),
        ('{"call": "search", "with": {"query": "x"}}', ["'call'"]),
    ],
)
def test_a_call_written_with_unknown_name_keys_is_an_error_naming_them(text, keys):
    reason = one_line_reason(parse(text))
    assert "does not read" in reason and all(k in reason for k in keys)
    assert "tool_name" in reason and '"action_input"' in reason  # what to write instead


@pytest.mark.parametrize(
    "text,keys",
    [
        ('{"tool": "search", "query": "x"}', ["'query'"]),
        (
            '{"action": "list_invoices", "customer_id": "cus_8812", "since": "2026-07-01"}',
            ["'customer_id'", "'since'"],
        ),
    ],
)
def test_a_call_with_its_input_under_unknown_keys_is_an_error_naming_them(text, keys):
    r = parse(text, tools=TOOLS)
    reason = one_line_reason(r)
    assert all(k in reason for k in keys) and '"action_input"' in reason
    assert r.tool in reason


def test_a_tool_name_that_is_not_a_string_is_an_error():
    assert "not a string" in one_line_reason(parse('{"name": null, "arguments": {}}'))
    assert "not a string" in one_line_reason(parse('{"tool": 42, "tool_input": "x"}'))


def test_a_call_key_wins_over_a_data_object_before_it():
    r = parse(
        '{"customer": "cus_8812"}\n{"tool_name": "get_charge", "tool_input": {"charge_id": "ch_1"}}'
    )
    assert (r.kind, r.tool) == ("action", "get_charge")


def test_the_other_leaked_shapes_of_the_report_are_read_or_refused():
    # 1CatAI/1Cat-vLLM#26 showed three shapes; the JSON list is read, the private "nc://" line
    # names its tool outside any JSON key: an error, never a dispatch.
    r = parse(
        '[{"name":"searxng_search","arguments":{"query":"2026年5月6日 今日新闻"}}]',
        tools=["searxng_search"],
    )
    assert (r.kind, r.tool, r.input) == (
        "action",
        "searxng_search",
        {"query": "2026年5月6日 今日新闻"},
    )
    r = parse(
        '--- CALL --- nc://searxng_search {"query":"2026年5月6日 今日新闻","language":"zh",'
        '"max_results":8}',
        tools=["searxng_search"],
    )
    assert r.kind == "error" and r.tool is None and "Action:" in one_line_reason(r)


# ---- kind 2 lives in tests/test_argument_kinds.py (the argument rule) -----------------------

# ---- kind 4: call syntax on the Action line ---------------------------------------------------


@pytest.mark.parametrize(
    "line,tool,inp",
    [
        ('search("refund policy")', "search", "refund policy"),
        ('search ("refund policy")', "search", "refund policy"),
        ("search('refund policy')", "search", "refund policy"),
        ('`search("refund policy")`', "search", "refund policy"),
        ('**search("refund policy")**', "search", "refund policy"),
        ("search(refund policy)", "search", "refund policy"),
        ('search({"query": "refund policy"})', "search", {"query": "refund policy"}),
        ('search ({"query": "refund policy"})', "search", {"query": "refund policy"}),
        ('search(query="refund policy")', "search", {"query": "refund policy"}),
        ("search(query='refund policy')", "search", {"query": "refund policy"}),
        ('list_invoices("cus_8812", "2026-07-01")', "list_invoices", ["cus_8812", "2026-07-01"]),
        (
            'search("refund, late fee")',
            "search",
            ["refund, late fee"],
        ),  # one value, its comma in it
        (
            'list_invoices(customer_id="cus_8812", since="2026-07-01")',
            "list_invoices",
            {"customer_id": "cus_8812", "since": "2026-07-01"},
        ),
        ("calc((129 + 45) * 2)", "calc", "(129 + 45) * 2"),
        ('search("f(x) and g(y)") then read it', "search", "f(x) and g(y)"),
        ('search("refund policy"', "search", "refund policy"),  # cut off before ")"
        ("get_charge()", "get_charge", ""),
    ],
)
def test_call_syntax_on_the_action_line_is_read_as_a_call(line, tool, inp):
    r = parse(f"Thought: look it up\nAction: {line}", tools=TOOLS)
    assert (r.kind, r.tool, r.input, r.dialect) == ("action", tool, inp, "call")


def test_call_syntax_with_a_json_object_over_several_lines():
    r = parse(
        'Action: search({\n  "query": "refund policy"\n})\nThought: then read it', tools=TOOLS
    )
    assert (r.kind, r.tool, r.input) == ("action", "search", {"query": "refund policy"})
    assert r.kept.endswith("})")


def test_call_syntax_positional_arguments_dispatch_like_brackets():
    r = parse('Action: list_invoices("cus_8812", "2026-07-01")')
    assert (
        r.args
        == ["cus_8812", "2026-07-01"]
        == parse("Action: list_invoices[cus_8812, 2026-07-01]").args
    )


def test_call_syntax_is_never_evaluated():
    r = parse("Action: calc(__import__('os').system('echo pwned'))")
    # text, not run
    assert r.kind == "action" and r.input == "__import__('os').system('echo pwned')"


@pytest.mark.parametrize(
    "line", ['list_invoices("cus_8812", since="2026-07-01")', 'search({"query": "refund']
)
def test_call_syntax_that_cannot_be_read_is_an_error_showing_the_form(line):
    r = parse(f"Action: {line}", tools=TOOLS)
    reason = one_line_reason(r)
    assert r.tool in ("list_invoices", "search") and f"'Action: {r.tool}[" in reason


# ---- kind 5: a JSON call under an answer label ----------------------------------------------

ANSWER_LABELS = [
    "Answer:",
    "Final Answer:",
    "**Final Answer:**",
    "Answer 2:",
    "final answer:",
    "Final Answer\uff1a",
    "> Answer:",
]
CALLS = [
    '{"action": "search", "action_input": {"query": "x"}}',
    '{"name": "search", "arguments": {"query": "x"}}',
    '{"tool_name": "search", "tool_input": {"query": "x"}}',
    '```json\n{"function": "search", "arguments": {"query": "x"}}\n```',
    '<tool_call>\n{"name": "search", "arguments": {"query": "x"}}\n</tool_call>',
    '[{"name": "search", "arguments": {"query": "x"}}]',
    "{'action': 'search', 'action_input': {'query': 'x'}}",
]


@pytest.mark.parametrize("label", ANSWER_LABELS)
@pytest.mark.parametrize("call", CALLS)
def test_a_json_call_under_an_answer_label_is_the_call(label, call):
    r = parse(f"Thought: I should search.\n{label} {call}", tools=TOOLS)
    assert (r.kind, r.tool, r.input) == ("action", "search", {"query": "x"})


def test_a_finish_call_under_an_answer_label_is_the_answer():
    r = parse('Final Answer: {"action": "Final Answer", "action_input": "INV-2088"}')
    assert (r.kind, r.answer) == ("final", "INV-2088")


def test_a_call_to_an_unknown_tool_under_an_answer_label_is_an_unknown_tool():
    r = parse('Answer: {"action": "web_search", "action_input": "x"}', tools=TOOLS)
    assert r.kind == "error" and "unknown tool 'web_search'" in r.reason


@pytest.mark.parametrize(
    "answer",
    [
        '{"total": 4200, "status": "paid"}',
        '{"name": "Acme Corp", "total": 4200}',  # a record with a name is not a call
        'The call {"action": "search"} was not needed.',  # JSON inside prose
        '{"command": "refund", "invoice": "INV-2041"}',  # data, not a call: answers stay answers
    ],
)
def test_json_that_is_not_a_call_stays_the_answer(answer):
    r = parse(f"Answer: {answer}", tools=TOOLS)
    assert (r.kind, r.answer) == ("final", answer)


# ---- kind 6: what the model is told, for cut-off objects and markup -----------------------------


@pytest.mark.parametrize(
    "text,words",
    [
        (
            'Action: {"action": "search", "action_input": {"query": "x"',
            ["cut off", "Action: search["],
        ),
        ('Action: search\nAction Input: {"query": "refund', ["cut off", "Action: search["]),
        ('{"name": "search", "arguments": {"query": "refund', ["cut off", "Action: search["]),
        (
            '```json\n{"tool_name": "get_charge", "tool_input": {"charge_id": "ch_1',
            ["cut off", "Action: get_charge["],
        ),
        ('<tool_call>{"foo": 1}</tool_call>', ["markup", "Action: tool_name["]),
        ('Action: {"query": "refund policy"}', ["names no tool", "'query'", '"action_input"']),
    ],
)
def test_a_message_says_what_happened_and_what_to_write(text, words):
    r = parse(text, tools=TOOLS)
    reason = one_line_reason(r)
    assert all(w in reason for w in words), reason
    assert "Expecting" not in reason  # no decoder jargon


def test_a_cut_off_call_is_never_dispatched_as_text():
    r = parse('Action: search\nAction Input: {"query": "refund', tools=TOOLS)
    assert r.kind == "error" and r.input is None


def test_an_action_input_object_that_is_closed_is_still_read():
    r = parse('Action: search\nAction Input: {"query": "refund"}', tools=TOOLS)
    assert (r.kind, r.input) == ("action", {"query": "refund"})


# ---- JSON calls past prose, and many labels -----------------------------------------------


def test_an_action_after_many_bare_action_lines_is_still_found():
    text = "Action:\n" * 5_000 + '{"action": "search", "action_input": "refunds"}'
    r = parse(text)
    assert (r.kind, r.tool, r.input) == ("action", "search", "refunds")


@pytest.mark.parametrize(
    "text",
    [
        'Action:\n{I don\'t know yet}\n{"action": "search", "action_input": "refunds"}',
        'Action:\n{"oops\n{"action": "search", "action_input": "refunds"}',
        'I think {maybe\n{"action": "search", "action_input": "refunds"}',
        '{"tool_call": {"action": "search", "action_input": "refunds"}}',
    ],
)
def test_json_action_found_past_prose_braces_and_stray_quotes(text):
    r = parse(text)
    assert (r.kind, r.tool, r.input) == ("action", "search", "refunds")


# ---- a lone wrapper around the arguments, in call syntax ----------------------------------


@pytest.mark.parametrize(
    "line",
    [
        'get_weather(properties={"city": "Berlin"})',
        'get_weather(parameters={"city": "Berlin"})',
        'get_weather(arguments={"city": "Berlin"})',
        'get_weather(args={"city": "Berlin"})',
        'get_weather(kwargs={"city": "Berlin"})',
        'get_weather(**{"city": "Berlin"})',
        'get_weather({"properties": {"city": "Berlin"}})',
        'get_weather(city="Berlin")',
        '[get_weather(properties={"city": "Berlin"})]',
        '<|tool_call_start|>[get_weather(parameters={"city": "Berlin"})]<|tool_call_end|>',
    ],
)
def test_a_lone_wrapper_is_unwrapped_and_the_real_arguments_kept(line):
    for text in (line, f"Action: {line}"):
        r = parse(text, tools=W)
        assert (r.kind, r.tool, r.input) == ("action", "get_weather", BERLIN), text


@pytest.mark.parametrize(
    "line,inp",
    [
        ('get_weather(properties="Berlin")', {"properties": "Berlin"}),  # not an object: a value
        # not alone
        ('get_weather(properties={"city": "Berlin"}, days=3)', {"properties": BERLIN, "days": 3}),
        (
            'get_weather(city="Berlin", metric=true, note=null)',
            {"city": "Berlin", "metric": True, "note": None},
        ),
    ],
)
def test_a_wrapper_that_is_not_alone_or_holds_no_object_is_kept(line, inp):
    r = parse(f"Action: {line}", tools=W)
    assert (r.kind, r.tool, r.input) == ("action", "get_weather", inp)


# ---- Python's own warnings, invisible answers, a label after the answer label ------------------


@pytest.mark.parametrize(
    "text",
    [
        "Action: calc(1if 1else 2)",
        'Action: search("\\d")',
        'Action: [search(query="\\d", n=1if 1else 2)]',
        "Action: search[{'q': '\\d', 'n': 0x1for}]",
        'search(query="\\d")',
        "Action: search\nAction Input: {'q': '\\d'}",
    ],
)
def test_reading_odd_call_syntax_prints_no_python_warning(text):
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parse(text, tools=TOOLS)
    assert [str(w.message) for w in caught] == []


def test_calc_on_odd_syntax_prints_no_python_warning():
    import warnings

    from react_lab.tools import call_tool, default_tools

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        obs = call_tool(default_tools(), "calc", ["1if 1else 2"])
    assert obs.error and [str(w.message) for w in caught] == []

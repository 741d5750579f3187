"""The tolerant parser, one fault *kind* at a time (issue 17): each public case's other members.

The public cases (tests/test_public_cases.py) are one instance each. Here every kind gets
the other members we could find or write out: other key spellings, other call syntaxes,
other answer labels, other cut-off and markup shapes, other label spellings.
"""
import re

import pytest

from react_lab._calls import INPUT_KEYS, NAME_KEYS
from react_lab.parser import find_forged, parse

TOOLS = ["search", "calc", "list_invoices", "get_charge"]
LINE_BREAKS = re.compile(r"[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]")


def _one_line_reason(r):
    assert r.kind == "error" and r.reason, r
    assert not LINE_BREAKS.search(r.reason), r.reason
    assert len(r.reason) <= 400, r.reason
    return r.reason


# ---- kind 1: the keys of a JSON call ------------------------------------------------------

PAIRS = [("action", "action_input"), ("tool", "tool_input"), ("tool_name", "tool_input"),
         ("tool_name", "tool_args"), ("function", "arguments"), ("function_name", "function_arguments"),
         ("function", "function_args"), ("action_name", "action_args"), ("name", "arguments"),
         ("name", "parameters"), ("name", "args"), ("name", "input"), ("name", "params"),
         ("toolName", "toolInput"), ("functionName", "arguments"), ("Tool-Name", "Tool-Input"),
         ("TOOL_NAME", "TOOL_INPUT")]


@pytest.mark.parametrize("name_key,input_key", PAIRS)
def test_every_spelling_of_the_name_and_input_keys_is_read(name_key, input_key):
    text = f'{{"{name_key}": "search", "{input_key}": {{"query": "refund policy"}}}}'
    for shown in (text, f"Action:\n{text}", f"```json\n{text}\n```", f"[{text}]",
                  f"<tool_call>\n{text}\n</tool_call>"):
        r = parse(shown, tools=TOOLS)
        assert (r.kind, r.tool, r.input) == ("action", "search", {"query": "refund policy"}), shown


def test_the_name_and_input_key_lists_agree():
    # every prefix that names a tool also holds its input, and the other way round
    prefixes = {k.split("_")[0] for k in NAME_KEYS if k != "name"}
    assert prefixes == {k.split("_")[0] for k in INPUT_KEYS if "_" in k} == {"action", "tool", "function"}
    for prefix in prefixes:
        assert {prefix, f"{prefix}_name"} <= set(NAME_KEYS)
        assert {f"{prefix}_input", f"{prefix}_args", f"{prefix}_arguments"} <= set(INPUT_KEYS)
    assert "name" in NAME_KEYS and {"arguments", "args", "input", "parameters"} <= set(INPUT_KEYS)


@pytest.mark.parametrize("text", [
    '{"id": "call_1", "type": "function", "function": {"name": "search", "arguments": "{\\"query\\": \\"x\\"}"}}',
    '{"thought": "I search.", "tool_calls": [{"name": "search", "arguments": {"query": "x"}}]}',
    '{"method": "tools/call", "params": {"name": "search", "arguments": {"query": "x"}}}',
    '{"tool_call": {"tool_name": "search", "tool_input": {"query": "x"}}}',
])
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


@pytest.mark.parametrize("text,keys", [
    ('{"command": "search", "payload": {"query": "x"}}', ["'command'"]),
    ('{"recipient_name": "functions.search", "parameters": {"query": "x"}}', ["'recipient_name'"]),
    ('{"tool_id": "search", "query": "x"}', ["'tool_id'"]),
    ('{"call": "search", "with": {"query": "x"}}', ["'call'"]),
])
def test_a_call_written_with_unknown_name_keys_is_an_error_naming_them(text, keys):
    reason = _one_line_reason(parse(text))
    assert "does not read" in reason and all(k in reason for k in keys)
    assert "tool_name" in reason and '"action_input"' in reason  # what to write instead


@pytest.mark.parametrize("text,keys", [
    ('{"tool": "search", "query": "x"}', ["'query'"]),
    ('{"action": "list_invoices", "customer_id": "cus_8812", "since": "2026-07-01"}',
     ["'customer_id'", "'since'"]),
])
def test_a_call_with_its_input_under_unknown_keys_is_an_error_naming_them(text, keys):
    r = parse(text, tools=TOOLS)
    reason = _one_line_reason(r)
    assert all(k in reason for k in keys) and '"action_input"' in reason
    assert r.tool in reason


def test_a_tool_name_that_is_not_a_string_is_an_error():
    assert "not a string" in _one_line_reason(parse('{"name": null, "arguments": {}}'))
    assert "not a string" in _one_line_reason(parse('{"tool": 42, "tool_input": "x"}'))


def test_a_call_key_wins_over_a_data_object_before_it():
    r = parse('{"customer": "cus_8812"}\n{"tool_name": "get_charge", "tool_input": {"charge_id": "ch_1"}}')
    assert (r.kind, r.tool) == ("action", "get_charge")


def test_the_other_leaked_shapes_of_the_report_are_read_or_refused():
    # 1CatAI/1Cat-vLLM#26 showed three shapes; the JSON list is read, the private "nc://" line
    # names its tool outside any JSON key: an error, never a dispatch.
    r = parse('[{"name":"searxng_search","arguments":{"query":"2026年5月6日 今日新闻"}}]',
              tools=["searxng_search"])
    assert (r.kind, r.tool, r.input) == ("action", "searxng_search", {"query": "2026年5月6日 今日新闻"})
    r = parse('--- CALL --- nc://searxng_search {"query":"2026年5月6日 今日新闻","language":"zh",'
              '"max_results":8}', tools=["searxng_search"])
    assert r.kind == "error" and r.tool is None and "Action:" in _one_line_reason(r)


# ---- kind 2 lives in tests/test_argument_kinds.py (the argument rule) -----------------------

# ---- kind 4: call syntax on the Action line ---------------------------------------------------

@pytest.mark.parametrize("line,tool,inp", [
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
    ('list_invoices("cus_8812", "2026-07-01")', "list_invoices", "cus_8812, 2026-07-01"),
    ('list_invoices(customer_id="cus_8812", since="2026-07-01")', "list_invoices",
     {"customer_id": "cus_8812", "since": "2026-07-01"}),
    ("calc((129 + 45) * 2)", "calc", "(129 + 45) * 2"),
    ('search("f(x) and g(y)") then read it', "search", "f(x) and g(y)"),
    ('search("refund policy"', "search", "refund policy"),  # cut off before ")"
    ("get_charge()", "get_charge", ""),
])
def test_call_syntax_on_the_action_line_is_read_as_a_call(line, tool, inp):
    r = parse(f"Thought: look it up\nAction: {line}", tools=TOOLS)
    assert (r.kind, r.tool, r.input, r.dialect) == ("action", tool, inp, "call")


def test_call_syntax_with_a_json_object_over_several_lines():
    r = parse('Action: search({\n  "query": "refund policy"\n})\nThought: then read it', tools=TOOLS)
    assert (r.kind, r.tool, r.input) == ("action", "search", {"query": "refund policy"})
    assert r.kept.endswith("})")


def test_call_syntax_positional_arguments_dispatch_like_brackets():
    r = parse('Action: list_invoices("cus_8812", "2026-07-01")')
    assert r.args == ["cus_8812", "2026-07-01"] == parse("Action: list_invoices[cus_8812, 2026-07-01]").args


def test_call_syntax_is_never_evaluated():
    r = parse("Action: calc(__import__('os').system('echo pwned'))")
    assert r.kind == "action" and r.input == "__import__('os').system('echo pwned')"  # text, not run


@pytest.mark.parametrize("line", ['list_invoices("cus_8812", since="2026-07-01")',
                                  'search({"query": "refund'])
def test_call_syntax_that_cannot_be_read_is_an_error_showing_the_form(line):
    r = parse(f"Action: {line}", tools=TOOLS)
    reason = _one_line_reason(r)
    assert r.tool in ("list_invoices", "search") and f"'Action: {r.tool}[" in reason


@pytest.mark.parametrize("line,hint", [
    ("search for refunds.", "Action: search["),
    ("search: refund policy", "Action: search["),
    ("search, then calc", "Action: search["),
    ("search/refunds", "Action: search["),
    ("I will search the help articles", "Action: tool_name["),
    ('"search the articles for refunds"?', "Action: search["),
    ("<function=search>", "Action: search["),
    ("get_charge → ch_1KZq8f", "Action: get_charge["),
])
def test_a_name_that_is_not_an_identifier_is_never_dispatched(line, hint):
    r = parse(f"Action: {line}", tools=TOOLS)
    assert hint in _one_line_reason(r)
    if not line.startswith("I will"):  # without a tool list, plain words are a name
        assert "Action: " in _one_line_reason(parse(f"Action: {line}"))


def test_names_with_spaces_are_taken_only_as_written():
    # frameworks name tools "Google Search"; such a name is a name, and must match exactly
    assert parse("Action: Google Search\nAction Input: x").tool == "Google Search"
    r = parse("Action: Google Search\nAction Input: x", tools=["Google Search"])
    assert (r.kind, r.tool) == ("action", "Google Search")
    r = parse("Action: search refund policy", tools=TOOLS)
    assert r.kind == "error" and "'Action: search[...]'" in r.reason


# ---- kind 5: a JSON call under an answer label ----------------------------------------------

ANSWER_LABELS = ["Answer:", "Final Answer:", "**Final Answer:**", "Answer 2:", "final answer:",
                 "Final Answer\uff1a", "> Answer:"]
CALLS = ['{"action": "search", "action_input": {"query": "x"}}',
         '{"name": "search", "arguments": {"query": "x"}}',
         '{"tool_name": "search", "tool_input": {"query": "x"}}',
         '```json\n{"function": "search", "arguments": {"query": "x"}}\n```',
         '<tool_call>\n{"name": "search", "arguments": {"query": "x"}}\n</tool_call>',
         '[{"name": "search", "arguments": {"query": "x"}}]',
         "{'action': 'search', 'action_input': {'query': 'x'}}"]


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


@pytest.mark.parametrize("answer", [
    '{"total": 4200, "status": "paid"}',
    '{"name": "Acme Corp", "total": 4200}',           # a record with a name is not a call
    'The call {"action": "search"} was not needed.',  # JSON inside prose
    '{"command": "refund", "invoice": "INV-2041"}',   # data, not a call: answers stay answers
])
def test_json_that_is_not_a_call_stays_the_answer(answer):
    r = parse(f"Answer: {answer}", tools=TOOLS)
    assert (r.kind, r.answer) == ("final", answer)


# ---- kind 6: what the model is told, for cut-off objects and markup -----------------------------

@pytest.mark.parametrize("text,words", [
    ('Action: {"action": "search", "action_input": {"query": "x"', ["cut off", "Action: search["]),
    ('Action: search\nAction Input: {"query": "refund', ["cut off", "Action: search["]),
    ('{"name": "search", "arguments": {"query": "refund', ["cut off", "Action: search["]),
    ('```json\n{"tool_name": "get_charge", "tool_input": {"charge_id": "ch_1', ["cut off", "Action: get_charge["]),
    ("<function=search>\n<parameter=query>\nrefunds\n</parameter>\n</function>",
     ["markup", "Action: search["]),
    ('<invoke name="search"><parameter name="query">x</parameter></invoke>', ["markup", "Action: search["]),
    ('<tool_call>{"foo": 1}</tool_call>', ["markup", "Action: tool_name["]),
    ('Action: {"query": "refund policy"}', ["names no tool", "'query'", '"action_input"']),
])
def test_a_message_says_what_happened_and_what_to_write(text, words):
    r = parse(text, tools=TOOLS)
    reason = _one_line_reason(r)
    assert all(w in reason for w in words), reason
    assert "Expecting" not in reason  # no decoder jargon


def test_a_cut_off_call_is_never_dispatched_as_text():
    r = parse('Action: search\nAction Input: {"query": "refund', tools=TOOLS)
    assert r.kind == "error" and r.input is None


def test_an_action_input_object_that_is_closed_is_still_read():
    r = parse('Action: search\nAction Input: {"query": "refund"}', tools=TOOLS)
    assert (r.kind, r.input) == ("action", {"query": "refund"})


# ---- kind 7: the gaps with no public sample yet ------------------------------------------------

@pytest.mark.parametrize("text,tool,inp", [
    ("action: search[refunds]", "search", "refunds"),
    ("ACTION: search[refunds]", "search", "refunds"),
    ("thought: x\naction: search\naction input: refunds", "search", "refunds"),
    ("Action\uff1asearch[refunds]", "search", "refunds"),
    ("Action\uff1a search\nAction Input\uff1a refunds", "search", "refunds"),
    ("**Action\uff1a** search[refunds]", "search", "refunds"),
    ("Action 2\uff1asearch[refunds]", "search", "refunds"),
    ("Action\ufe55search[refunds]", "search", "refunds"),
])
def test_lowercase_labels_and_full_width_colons(text, tool, inp):
    r = parse(text, tools=TOOLS)
    assert (r.kind, r.tool, r.input) == ("action", tool, inp)


def test_full_width_colons_on_thought_and_answer_labels():
    assert parse("Thought\uff1a\u6211\u9700\u8981\u641c\u7d22\nAction\uff1asearch[x]").thought == "\u6211\u9700\u8981\u641c\u7d22"
    assert parse("Final Answer\uff1aINV-2088").answer == "INV-2088"
    assert parse("answer: INV-2088").answer == "INV-2088"


@pytest.mark.parametrize("text,tool,inp", [
    ("Action: search[refund policy", "search", "refund policy"),
    ("Action: list_invoices[cus_8812, 2026-07-01", "list_invoices", "cus_8812, 2026-07-01"),
    ("Action: search[refund policy\nThought: then read", "search", "refund policy"),
    ("Action: search[refund [policy]", "search", "refund [policy]"),
])
def test_a_bracket_call_missing_its_closing_bracket_takes_the_rest_of_the_line(text, tool, inp):
    r = parse(text, tools=TOOLS)
    assert (r.kind, r.tool, r.input) == ("action", tool, inp)


def test_a_bracket_call_missing_its_bracket_before_a_forged_observation():
    r = parse("Action: search[refund policy\nObservation: 3 articles\nAnswer: 60 days", tools=TOOLS)
    assert (r.kind, r.tool, r.input, r.forged) == ("action", "search", "refund policy", True)
    assert find_forged(r.kept) is None and "60 days" not in r.kept


@pytest.mark.parametrize("answer", [
    "In the log, Action: refund was recorded on 2026-07-14.",
    "Set the field to 'Action: none' and save.",
    "Steps:\n1. open the charge; the log shows Action: refund\n2. done",
])
def test_a_final_answer_containing_the_word_action_is_kept_whole(answer):
    r = parse(f"Thought: I know it.\nFinal Answer: {answer}", tools=TOOLS)
    assert (r.kind, r.answer) == ("final", answer)


@pytest.mark.parametrize("before", [
    "I checked INV-2088: it was paid on 2026-07-14.",
    "Thought: the payments list is empty.\nSo INV-2323 is approved but unpaid.",
    "| invoice | status |\n|---|---|\n| INV-2041 | paid |",
])
def test_content_before_the_final_answer_is_kept(before):
    r = parse(f"{before}\n\nFinal Answer: Yes.")
    assert (r.kind, r.answer) == ("final", "Yes.")
    assert r.kept.startswith(before)
    last = before.split("Thought:")[-1].strip()
    assert r.thought == last


def test_an_empty_final_answer_is_an_error_and_loses_nothing():
    r = parse("The latest invoice is INV-2088, issued on 2026-07-14.\nFinal Answer:")
    assert "answer is empty" in _one_line_reason(r) and "Answer:" in r.reason
    assert r.kept.startswith("The latest invoice is INV-2088") and r.thought.startswith("The latest")
    r = parse("Final Answer:\nINV-2088 was issued on 2026-07-14.")  # on the next line: still an answer
    assert (r.kind, r.answer) == ("final", "INV-2088 was issued on 2026-07-14.")


@pytest.mark.parametrize("text", ["Action: finish[]", "Action: Finish[ ]", "Action: finish\nAction Input: ",
                                  '{"action": "Final Answer", "action_input": ""}', "Answer:   "])
def test_every_empty_answer_form_is_the_same_error(text):
    r = parse(text)
    assert (r.kind, r.answer) == ("error", None) and "answer is empty" in _one_line_reason(r)


@pytest.mark.parametrize("name", ["serch" * 5000, "a" * 100_000, "\ufeff" * 3000 + "x"])
def test_a_huge_tool_name_still_gives_one_short_line(name):
    for text in (f"Action: {name}[x]", f"Action: {name}\nAction Input: x", f'{{"tool": "{name}"}}'):
        r = parse(text, tools=TOOLS)
        assert len(_one_line_reason(r)) <= 400 and "available: search" in r.reason
    for text in (f'Action: {name}("a", b="c")', f'Action: {name}({{"query": "x"'):
        assert len(_one_line_reason(parse(text, tools=TOOLS))) <= 400

"""The tolerant parser, one fault *kind* at a time, every member of each kind we could find.

The public cases (tests/test_public_cases.py) are one instance each. Here every kind gets
its other members: label spellings, key spellings, call syntaxes, answer labels, cut-off
and markup shapes, forged-observation spellings, and other models' native call formats
(Harmony, DeepSeek, Kimi, Mistral, Gemma, Qwen, GLM, Llama, ...), with the refusals the
parser gives when a completion holds no call it can run. Properties over random text and
the time bounds are tests/test_fuzz.py.
"""
import re

import pytest

from react_lab._parsing.calls import INPUT_KEYS, NAME_KEYS
from react_lab.parser import find_forged, parse, settled_forgery, trim_partial_stop

TOOLS = ["search", "calc", "list_invoices", "get_charge"]
LINE_BREAKS = re.compile(r"[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]")
GENERIC = "no action and no answer found"


def _one_line_reason(r):
    assert r.kind == "error" and r.reason, r
    assert not LINE_BREAKS.search(r.reason), r.reason
    assert len(r.reason) <= 400, r.reason
    return r.reason


# ---- labels: drift in the paper's own format ---------------------------------------------

@pytest.mark.parametrize("tail", ["\nO", "\nObs", "\nObserv", "\nObservation", "\n  Observ"])
def test_partial_stop_word_is_trimmed_whatever_its_length(tail):
    r = parse(f"Thought: x\nAction: search\nAction Input: refunds{tail}")
    assert (r.kind, r.tool, r.input) == ("action", "search", "refunds")


@pytest.mark.parametrize("label", ["Observation:", "Observation 3:", "  Observation:", "**Observation:**",
                                   "observation:"])
def test_any_model_written_observation_is_dropped(label):
    r = parse(f"Action: get_charge[ch_1KZq8f]\n{label} {{\"status\": \"refunded\"}}\nAnswer: refunded")
    assert (r.kind, r.tool, r.input, r.forged) == ("action", "get_charge", "ch_1KZq8f", True)
    assert "refunded" not in r.kept


@pytest.mark.parametrize("text,tool,inp", [
    ("Action 1: search[refund policy]", "search", "refund policy"),
    ("Action 12: search\nAction 12 Input: refund policy", "search", "refund policy"),
    ("   Action: search[refund policy]   and then I will read it", "search", "refund policy"),
    ("Action: list_invoices[cus_8812, 2026-07-01] # July", "list_invoices", "cus_8812, 2026-07-01"),
    ("**Action:** search[x]", "search", "x"),
    ("Action: Google Search\n\n\nAction Input: 'q'", "Google Search", "q"),
    ("\ufeffAction: search[x]", "search", "x"),  # a byte-order mark before the label
    ("\u200b\u2060Action: search[x]", "search", "x"),  # zero-width characters before it
])
def test_label_drift(text, tool, inp):
    r = parse(text)
    assert (r.kind, r.tool, r.input) == ("action", tool, inp)


@pytest.mark.parametrize("raw,expected", [
    ('"a b"', "a b"), ("'a b'", "a b"), ('"a" and "b"', '"a" and "b"'),
    ('say "hi"', 'say "hi"'), ("'it''s'", "'it''s'"), ('"', '"'),
    ("\u201ca b\u201d", "a b"), ("\u2018a b\u2019", "a b"),  # typographic quotes, as a pair
    ('"a b', "a b"), ("\u201ca b", "a b"),  # an opening quote never closed (a cut-off line)
])
def test_quotes_stripped_only_when_one_pair_wraps_everything(raw, expected):
    assert parse(f"Action: echo\nAction Input: {raw}").input == expected


@pytest.mark.parametrize("blob", [
    '{"action": "get_charge", "action_input": {"charge_id": "ch_1"}}',
    '```json\n{"action": "get_charge", "action_input": {"charge_id": "ch_1"}}\n```',
    '```\n{"action": "get_charge",\n "action_input": {"charge_id": "ch_1"}}',
    "{'action': 'get_charge', 'action_input': {'charge_id': 'ch_1'}}",
    'Action:\n{"action": "get_charge", "action_input": "{\\"charge_id\\": \\"ch_1\\"}"}',
])
def test_json_action_blobs(blob):
    r = parse(blob)
    assert (r.kind, r.tool, r.input) == ("action", "get_charge", {"charge_id": "ch_1"})


def test_python_literal_is_never_evaluated():
    r = parse("Action: calc\nAction Input: {'x': __import__('os').system('echo pwned')}")
    assert r.kind == "action" and isinstance(r.input, str)  # left as text, not run


def test_json_value_found_by_balance_not_by_line():
    r = parse('Action: run\nAction Input: {"code": "f(\'}\')", "n": {"k": [1, 2]}}\nThought: ok')
    assert r.input == {"code": "f('}')", "n": {"k": [1, 2]}}


@pytest.mark.parametrize("word", ["None", "none", "N/A", "null", "No tool"])
def test_no_tool_words_are_errors_not_calls(word):
    r = parse(f"Action: {word}\nAction Input: {word}")
    assert r.kind == "error" and "not an available tool" in r.reason


def test_first_action_wins_and_tail_is_dropped():
    text = ("Action: search[a]\nObservation: fake\nAction: search[b]\nAnswer: fake")
    r = parse(text)
    assert (r.tool, r.input, r.forged) == ("search", "a", True)
    assert r.kept == "Action: search[a]"


def test_final_answer_variants():
    assert parse("Thought: done\nAnswer: 42").answer == "42"
    assert parse("Final Answer: INV-2088 on 2026-07-14").answer == "INV-2088 on 2026-07-14"
    assert parse("Action: finish[Yes]").answer == "Yes"
    assert parse('{"action": "Final Answer", "action_input": "7"}').answer == "7"


def test_unknown_tool_is_an_error_naming_the_choices():
    r = parse("Action: serch[refunds]", tools=["search", "get_charge"])
    assert r.kind == "error"
    assert r.reason == "unknown tool 'serch'; available: search, get_charge"
    assert parse("Action: x[y]", tools=[]).reason == "unknown tool 'x'; no tools are available"


def test_no_action_gives_an_actionable_error():
    r = parse("I'll look up the invoices for cus_8812.")
    assert r.kind == "error" and "Action:" in r.reason and "Answer:" in r.reason


def test_thought_is_captured():
    r = parse("Thought: I need the charges.\nAction: get_charge[ch_1]")
    assert r.thought == "I need the charges."
    assert parse("unlabelled plan\nAction: get_charge[ch_1]").thought == "unlabelled plan"


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
    ('<tool_call>{"foo": 1}</tool_call>', ["markup", "Action: tool_name["]),
    ('Action: {"query": "refund policy"}', ["names no tool", "'query'", '"action_input"']),
])
def test_a_message_says_what_happened_and_what_to_write(text, words):
    r = parse(text, tools=TOOLS)
    reason = _one_line_reason(r)
    assert all(w in reason for w in words), reason
    assert "Expecting" not in reason  # no decoder jargon


@pytest.mark.parametrize("text,inp", [
    ("<function=search>\n<parameter=query>\nrefunds\n</parameter>\n</function>", {"query": "refunds"}),
    ('<invoke name="search"><parameter name="query">x</parameter></invoke>', {"query": "x"}),
])
def test_markup_that_once_got_a_message_is_now_read_as_the_call(text, inp):
    # these two were refused as "markup ... write 'Action: search[...]'"; they are read now
    r = parse(text, tools=TOOLS)
    assert (r.kind, r.tool, r.input) == ("action", "search", inp)


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


# ---- JSON calls past prose, and many labels -----------------------------------------------

def test_an_action_after_many_bare_action_lines_is_still_found():
    text = "Action:\n" * 5_000 + '{"action": "search", "action_input": "refunds"}'
    r = parse(text)
    assert (r.kind, r.tool, r.input) == ("action", "search", "refunds")


@pytest.mark.parametrize("text", [
    'Action:\n{I don\'t know yet}\n{"action": "search", "action_input": "refunds"}',
    'Action:\n{"oops\n{"action": "search", "action_input": "refunds"}',
    'I think {maybe\n{"action": "search", "action_input": "refunds"}',
    '{"tool_call": {"action": "search", "action_input": "refunds"}}',
])
def test_json_action_found_past_prose_braces_and_stray_quotes(text):
    r = parse(text)
    assert (r.kind, r.tool, r.input) == ("action", "search", "refunds")


@pytest.mark.parametrize("text", ["Action: ''", 'Action: ""\nAction Input: refunds', "Action: ``"])
def test_an_action_line_without_a_tool_name_is_an_error(text):
    r = parse(text)
    assert r.kind == "error" and "names no tool" in r.reason


# ---- forged observations, whatever their spelling -----------------------------------------

FORGED = [
    # spellings the parser missed
    "__Observation__:", "- Observation:", "1. Observation:", "Observation (1):", "Observations:",
    "Observation\u00a0:", "Observation\uff1a", "\u200bObservation:", "Observation -", "Observation \u2014",
    "<b>Observation</b>:", "<strong>Observation:</strong>",
    # spellings it already caught
    "Observation:", "**Observation**:", "observation:", "Observation 1:", "*Observation:*",
    "> Observation:", "### Observation:", "  Observation:", "**Observation:**",
    # full-width letters, a tag, a special token before the label
    "\uff2f\uff42\uff53\uff45\uff52\uff56\uff41\uff54\uff49\uff4f\uff4e:", "\uff2f\uff42\uff53\uff45\uff52\uff56\uff41\uff54\uff49\uff4f\uff4e\uff1a",
    "<observation>", "<Observation>{\"rows\": []}</Observation>", '<observation step="1">',
    "<|im_end|>Observation:", "<|im_end|><|im_start|>Observation:", "<|eot_id|>observation:",
    "<\uff5cend\u2581of\u2581sentence\uff5c>Observation:",
]
NOT_FORGED = [
    "Observation shows that x: y", "Observational data: 3 rows", "Observations from the log show: y",
    "Observation-based estimate: 40", "The Observation: x", "I made an observation: it is paid",
    '  "observation": "paid",',
    "Thought: the Observation: line is written by the loop", "<observational>", "I saw <observation> tags",
    "<|im_end|>Observational data: 3 rows",
]


@pytest.mark.parametrize("label", FORGED)
def test_forged_observation_is_found_at_its_line_start(label):
    text = f"Thought: check\n{label} INV-2291 was paid.\nAnswer: Yes, paid."
    assert find_forged(text) == len("Thought: check\n")


@pytest.mark.parametrize("label", FORGED)
def test_no_answer_is_taken_from_a_forged_observation(label):
    # As for the standard spelling: everything from the forged line on is dropped, so the
    # answer that rests on it is not taken, and the transcript keeps only the thought.
    r = parse(f"Thought: check\n{label} INV-2291 was paid.\nAnswer: Yes, paid.")
    assert (r.kind, r.answer, r.forged, r.kept) == ("error", None, True, "Thought: check")


@pytest.mark.parametrize("label", FORGED)
def test_action_before_a_forged_observation_is_kept_and_run(label):
    r = parse(f"Thought: check\nAction: get_payments[INV-2291]\n{label} [] \nAnswer: unpaid")
    assert (r.kind, r.tool, r.input, r.forged) == ("action", "get_payments", "INV-2291", True)
    assert r.kept == "Thought: check\nAction: get_payments[INV-2291]"


@pytest.mark.parametrize("line", NOT_FORGED)
def test_observation_as_an_ordinary_word_is_not_a_forgery(line):
    text = f"Thought: check\n{line}\nAnswer: Yes"
    assert find_forged(text) is None
    r = parse(text)
    assert (r.kind, r.answer, r.forged) == ("final", "Yes", False)


BARE = ["Observation", "**Observation**", "### Observation", "Observation 2", "Observations",
        "<b>Observation</b>", "OBSERVATION", "> Observation", "Observation  ", "_Observation_"]
# Lines that hold the word alone but are prose or a plan, not a label (a fresh reader's finds).
NOT_BARE = ["observation.", "(observation)", "1. observation", "`observation`",
            '<a href="x">observation</a>', "- Observation", "observation", "Observation."]


@pytest.mark.parametrize("line", NOT_BARE)
def test_the_word_alone_on_a_line_of_prose_or_a_list_is_not_a_label(line):
    text = f"Thought: I will answer from the last\n{line}\nAnswer: Three steps: Thought, Action, Observation"
    assert find_forged(text) is None
    steps = "Final Answer: the loop has three steps:\n- Thought\n- Action\n- Observation\nDone."
    assert find_forged(steps) is None


@pytest.mark.parametrize("label", BARE)
def test_a_line_that_is_the_label_alone_is_a_forged_observation(label):
    # The model writes the label as a heading and the made-up result on the next line.
    text = f"Thought: check\nAction: get_payments[INV-2291]\n{label}\n[] \nAnswer: unpaid"
    assert find_forged(text) == settled_forgery(text) == text.index(label)
    r = parse(text)
    assert (r.kind, r.tool, r.input, r.forged) == ("action", "get_payments", "INV-2291", True)
    assert r.kept == "Thought: check\nAction: get_payments[INV-2291]"


@pytest.mark.parametrize("label", BARE)
def test_the_label_alone_counts_only_once_its_line_is_finished(label):
    # "Observation" at the very end may yet become "Observation shows that ...".
    text = f"Thought: check\n{label}"
    assert find_forged(text) is None and settled_forgery(text) is None
    assert find_forged(text + " shows that it was paid\n") is None
    assert find_forged(text + "\r\n") == len("Thought: check\n")


@pytest.mark.parametrize("sep", ["\n", "\r\n", "\r", "\u2028", "\u2029", "\x85", "\v", "\f"],
                         ids=["LF", "CRLF", "CR", "LS", "PS", "NEL", "VT", "FF"])
def test_any_line_break_separates_labels(sep):
    text = f"Thought: a{sep}Action: search[x]{sep}Observation: y{sep}Answer: y"
    r = parse(text)
    assert (r.kind, r.tool, r.input, r.forged) == ("action", "search", "x", True)
    assert r.kept == "Thought: a\nAction: search[x]"
    assert r.thought == "a"
    at = find_forged(text)  # an index into the text as given
    assert text[at:].startswith("Observation")


@pytest.mark.parametrize("tail", ["\n**Obs", "\n- Observ", "\r\nObserv", "\rObs", "\n<b>Obs",
                                  "\u2028O", "\n__Observ__", "\n1. Obs"])
def test_partial_stop_word_is_trimmed_in_any_spelling(tail):
    assert trim_partial_stop(f"Action Input: x{tail}").rstrip() == "Action Input: x"
    r = parse(f"Action: search\nAction Input: refunds{tail}")
    assert (r.kind, r.tool, r.input) == ("action", "search", "refunds")


@pytest.mark.parametrize("tail", ["\nObservational", "\n}", "\n- Obviously", "\nok"])
def test_a_last_line_that_is_not_a_stop_word_stays(tail):
    assert trim_partial_stop(f"Action Input: x{tail}") == f"Action Input: x{tail}"


# ---- enormous text: still read (the time bounds are tests/test_fuzz.py) --------------------

def test_parser_survives_enormous_and_adversarial_text():
    assert parse("{" * 50_000).kind == "error"
    assert parse("Action: a[" + "[" * 20_000).kind == "action"
    assert parse("Action: x\nAction Input: " + "{" * 3000 + "}" * 3000).kind == "action"
    big = "Thought: " + "blah " * 200_000 + "\nAction: search[refunds]"
    assert parse(big).tool == "search"


# ---- other models' native call markup: every format, by kind ---------------------------------

W = ["get_weather", "search"]
BERLIN = {"city": "Berlin"}
DS = {"begin": "<\uff5ctool\u2581call\u2581begin\uff5c>", "sep": "<\uff5ctool\u2581sep\uff5c>",
      "end": "<\uff5ctool\u2581call\u2581end\uff5c>", "calls": "<\uff5ctool\u2581calls\u2581begin\uff5c>",
      "calls_end": "<\uff5ctool\u2581calls\u2581end\uff5c>"}

#: A frame that names the tool outside its JSON arguments.
NAME_OUTSIDE = {
    "Harmony, recipient in the channel header": (
        '<|channel|>analysis<|message|>Need it.<|end|><|start|>assistant<|channel|>commentary '
        'to=functions.get_weather <|constrain|>json<|message|>{"city": "Berlin"}<|call|>', "harmony"),
    "Harmony, recipient in the role header": (
        '<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Berlin"}<|call|>',
        "harmony"),
    "DeepSeek V3.1": (f'{DS["calls"]}{DS["begin"]}get_weather{DS["sep"]}{{"city": "Berlin"}}{DS["end"]}'
                      f'{DS["calls_end"]}', "deepseek"),
    "DeepSeek R1, fenced JSON": (f'{DS["calls"]}{DS["begin"]}function{DS["sep"]}get_weather\n```json\n'
                                 f'{{"city": "Berlin"}}\n```{DS["end"]}{DS["calls_end"]}', "deepseek"),
    "Kimi K2": ('<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>'
                '{"city": "Berlin"}<|tool_call_end|><|tool_calls_section_end|>', "kimi_k2"),
    "Llama 3.1 function tag": ('<function=get_weather>{"city": "Berlin"}</function>', "llama_3_1"),
    "Functionary v3.2": ('>>>get_weather\n{"city": "Berlin"}', "functionary"),
    "Mistral with [ARGS]": ('[TOOL_CALLS]get_weather[ARGS]{"city": "Berlin"}', "mistral"),
    "Mistral with [CALL_ID]": ('[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{"city": "Berlin"}', "mistral"),
}
#: A name glued to its arguments object.
GLUED = {
    "Mistral v11": ('[TOOL_CALLS]get_weather{"city": "Berlin"}', "mistral"),
    "Gemma 4, delimited strings": ('<|tool_call>call:get_weather{city:<|"|>Berlin<|"|>}<tool_call|>', "gemma"),
    "FunctionGemma": ("<start_function_call>call:get_weather{city:<escape>Berlin<escape>}<end_function_call>",
                      "functiongemma"),
    "on an Action line": ('Thought: the weather\nAction: get_weather{"city": "Berlin"}', "glued"),
    "a line alone": ('get_weather{"city": "Berlin"}', "glued"),
    "a line alone, bare keys": ('get_weather{city: "Berlin"}', "glued"),
}
#: Arguments written as elements, one per parameter.
ELEMENTS = {
    "Qwen3-Coder": ("<tool_call>\n<function=get_weather>\n<parameter=city>\nBerlin\n</parameter>\n</function>\n"
                    "</tool_call>", "qwen3_coder"),
    "Seed-OSS": ("<seed:tool_call>\n<function=get_weather>\n<parameter=city>Berlin</parameter>\n</function>\n"
                 "</seed:tool_call>", "seed_oss"),
    "MiniMax M2": ('<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Berlin</parameter>\n'
                   '</invoke>\n</minimax:tool_call>', "minimax"),
    "Claude-style function_calls": ('<function_calls>\n<invoke name="get_weather">\n<parameter name="city">'
                                    'Berlin</parameter>\n</invoke>\n</function_calls>', "xml_invoke"),
    "DeepSeek V3.2 DSML": ('<\uff5cDSML\uff5cfunction_calls>\n<\uff5cDSML\uff5cinvoke name="get_weather">\n'
                           '<\uff5cDSML\uff5cparameter name="city" string="true">Berlin</\uff5cDSML\uff5cparameter>\n'
                           '</\uff5cDSML\uff5cinvoke>\n</\uff5cDSML\uff5cfunction_calls>', "deepseek_dsml"),
    "Step-3": ('<\uff5ctool_calls_begin\uff5c><\uff5ctool_call_begin\uff5c>function<\uff5ctool_sep\uff5c>'
               '<steptml:invoke name="get_weather"><steptml:parameter name="city">Berlin</steptml:parameter>'
               '</steptml:invoke><\uff5ctool_call_end\uff5c><\uff5ctool_calls_end\uff5c>', "step_3"),
    "GLM-4.5": ("<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Berlin</arg_value>\n</tool_call>", "glm"),
    "GLM-4.7, one line": ("<tool_call>get_weather<arg_key>city</arg_key><arg_value>Berlin</arg_value></tool_call>",
                          "glm"),
}
#: JSON inside a frame.
JSON_FRAMES = {
    "Hermes / Qwen": ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Berlin"}}\n</tool_call>', "hermes"),
    "Qwen3 thinking first": ('<think>\nThe user wants the weather.\n</think>\n\n<tool_call>\n{"name": "get_weather", '
                             '"arguments": {"city": "Berlin"}}\n</tool_call>', "hermes"),
    "Mistral before v11": ('[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Berlin"}}]', "mistral"),
    "Granite": ('<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Berlin"}}]', "granite"),
    "Nemotron": ('<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Berlin"}}]</TOOLCALL>', "nemotron"),
    "Phi-4": ('functools[{"name": "get_weather", "arguments": {"city": "Berlin"}}]', "phi_4"),
    "Command R": ('<|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "get_weather", "parameters": '
                  '{"city": "Berlin"}}\n]<|END_ACTION|>', "command_r"),
    "Apertus, the name as the key": ('<|tools_prefix|>[{"get_weather": {"city": "Berlin"}}]<|tools_suffix|>', "apertus"),
    "LM Studio": ('[TOOL_REQUEST]{"name": "get_weather", "arguments": {"city": "Berlin"}}[END_TOOL_REQUEST]', "lm_studio"),
    "Llama 3 python_tag JSON": ('<|python_tag|>{"name": "get_weather", "parameters": {"city": "Berlin"}}<|eom_id|>',
                                "llama_3"),
}
#: Python-style calls.
PYTHONIC = {
    "LFM2": ('<|tool_call_start|>[get_weather(city="Berlin")]<|tool_call_end|>', "lfm2"),
    "Gemma 3 tool_code": ('```tool_code\nget_weather(city="Berlin")\n```', "gemma_3"),
    "Gemma 3 print(default_api...)": ('```tool_code\nprint(default_api.get_weather(city="Berlin"))\n```', "gemma_3"),
    "Olmo 3, one call a line": ('<function_calls>get_weather(city="Berlin")\nsearch(query="x")</function_calls>',
                                "olmo_3"),
    "a Python-style list alone": ('[get_weather(city="Berlin"), search(query="x")]', "call"),
    "a call alone on its line": ('get_weather(city="Berlin")', "call"),
}
ALL_FORMATS = {**NAME_OUTSIDE, **GLUED, **ELEMENTS, **JSON_FRAMES, **PYTHONIC}


@pytest.mark.parametrize("shape", ALL_FORMATS)
def test_every_native_format_is_read_as_its_call(shape):
    text, dialect = ALL_FORMATS[shape]
    r = parse(text, tools=W)
    assert (r.kind, r.tool, r.input, r.dialect) == ("action", "get_weather", BERLIN, dialect), r
    assert r.kept and r.kept in text.replace("\r\n", "\n")


def test_the_reasoning_a_format_carries_is_the_thought_not_its_tokens():
    assert parse(NAME_OUTSIDE["Harmony, recipient in the channel header"][0], tools=W).thought == "Need it."
    assert parse(JSON_FRAMES["Qwen3 thinking first"][0], tools=W).thought == "The user wants the weather."
    assert parse("Let me check. " + NAME_OUTSIDE["DeepSeek V3.1"][0], tools=W).thought == "Let me check."


@pytest.mark.parametrize("bar,space", [("\uff5c", "\u2581"), ("|", "_"), ("|", "\u2581"), ("\uff5c", "_")])
def test_special_tokens_are_read_in_every_spelling(bar, space):
    # full-width bars and U+2581 as DeepSeek's tokenizer has them, ASCII as servers re-spell them
    tok = lambda words: f"<{bar}{space.join(words.split())}{bar}>"  # noqa: E731
    text = f'{tok("tool calls begin")}{tok("tool call begin")}get_weather{tok("tool sep")}{{"city": "Berlin"}}' \
           f'{tok("tool call end")}{tok("tool calls end")}'
    r = parse(text, tools=W)
    assert (r.kind, r.tool, r.input) == ("action", "get_weather", BERLIN)


def test_every_call_of_a_frame_holding_several_is_read_in_order():
    from react_lab._parsing.formats import find_calls
    two = (f'{DS["calls"]}{DS["begin"]}function{DS["sep"]}get_weather\n```json\n{{"city": "Berlin"}}\n```{DS["end"]}'
           f'\n{DS["begin"]}function{DS["sep"]}search\n```json\n{{"query": "x"}}\n```{DS["end"]}{DS["calls_end"]}')
    for text in (two, '[TOOL_CALLS]get_weather{"city": "Berlin"}[TOOL_CALLS]search{"query": "x"}',
                 PYTHONIC["Olmo 3, one call a line"][0]):
        assert [(c.name, c.arguments) for c in find_calls(text)] == [("get_weather", BERLIN), ("search", {"query": "x"})]
        assert parse(text, tools=W).tool == "get_weather"  # the first call is the action


@pytest.mark.parametrize("text,inp", [
    ('<|tool_call>call:get_weather{city:<|"|>Berlin<|"|>,days:3,metric:true,opts:{units:<|"|>C<|"|>,'
     'tags:[<|"|>a<|"|>,<|"|>b<|"|>]},note:null}<tool_call|>',
     {"city": "Berlin", "days": 3, "metric": True, "opts": {"units": "C", "tags": ["a", "b"]}, "note": None}),
    ('<|tool_call>call:get_weather{q:<|"|>say "hi", then {stop}<|"|>}<tool_call|>', {"q": 'say "hi", then {stop}'}),
    ("<tool_call>\n<function=get_weather>\n<parameter=days>\n3\n</parameter>\n<parameter=opts>\n{\"a\": [1]}\n"
     "</parameter>\n<parameter=city>\n12 Main St\n</parameter>\n</function>\n</tool_call>",
     {"days": 3, "opts": {"a": [1]}, "city": "12 Main St"}),
    ('<\uff5cDSML\uff5cinvoke name="get_weather"><\uff5cDSML\uff5cparameter name="days" string="false">3'
     '</\uff5cDSML\uff5cparameter><\uff5cDSML\uff5cparameter name="zip" string="true">01234</\uff5cDSML\uff5cparameter>'
     '</\uff5cDSML\uff5cinvoke>', {"days": 3, "zip": "01234"}),
    ("<tool_call>get_weather\n<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>", {"days": 3}),
    ("<tool_call>get_weather</tool_call>", {}),
    ('<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Berlin", "days": 3}',
     {"city": "Berlin", "days": 3}),
])
def test_values_keep_their_types(text, inp):
    # element values are JSON when they are JSON, else text; DSML's string="true" keeps text
    r = parse(text, tools=W)
    assert (r.kind, r.tool, r.input) == ("action", "get_weather", inp)


# ---- a lone wrapper around the arguments, in call syntax ----------------------------------

@pytest.mark.parametrize("line", [
    'get_weather(properties={"city": "Berlin"})', 'get_weather(parameters={"city": "Berlin"})',
    'get_weather(arguments={"city": "Berlin"})', 'get_weather(args={"city": "Berlin"})',
    'get_weather(kwargs={"city": "Berlin"})', 'get_weather(**{"city": "Berlin"})',
    'get_weather({"properties": {"city": "Berlin"}})', 'get_weather(city="Berlin")',
    '[get_weather(properties={"city": "Berlin"})]', '<|tool_call_start|>[get_weather(parameters={"city": "Berlin"})]'
    '<|tool_call_end|>',
])
def test_a_lone_wrapper_is_unwrapped_and_the_real_arguments_kept(line):
    for text in (line, f"Action: {line}"):
        r = parse(text, tools=W)
        assert (r.kind, r.tool, r.input) == ("action", "get_weather", BERLIN), text


@pytest.mark.parametrize("line,inp", [
    ('get_weather(properties="Berlin")', {"properties": "Berlin"}),            # not an object: a value
    ('get_weather(properties={"city": "Berlin"}, days=3)', {"properties": BERLIN, "days": 3}),  # not alone
    ('get_weather(city="Berlin", metric=true, note=null)', {"city": "Berlin", "metric": True, "note": None}),
])
def test_a_wrapper_that_is_not_alone_or_holds_no_object_is_kept(line, inp):
    r = parse(f"Action: {line}", tools=W)
    assert (r.kind, r.tool, r.input) == ("action", "get_weather", inp)


# ---- tokenizer markers where spaces belong ------------------------------------------------

@pytest.mark.parametrize("text,tool,inp", [
    ('[TOOL_CALLS]\u2581[{"name":\u2581"get_weather",\u2581"arguments":\u2581{"city":\u2581"New\u2581York"}}]',
     "get_weather", {"city": "New York"}),                                        # SentencePiece
    ("\u2581Action:\u2581search[refund\u2581policy]<0x0A>", "search", "refund policy"),  # and a byte token
    ("Action:\u0120search\u010aAction\u0120Input:\u0120caf\u00c3\u00a9", "search", "caf\u00e9"),  # byte-level BPE
])
def test_text_whose_tokens_were_joined_without_decoding_is_decoded(text, tool, inp):
    r = parse(text, tools=W)
    assert (r.kind, r.tool, r.input) == ("action", tool, inp)
    assert "\u2581" not in str(r.input) and "\u0120" not in str(r.input)


def test_markers_inside_special_tokens_and_a_stray_marker_are_left_alone():
    r = parse(NAME_OUTSIDE["DeepSeek V3.1"][0] + " ", tools=W)  # the tokens hold U+2581 themselves
    assert (r.kind, r.tool, r.input) == ("action", "get_weather", BERLIN)
    assert parse("Answer: the \u2581 marker is U+2581").answer == "the \u2581 marker is U+2581"


# ---- labels inside markup are not labels; markup is never an answer -----------------------

@pytest.mark.parametrize("text", [
    "Answer: I will check.\n" + JSON_FRAMES["Hermes / Qwen"][0],
    "Final Answer: " + GLUED["Gemma 4, delimited strings"][0],
    "Action: " + JSON_FRAMES["Hermes / Qwen"][0],
    '<|tool_call>call:get_weather{city:<|"|>Berlin<|"|>,\nanswer:<|"|>sunny<|"|>}<tool_call|>',
    '<tool_call>\n<function=get_weather>\n<parameter=city>\nBerlin\n</parameter>\n<parameter=note>\nAnswer: x\n'
    '</parameter>\n</function>\n</tool_call>',
])
def test_markup_wins_over_a_label_before_it_on_its_line_or_inside_it(text):
    r = parse(text, tools=W)
    assert (r.kind, r.tool, r.input["city"]) == ("action", "get_weather", "Berlin")


def test_a_label_that_ends_before_the_markup_starts_still_wins():
    r = parse("Action: search[x]\n" + JSON_FRAMES["Hermes / Qwen"][0], tools=W)
    assert (r.kind, r.tool, r.input) == ("action", "search", "x")


def test_harmony_final_channel_is_the_answer_and_analysis_is_never_one():
    final = "<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final<|message|>12 C.<|return|>"
    assert (parse(final).kind, parse(final).answer, parse(final).thought) == ("final", "12 C.", "Easy.")
    r = parse("<|channel|>analysis<|message|>Answer: 42<|end|>")
    assert r.kind == "error" and "Harmony" in _one_line_reason(r) and "analysis" in r.reason


@pytest.mark.parametrize("answer", ["42<|im_end|>", "42<|eot_id|>", "42</s>", "42 <|end|>\n", "42<end_of_turn>"])
def test_an_end_of_turn_token_is_not_part_of_the_answer(answer):
    assert parse(f"Answer: {answer}").answer == "42"
    assert "answer is empty" in _one_line_reason(parse("Answer: <|im_end|>"))


# ---- refusals: each names what it saw, never the generic words ------------------------------

@pytest.mark.parametrize("text,tools,words", [
    ("", None, ["empty completion"]),
    ("  \n\n ", None, ["empty completion"]),
    ("Thought: The current language of the user is: en. I need", None, ["mid-sentence", "Thought", "Action:"]),
    ("I need to look up the invoice of", None, ["mid-sentence"]),
    ("Observation: 36\nAnswer: 36", None, ["own Observation", "Action:"]),
    ("[TOOL_CALLS]get_wether{\"city\": \"Berlin\"}", W, ["unknown tool 'get_wether'", "available: get_weather, search",
                                                         "Mistral"]),
    ("<|channel|>commentary to=browser.open <|constrain|>json<|message|>{\"url\": \"x\"}", W,
     ["unknown tool 'browser.open'", "Harmony"]),
    ('<|python_tag|>brave_search.call(query="x")', W, ["unknown tool 'brave_search'", "Llama 3"]),
    (f'{DS["calls"]}{DS["begin"]}function{DS["sep"]}get_weather\n```json\n{{"city": "Ber', W,
     ["DeepSeek tool call to 'get_weather'", "cut off", "Action: get_weather["]),
    ("<|channel|>commentary to=functions.get_weather", W, ["Harmony tool call to 'get_weather'", "cut off"]),
    ("<tool_call>\n<function=get_weather>\n<parameter=city>\nBer", W, ["Qwen3-Coder", "cut off", "'city'"]),
    ('<|tool_call>call:get_weather{city:<|"|>Berlin', W, ["Gemma tool call to 'get_weather'", "cut off"]),
    ("Let me check. " + DS["calls"], W, ["DeepSeek", "markup", "Action: tool_name["]),
    ("<|python_tag|>import math\nprint(math.pi)", W, ["Llama 3", "code"]),
    ("get_weather{city: Berlin}", W, ["a call written as get_weather{...}", "Action: get_weather["]),
    ("Action: get_weather{city: Berlin}", W, ["a call written as get_weather{...}"]),
])
def test_every_refusal_is_one_line_naming_what_it_saw(text, tools, words):
    reason = _one_line_reason(parse(text, tools=tools))
    assert GENERIC not in reason
    assert all(w in reason for w in words), reason


def test_a_completion_that_ends_a_sentence_without_a_call_gets_the_plain_message():
    assert GENERIC in _one_line_reason(parse("Thought: I know what to look up."))
    # with a finish reason the model stopped itself: not "mid-sentence"
    assert GENERIC in _one_line_reason(parse("Thought: I need", finish_reason="stop"))


@pytest.mark.parametrize("text", ["Thought: I will look up", "", "Thought: I know it.",
                                  'Action: {"action": "search", "action_input": {"query": "x'])
def test_a_completion_cut_at_the_token_limit_says_so(text):
    r = parse(text, finish_reason="length", max_tokens=256)
    reason = _one_line_reason(r)
    assert reason.startswith("a completion cut at the token limit (256 tokens)") and GENERIC not in reason
    assert "token limit (" not in _one_line_reason(parse(text, finish_reason="length"))  # no count known


def test_the_token_limit_changes_what_an_error_says_never_what_is_read():
    for text in ("Thought: x\nAction: search[refunds]", "Answer: 42", NAME_OUTSIDE["Kimi K2"][0]):
        assert parse(text, tools=W, finish_reason="length", max_tokens=8) == parse(text, tools=W)


@pytest.mark.parametrize("text", ['search {"query": "x"}', "get_weather {city: Berlin}\nmore", "a {", "x.y {}"])
def test_a_name_then_a_space_then_a_brace_is_prose_not_a_glued_call(text):
    # found by benchmarks/fuzz_parser.py: the line reader once raised on "name {" (caught by parse)
    r = parse(text)
    assert r.kind == "error" and not r.reason.startswith("could not read the completion")


# ---- Python's own warnings, invisible answers, a label after the answer label ------------------

@pytest.mark.parametrize("text", ["Action: calc(1if 1else 2)", 'Action: search("\\d")',
                                  'Action: [search(query="\\d", n=1if 1else 2)]',
                                  "Action: search[{'q': '\\d', 'n': 0x1for}]", 'search(query="\\d")',
                                  "Action: search\nAction Input: {'q': '\\d'}"])
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


INVISIBLE = ["\u200b", "\u200c\u200d", "\ufeff", "\u2060\u200e\u200f", "\u00ad", "\u3164", "\u2800",
             " \u200b \u3000", "\u0301"]


@pytest.mark.parametrize("blank", INVISIBLE)
@pytest.mark.parametrize("form", ["Answer: {}", "Final Answer: {}\n", "Action: finish[{}]",
                                  '{{"action": "Final Answer", "action_input": "{}"}}'])
def test_an_answer_of_invisible_characters_is_empty(blank, form):
    r = parse(form.format(blank))
    assert r.kind == "error" and r.answer is None and "the answer is empty" in _one_line_reason(r)
    assert parse(form.format(blank + "42" + blank)).kind == "final"


@pytest.mark.parametrize("label", ["Action: search[x]", "action 2: calc[1+1]", "Thought: look it up",
                                   "Observation: 3 rows", "Question: what?"])
def test_an_answer_label_followed_by_another_label_is_named(label):
    reason = _one_line_reason(parse(f"Thought: t\nAnswer: {label}", tools=TOOLS))
    assert reason.startswith(f"an Answer label followed by '{label}' on the same line")
    assert "empty" not in reason


def test_an_answer_label_written_twice_is_one_label():
    assert parse("Answer: Final Answer: 42").answer == "42"
    assert parse("**Final Answer:** Answer: INV-2041<|im_end|>").answer == "INV-2041"


# ---- an Observation written on the action's own line -------------------------------------------

INLINE = ["Action: search[refunds] Observation: {\"rows\": 3}", "Action: search[refunds]Observation: 3",
          "Action: search[refunds] **Observation:** 3", "Action: search[refunds]<|im_end|>Observation: 3",
          "Action: search[refunds] Observation 1: 3", "Action: search(\"refunds\") Observation: 3",
          "Action: search[refunds] \uff2f\uff42\uff53\uff45\uff52\uff56\uff41\uff54\uff49\uff4f\uff4e: 3",
          "**Action:** search[refunds] OBSERVATION: 3"]


@pytest.mark.parametrize("line", INLINE)
def test_an_observation_after_the_call_on_its_line_is_forged_and_the_action_kept(line):
    text = f"Thought: look\n{line}\nAnswer: 3 refunds"
    at = find_forged(text)
    assert at is not None and text[at:].translate(_FOLD).lower().startswith(("observation", "**observation"))
    assert settled_forgery(text) == at and settled_forgery(text[:text.index(": 3") + 2]) in (None, at)
    r = parse(text, tools=TOOLS)
    assert (r.kind, r.tool, r.input, r.forged, r.answer) == ("action", "search", "refunds", True, None)
    assert find_forged(r.kept) is None and "3" not in r.kept.split("search", 1)[1].replace("refunds", "")
    from react_lab.parser import truncate_forged

    assert truncate_forged(text).endswith(("search[refunds]", 'search("refunds")', "search[refunds]<|im_end|>"))


_FOLD = {c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)}


@pytest.mark.parametrize("line", ["Action: search[Observation: x]", 'Action: search["Observation: x"]',
                                  "Action: search[my observation: x]", "Action: search(query='x Observation: y')",
                                  "Action: search[x] (observation: none yet)"])
def test_the_word_inside_a_call_or_in_prose_after_it_is_not_forged(line):
    assert find_forged(f"Thought: t\n{line}\n") is None
    assert parse(f"Thought: t\n{line}").kind == "action"


def test_an_action_named_observation_still_says_so():
    r = parse("Action: Observation: the invoice is paid")
    assert r.forged and "holds an Observation, not a tool name" in r.reason


@pytest.mark.parametrize("text", ['Action: list_invoices["cus_8812", "2026-01-01"]',
                                  "Action: list_invoices['cus_8812', '2026-01-01']",
                                  "Action: list_invoices[\u201ccus_8812\u201d, 2026-01-01]"])
def test_each_quoted_argument_loses_its_quotes(text):
    assert parse(text).args == ["cus_8812", "2026-01-01"]  # the tool gets the ids, not '"cus_8812"'


def test_an_answer_ends_at_the_first_end_of_turn_token():
    r = parse("Answer: 42<|im_end|>\n<|im_start|>user\nObservation: x")
    assert (r.kind, r.answer) == ("final", "42")

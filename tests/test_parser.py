"""The tolerant parser, one fault *kind* at a time: labels, answers, tool names, refusals.

The public cases (tests/test_public_cases.py) are one instance each. Here every kind gets
its other members: label spellings, answer labels, names that are not tool names, and the
refusals the parser gives when a completion holds no call it can run. Calls written in other
ways are tests/_parsing/test_json_calls.py (JSON, call syntax) and
tests/_parsing/test_native_markup.py (other models' markup); forged observations are
tests/test_parser_forged.py; answers that are calls, tests/test_parser_calls_in_answers.py.
Properties over random text and the time bounds are tests/test_fuzz.py.
"""

import pytest
from helpers.parsing_checks import DS, GENERIC, KIMI_K2, TOOLS, W, one_line_reason

from react_lab.lab.agent.parser import find_forged, parse

# ---- labels: drift in the paper's own format ---------------------------------------------


@pytest.mark.parametrize("tail", ["\nO", "\nObs", "\nObserv", "\nObservation", "\n  Observ"])
def test_partial_stop_word_is_trimmed_whatever_its_length(tail):
    r = parse(f"Thought: x\nAction: search\nAction Input: refunds{tail}")
    assert (r.kind, r.tool, r.input) == ("action", "search", "refunds")


@pytest.mark.parametrize(
    "label",
    ["Observation:", "Observation 3:", "  Observation:", "**Observation:**", "observation:"],
)
def test_any_model_written_observation_is_dropped(label):
    r = parse(f'Action: get_charge[ch_1KZq8f]\n{label} {{"status": "refunded"}}\nAnswer: refunded')
    assert (r.kind, r.tool, r.input, r.forged) == ("action", "get_charge", "ch_1KZq8f", True)
    assert "refunded" not in r.kept


@pytest.mark.parametrize(
    "text,tool,inp",
    [
        ("Action 1: search[refund policy]", "search", "refund policy"),
        ("Action 12: search\nAction 12 Input: refund policy", "search", "refund policy"),
        ("   Action: search[refund policy]   and then I will read it", "search", "refund policy"),
        (
            "Action: list_invoices[cus_8812, 2026-07-01] # July",
            "list_invoices",
            "cus_8812, 2026-07-01",
        ),
        ("**Action:** search[x]", "search", "x"),
        ("Action: Google Search\n\n\nAction Input: 'q'", "Google Search", "q"),
        ("\ufeffAction: search[x]", "search", "x"),  # a byte-order mark before the label
        ("\u200b\u2060Action: search[x]", "search", "x"),  # zero-width characters before it
    ],
)
def test_label_drift(text, tool, inp):
    r = parse(text)
    assert (r.kind, r.tool, r.input) == ("action", tool, inp)


@pytest.mark.parametrize(
    "raw,expected",
    [
        ('"a b"', "a b"),
        ("'a b'", "a b"),
        ('"a" and "b"', '"a" and "b"'),
        ('say "hi"', 'say "hi"'),
        ("'it''s'", "'it''s'"),
        ('"', '"'),
        ("\u201ca b\u201d", "a b"),
        ("\u2018a b\u2019", "a b"),  # typographic quotes, as a pair
        ('"a b', "a b"),
        ("\u201ca b", "a b"),  # an opening quote never closed (a cut-off line)
    ],
)
def test_quotes_stripped_only_when_one_pair_wraps_everything(raw, expected):
    assert parse(f"Action: echo\nAction Input: {raw}").input == expected


@pytest.mark.parametrize(
    "blob",
    [
        '{"action": "get_charge", "action_input": {"charge_id": "ch_1"}}',
        '```json\n{"action": "get_charge", "action_input": {"charge_id": "ch_1"}}\n```',
        '```\n{"action": "get_charge",\n "action_input": {"charge_id": "ch_1"}}',
        "{'action': 'get_charge', 'action_input': {'charge_id': 'ch_1'}}",
        'Action:\n{"action": "get_charge", "action_input": "{\\"charge_id\\": \\"ch_1\\"}"}',
    ],
)
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
    text = "Action: search[a]\nObservation: fake\nAction: search[b]\nAnswer: fake"
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


# ---- tool names: not a name, or a name with spaces -------------------------------------


@pytest.mark.parametrize(
    "line,hint",
    [
        ("search for refunds.", "Action: search["),
        ("search: refund policy", "Action: search["),
        ("search, then calc", "Action: search["),
        ("search/refunds", "Action: search["),
        ("I will search the help articles", "Action: tool_name["),
        ('"search the articles for refunds"?', "Action: search["),
        ("<function=search>", "Action: search["),
        ("get_charge → ch_1KZq8f", "Action: get_charge["),
    ],
)
def test_a_name_that_is_not_an_identifier_is_never_dispatched(line, hint):
    r = parse(f"Action: {line}", tools=TOOLS)
    assert hint in one_line_reason(r)
    if not line.startswith("I will"):  # without a tool list, plain words are a name
        assert "Action: " in one_line_reason(parse(f"Action: {line}"))


def test_names_with_spaces_are_taken_only_as_written():
    # frameworks name tools "Google Search"; such a name is a name, and must match exactly
    assert parse("Action: Google Search\nAction Input: x").tool == "Google Search"
    r = parse("Action: Google Search\nAction Input: x", tools=["Google Search"])
    assert (r.kind, r.tool) == ("action", "Google Search")
    r = parse("Action: search refund policy", tools=TOOLS)
    assert r.kind == "error" and "'Action: search[...]'" in r.reason


# ---- kind 7: the gaps with no public sample yet ------------------------------------------------


@pytest.mark.parametrize(
    "text,tool,inp",
    [
        ("action: search[refunds]", "search", "refunds"),
        ("ACTION: search[refunds]", "search", "refunds"),
        ("thought: x\naction: search\naction input: refunds", "search", "refunds"),
        ("Action\uff1asearch[refunds]", "search", "refunds"),
        ("Action\uff1a search\nAction Input\uff1a refunds", "search", "refunds"),
        ("**Action\uff1a** search[refunds]", "search", "refunds"),
        ("Action 2\uff1asearch[refunds]", "search", "refunds"),
        ("Action\ufe55search[refunds]", "search", "refunds"),
    ],
)
def test_lowercase_labels_and_full_width_colons(text, tool, inp):
    r = parse(text, tools=TOOLS)
    assert (r.kind, r.tool, r.input) == ("action", tool, inp)


def test_full_width_colons_on_thought_and_answer_labels():
    assert (
        parse("Thought\uff1a\u6211\u9700\u8981\u641c\u7d22\nAction\uff1asearch[x]").thought
        == "\u6211\u9700\u8981\u641c\u7d22"
    )
    assert parse("Final Answer\uff1aINV-2088").answer == "INV-2088"
    assert parse("answer: INV-2088").answer == "INV-2088"


@pytest.mark.parametrize(
    "text,tool,inp",
    [
        ("Action: search[refund policy", "search", "refund policy"),
        ("Action: list_invoices[cus_8812, 2026-07-01", "list_invoices", "cus_8812, 2026-07-01"),
        ("Action: search[refund policy\nThought: then read", "search", "refund policy"),
        ("Action: search[refund [policy]", "search", "refund [policy]"),
    ],
)
def test_a_bracket_call_missing_its_closing_bracket_takes_the_rest_of_the_line(text, tool, inp):
    r = parse(text, tools=TOOLS)
    assert (r.kind, r.tool, r.input) == ("action", tool, inp)


def test_a_bracket_call_missing_its_bracket_before_a_forged_observation():
    r = parse("Action: search[refund policy\nObservation: 3 articles\nAnswer: 60 days", tools=TOOLS)
    assert (r.kind, r.tool, r.input, r.forged) == ("action", "search", "refund policy", True)
    assert find_forged(r.kept) is None and "60 days" not in r.kept


@pytest.mark.parametrize(
    "answer",
    [
        "In the log, Action: refund was recorded on 2026-07-14.",
        "Set the field to 'Action: none' and save.",
        "Steps:\n1. open the charge; the log shows Action: refund\n2. done",
    ],
)
def test_a_final_answer_containing_the_word_action_is_kept_whole(answer):
    r = parse(f"Thought: I know it.\nFinal Answer: {answer}", tools=TOOLS)
    assert (r.kind, r.answer) == ("final", answer)


@pytest.mark.parametrize(
    "before",
    [
        "I checked INV-2088: it was paid on 2026-07-14.",
        "Thought: the payments list is empty.\nSo INV-2323 is approved but unpaid.",
        "| invoice | status |\n|---|---|\n| INV-2041 | paid |",
    ],
)
def test_content_before_the_final_answer_is_kept(before):
    r = parse(f"{before}\n\nFinal Answer: Yes.")
    assert (r.kind, r.answer) == ("final", "Yes.")
    assert r.kept.startswith(before)
    last = before.split("Thought:")[-1].strip()
    assert r.thought == last


def test_an_empty_final_answer_is_an_error_and_loses_nothing():
    r = parse("The latest invoice is INV-2088, issued on 2026-07-14.\nFinal Answer:")
    assert "answer is empty" in one_line_reason(r) and "Answer:" in r.reason
    assert r.kept.startswith("The latest invoice is INV-2088") and r.thought.startswith(
        "The latest"
    )
    # on the next line: still an answer
    r = parse("Final Answer:\nINV-2088 was issued on 2026-07-14.")
    assert (r.kind, r.answer) == ("final", "INV-2088 was issued on 2026-07-14.")


@pytest.mark.parametrize(
    "text",
    [
        "Action: finish[]",
        "Action: Finish[ ]",
        "Action: finish\nAction Input: ",
        '{"action": "Final Answer", "action_input": ""}',
        "Answer:   ",
    ],
)
def test_every_empty_answer_form_is_the_same_error(text):
    r = parse(text)
    assert (r.kind, r.answer) == ("error", None) and "answer is empty" in one_line_reason(r)


@pytest.mark.parametrize("name", ["serch" * 5000, "a" * 100_000, "\ufeff" * 3000 + "x"])
def test_a_huge_tool_name_still_gives_one_short_line(name):
    for text in (f"Action: {name}[x]", f"Action: {name}\nAction Input: x", f'{{"tool": "{name}"}}'):
        r = parse(text, tools=TOOLS)
        assert len(one_line_reason(r)) <= 400 and "available: search" in r.reason
    for text in (f'Action: {name}("a", b="c")', f'Action: {name}({{"query": "x"'):
        assert len(one_line_reason(parse(text, tools=TOOLS))) <= 400


@pytest.mark.parametrize("text", ["Action: ''", 'Action: ""\nAction Input: refunds', "Action: ``"])
def test_an_action_line_without_a_tool_name_is_an_error(text):
    r = parse(text)
    assert r.kind == "error" and "names no tool" in r.reason


# ---- enormous text: still read (the time bounds are tests/test_fuzz.py) --------------------


def test_parser_survives_enormous_and_adversarial_text():
    assert parse("{" * 50_000).kind == "error"
    assert parse("Action: a[" + "[" * 20_000).kind == "action"
    assert parse("Action: x\nAction Input: " + "{" * 3000 + "}" * 3000).kind == "action"
    big = "Thought: " + "blah " * 200_000 + "\nAction: search[refunds]"
    assert parse(big).tool == "search"


# ---- refusals: each names what it saw, never the generic words ------------------------------


@pytest.mark.parametrize(
    "text,tools,words",
    [
        ("", None, ["empty completion"]),
        ("  \n\n ", None, ["empty completion"]),
        (
            "Thought: The current language of the user is: en. I need",
            None,
            ["mid-sentence", "Thought", "Action:"],
        ),
        # no labels and no finish reason: what is missing, never a guess at a token limit
        ("I need to look up the invoice of", None, ["bare 'I need", "no Action or Answer label"]),
        ("Observation: 36\nAnswer: 36", None, ["own Observation", "Action:"]),
        (
            '[TOOL_CALLS]get_wether{"city": "Berlin"}',
            W,
            ["unknown tool 'get_wether'", "available: get_weather, search", "Mistral"],
        ),
        (
            '<|channel|>commentary to=browser.open <|constrain|>json<|message|>{"url": "x"}',
            W,
            ["unknown tool 'browser.open'", "Harmony"],
        ),
        (
            '<|python_tag|>brave_search.call(query="x")',
            W,
            ["unknown tool 'brave_search'", "Llama 3"],
        ),
        (
            f'{DS["calls"]}{DS["begin"]}function{DS["sep"]}get_weather\n```json\n{{"city": "Ber',
            W,
            ["DeepSeek tool call to 'get_weather'", "ends before", "Action: get_weather["],
        ),
        (
            "<|channel|>commentary to=functions.get_weather",
            W,
            ["Harmony tool call to 'get_weather'", "ends before its arguments"],
        ),
        (
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nBer",
            W,
            ["Qwen3-Coder", "no closing tag", "'city'"],
        ),
        (
            '<|tool_call>call:get_weather{city:<|"|>Berlin',
            W,
            ["Gemma tool call to 'get_weather'", "never closed"],
        ),
        ("Let me check. " + DS["calls"], W, ["DeepSeek", "markup", "Action: tool_name["]),
        ("<|python_tag|>import math\nprint(math.pi)", W, ["Llama 3", "code"]),
        (
            "get_weather{city: Berlin}",
            W,
            ["a call written as get_weather{...}", "Action: get_weather["],
        ),
        ("Action: get_weather{city: Berlin}", W, ["a call written as get_weather{...}"]),
    ],
)
def test_every_refusal_is_one_line_naming_what_it_saw(text, tools, words):
    reason = one_line_reason(parse(text, tools=tools))
    assert GENERIC not in reason
    assert all(w in reason for w in words), reason


def test_a_completion_that_ends_a_sentence_without_a_call_gets_the_plain_message():
    assert GENERIC in one_line_reason(parse("Thought: I know what to look up."))
    # with a finish reason the model stopped itself: not "mid-sentence"
    assert GENERIC in one_line_reason(parse("Thought: I need", finish_reason="stop"))


@pytest.mark.parametrize(
    "text",
    [
        "Thought: I will look up",
        "",
        "Thought: I know it.",
        'Action: {"action": "search", "action_input": {"query": "x',
    ],
)
def test_a_completion_cut_at_the_token_limit_says_so(text):
    r = parse(text, finish_reason="length", max_tokens=256)
    reason = one_line_reason(r)
    assert (
        reason.startswith("a completion cut at the token limit (256 tokens)")
        and GENERIC not in reason
    )
    # no count known
    assert "token limit (" not in one_line_reason(parse(text, finish_reason="length"))


def test_the_token_limit_changes_what_an_error_says_never_what_is_read():
    for text in ("Thought: x\nAction: search[refunds]", "Answer: 42", KIMI_K2):
        assert parse(text, tools=W, finish_reason="length", max_tokens=8) == parse(text, tools=W)


@pytest.mark.parametrize(
    "text", ['search {"query": "x"}', "get_weather {city: Berlin}\nmore", "a {", "x.y {}"]
)
def test_a_name_then_a_space_then_a_brace_is_prose_not_a_glued_call(text):
    # found by benchmarks/fuzz_parser.py: the line reader once raised on "name {" (caught by parse)
    r = parse(text)
    assert r.kind == "error" and not r.reason.startswith("could not read the completion")


INVISIBLE = [
    "\u200b",
    "\u200c\u200d",
    "\ufeff",
    "\u2060\u200e\u200f",
    "\u00ad",
    "\u3164",
    "\u2800",
    " \u200b \u3000",
    "\u0301",
]


@pytest.mark.parametrize("blank", INVISIBLE)
@pytest.mark.parametrize(
    "form",
    [
        "Answer: {}",
        "Final Answer: {}\n",
        "Action: finish[{}]",
        '{{"action": "Final Answer", "action_input": "{}"}}',
    ],
)
def test_an_answer_of_invisible_characters_is_empty(blank, form):
    r = parse(form.format(blank))
    assert r.kind == "error" and r.answer is None and "the answer is empty" in one_line_reason(r)
    assert parse(form.format(blank + "42" + blank)).kind == "final"


@pytest.mark.parametrize(
    "label",
    [
        "Action: search[x]",
        "action 2: calc[1+1]",
        "Thought: look it up",
        "Observation: 3 rows",
        "Question: what?",
    ],
)
def test_an_answer_label_followed_by_another_label_is_named(label):
    reason = one_line_reason(parse(f"Thought: t\nAnswer: {label}", tools=TOOLS))
    assert reason.startswith(f"an Answer label followed by '{label}' on the same line")
    assert "empty" not in reason


def test_an_answer_label_written_twice_is_one_label():
    assert parse("Answer: Final Answer: 42").answer == "42"
    assert parse("**Final Answer:** Answer: INV-2041<|im_end|>").answer == "INV-2041"


@pytest.mark.parametrize(
    "text",
    [
        'Action: list_invoices["cus_8812", "2026-01-01"]',
        "Action: list_invoices['cus_8812', '2026-01-01']",
        "Action: list_invoices[\u201ccus_8812\u201d, 2026-01-01]",
    ],
)
def test_each_quoted_argument_loses_its_quotes(text):
    assert parse(text).args == ["cus_8812", "2026-01-01"]  # the tool gets the ids, not '"cus_8812"'


def test_an_answer_ends_at_the_first_end_of_turn_token():
    r = parse("Answer: 42<|im_end|>\n<|im_start|>user\nObservation: x")
    assert (r.kind, r.answer) == ("final", "42")

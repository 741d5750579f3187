"""The text protocol and the tolerant parser: the seed's strict regex, each public case's kind, the prompt.

The public cases themselves are tests/test_public_cases.py.
"""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from react_lab.parser import find_forged, parse, trim_partial_stop
from react_lab.protocol import ACTION_RE, STOP, strict_parse

# ---- each case's whole kind of drift, not only its string --------------------------------

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
])
def test_label_drift(text, tool, inp):
    r = parse(text)
    assert (r.kind, r.tool, r.input) == ("action", tool, inp)


@pytest.mark.parametrize("raw,expected", [
    ('"a b"', "a b"), ("'a b'", "a b"), ('"a" and "b"', '"a" and "b"'),
    ('say "hi"', 'say "hi"'), ("'it''s'", "'it''s'"), ('"', '"'),
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


# ---- the seed's strict regex, kept exactly ---------------------------------------------------

def test_seed_regex_is_anchored_and_exact():
    assert ACTION_RE.pattern == r"^Action:\s*(\w+)\[(.*)\]\s*$"
    assert ACTION_RE.search("I said Action: search[x] in passing") is None
    assert strict_parse("Thought: t\nAction: list_invoices[cus_8812, 2026-07-01]").args == \
        ["cus_8812", "2026-07-01"]


@pytest.mark.parametrize("text", ["Action 1: search[x]", "Action: search\nAction Input: x",
                                  "Action: search[x] trailing", "  Action: search[x]"])
def test_seed_regex_rejects_drift_the_tolerant_parser_accepts(text):
    assert strict_parse(text).kind == "error"
    assert parse(text).kind == "action"


def test_stop_sequence_and_forgery_detection():
    assert "Observation:" in STOP
    assert find_forged("Thought: x\nAction: a[b]\nObservation: 1") is not None
    assert find_forged("The observation: rows were fine") is None  # not at a line start
    assert trim_partial_stop("Action Input: x\nObs") == "Action Input: x"
    assert trim_partial_stop("Action Input: x\nObservational") == "Action Input: x\nObservational"


# ---- property-based: the parser never raises on model text --------------------------------

LABELLY = st.sampled_from(["Thought:", "Action:", "Action 2:", "Action Input:", "Observation:",
                           "Answer:", "Final Answer:", "[", "]", "{", "}", "\"", "'", "```", "\n",
                           "```json", "Finish[", "None", ",", "\x00", "\r\n", "\\", ":"])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(LABELLY, st.text(max_size=12)), max_size=40), st.booleans())
def test_parser_never_raises_on_labelled_noise(parts, with_tools):
    r = parse("".join(parts), tools=["search", "calc"] if with_tools else None)
    assert (r.reason is not None) == (r.kind == "error")  # only an error carries a reason
    if r.kind == "action":
        assert isinstance(r.tool, str) and r.tool
        assert isinstance(r.input, (str, dict))
    if r.kind == "error":
        assert r.reason
    # No model-written Observation line is kept. (The word itself may be kept, in a tool
    # input for instance: "Action: search[Observation:]\nObservation: x".)
    assert find_forged(r.kept) is None
    strict = strict_parse("".join(parts))
    assert (strict.kind == "final") == ("Answer:" in "".join(parts))  # the classic loop's order
    assert (strict.reason is not None) == (strict.kind == "error")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_parser_never_raises_on_binary(data):
    r = parse(data.decode("utf-8", errors="replace"))
    assert (r.reason is not None) == (r.kind == "error") and find_forged(r.kept) is None


def test_parser_survives_enormous_and_adversarial_text():
    assert parse("{" * 50_000).kind == "error"
    assert parse("Action: a[" + "[" * 20_000).kind == "action"
    assert parse("Action: x\nAction Input: " + "{" * 3000 + "}" * 3000).kind == "action"
    big = "Thought: " + "blah " * 200_000 + "\nAction: search[refunds]"
    assert parse(big).tool == "search"


# ---- the prompt ------------------------------------------------------------------------------

def test_exemplars_match_the_tools():
    """An exemplar teaches by example, so its observations must be what the tools really return."""
    from react_lab.protocol import EXEMPLARS
    from react_lab.tools import call_tool, default_tools

    tools = default_tools()
    for ex in EXEMPLARS:
        for _, action, observation in ex.steps:
            parsed = parse(f"Action: {action}", tools=list(tools))
            assert parsed.kind == "action", action
            assert call_tool(tools, parsed.tool, parsed.args).text == observation, action


def test_prompt_has_labels_tools_exemplar_and_question():
    from react_lab.protocol import EXEMPLARS, build_prompt
    from react_lab.tools import default_tools

    tools = default_tools()
    prompt = build_prompt("Was cus_8812 charged twice?", tools.values())
    for label in ("Thought:", "Action:", "Observation:", "Answer:"):
        assert label in prompt
    for tool in tools.values():
        assert tool.usage in prompt
    assert EXEMPLARS[0].question in prompt and EXEMPLARS[1].question not in prompt
    assert prompt.endswith("Question: Was cus_8812 charged twice?\nThought:")
    three = build_prompt("q", tools.values(), EXEMPLARS)
    assert all(ex.question in three for ex in EXEMPLARS)


def test_the_guards_add_to_the_prompt_through_build_prompt_only():
    from react_lab.guards import CITATION_NOTE, DATA_NOTE, Guards
    from react_lab.protocol import EXEMPLARS, INSTRUCTIONS, build_prompt
    from react_lab.tools import default_tools

    tools = default_tools()
    plain = build_prompt("q", tools.values())
    guards = Guards(mark_data=True, require_citation=True)
    marked = build_prompt("q", tools.values(), notes=guards.notes(), mark=guards.mark)
    assert marked.startswith(f"{INSTRUCTIONS}\n{DATA_NOTE}\n{CITATION_NOTE}\n")
    assert EXEMPLARS[0].question in marked and "Observation: <<data from list_invoices>> [" in marked
    assert build_prompt("q", tools.values(), notes=Guards().notes(), mark=Guards().mark) == plain

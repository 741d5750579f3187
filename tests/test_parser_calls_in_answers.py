"""An answer that is a call is no answer; a label behind an invisible character is still read.

A completion whose answer is a call, in any spelling (call syntax, a list item, JSON, an
Action written mid-line), is read as the call or refused, never returned to the user. Where
such text can reach the native loop too, it is checked there with the same reader
(:func:`react_lab.lab.agent.parser.read_reply`). The parser's other kinds are tests/test_parser.py.
"""

import pytest
from helpers.parsing_checks import TOOLS, one_line_reason

from react_lab.lab.agent.parser import parse, read_reply

# ---- an answer that is itself a call: never the answer ---------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        'Answer: get_charge(charge_id="ch_2VzSg6")',  # call syntax
        "Final Answer: calc(129 * 2)",
        'Answer: `get_charge(charge_id="ch_2VzSg6")`',  # in backticks
        'Answer: [get_charge(charge_id="ch_2VzSg6")]',  # a Python-style list of calls
        'Answer: get_charge{"charge_id": "ch_2VzSg6"}',  # a name glued to its object
        'Answer:\n```python\nget_charge(charge_id="ch_2VzSg6")\n```',  # fenced
        'Answer: refund_charge(charge_id="ch_2VzSg6")',  # a tool the agent does not have
        "Answer: get_charge[ch_2VzSg6]",  # the paper's own form
        '{"action": "Final Answer", "action_input": "get_charge(charge_id=\\"ch_2VzSg6\\")"}',
        "finish(answer=\"get_charge(charge_id='ch_2VzSg6')\")",
    ],
)
def test_an_answer_that_is_a_call_is_no_answer(text):
    r = parse(text, tools=TOOLS)
    assert r.kind != "final", r.answer
    assert r.kind == "action" or "call" in one_line_reason(r)


@pytest.mark.parametrize(
    "answer",
    [
        "Yes (the charge was declined).",
        "Declined (card_declined)",
        "No. (It was refunded.)",
        "The total is 258, from calc(129 * 2).",
        "card_declined",
    ],
)
def test_an_answer_that_mentions_a_call_or_a_parenthesis_is_kept(answer):
    r = parse(f"Answer: {answer}", tools=TOOLS)
    assert (r.kind, r.answer) == ("final", answer)


# ---- invisible format characters before a label: the label is still read -------------------


@pytest.mark.parametrize(
    "mark",
    [
        "\u200e",  # left-to-right mark (text beside Arabic or Hebrew)
        "\u200f",  # right-to-left mark
        "\u061c",  # Arabic letter mark
        "\u202a",  # left-to-right embedding
        "\u202e",  # right-to-left override
        "\u2066",  # left-to-right isolate
        "\u00ad",  # soft hyphen
        "\u2063",  # invisible separator
        "\U000e0041",  # a tag character
    ],
)
def test_a_label_after_an_invisible_format_character_is_read(mark):
    r = parse(f"{mark}Action: search[refund]", tools=TOOLS)
    assert (r.kind, r.tool, r.input) == ("action", "search", "refund")
    r = parse(f"Thought: done.\n{mark}Answer: INV-2041", tools=TOOLS)
    assert (r.kind, r.answer) == ("final", "INV-2041")
    assert read_reply(f"{mark}Action: search[refund]", TOOLS).answer is None


@pytest.mark.parametrize(
    "text",
    [
        'Answer: I will call {"name": "get_charge", "arguments": {"charge_id": "ch_2VzSg6"}} now.',
        'Answer: The charge: {"tool_name": "get_charge", "tool_input": {"charge_id": "ch_2VzSg6"}}',
        'Final Answer: done.\n{"name": "search", "parameters": {"query": "refund"}}',
    ],
)
def test_an_answer_holding_a_json_call_is_no_answer_as_in_the_native_loop(text):
    r = parse(text, tools=TOOLS)
    assert r.kind != "final", r.answer
    assert read_reply(text, TOOLS).answer is None  # what the native loop reads the same way


def test_an_answer_holding_json_data_that_is_no_call_is_kept():
    answer = 'The customer is {"name": "Brightwater Florists", "id": "cus_8812"}.'
    assert parse(f"Answer: {answer}", tools=TOOLS).answer == answer


@pytest.mark.parametrize("marker", ["- ", "1. ", "2) ", "\u2022 "])
def test_a_call_on_a_list_item_line_is_read_and_is_no_answer(marker):
    r = parse(f'{marker}get_charge(charge_id="ch_2VzSg6")', tools=TOOLS)
    assert (r.kind, r.tool, r.input) == ("action", "get_charge", {"charge_id": "ch_2VzSg6"})
    r = parse(f'Answer: I will run:\n{marker}get_charge(charge_id="ch_2VzSg6")', tools=TOOLS)
    assert r.kind != "final", r.answer


@pytest.mark.parametrize(
    "answer",
    [
        "The charge is declined. Action: get_charge[ch_2VzSg6]",
        "I will look it up: Action: search(query='refund')",
        "Next, **Action:** find_invoice[INV-2041]",
    ],
)
def test_an_answer_holding_an_action_mid_line_is_no_answer_in_either_loop(answer):
    r = parse(f"Answer: {answer}", tools=TOOLS)
    assert r.kind != "final", r.answer
    assert read_reply(answer, TOOLS).answer is None


def test_one_tool_name_given_as_a_string_is_that_tool_not_its_letters():
    r = parse("Action: search[refund]", tools="search")
    assert (r.kind, r.tool, r.input) == ("action", "search", "refund")
    r = parse("Action: serch[refund]", tools="search")
    assert r.kind == "error" and "available: search" in r.reason, r.reason
    assert read_reply("Action: serch[refund]", "search").answer is None

"""A reply's text read as the parser reads a completion (react_lab/_parsing/reply.py, through
react_lab.lab.agent.parser.read_reply): a half-written call or a broken answer label is never the
answer, and prose with a parenthesis is one."""

import pytest

from react_lab.lab.agent.parser import read_reply
from react_lab.tools import default_tools

NAMES = list(default_tools())


@pytest.mark.parametrize(
    "text",
    [
        'Let me look. {"action": "get_charge", "action_input": {"charge_id": "ch_2V',  # cut off
        '{"name": "get_charge", "arguments": {"charge_id": "ch_2V',
        "Answer:",  # an answer label with nothing after it
        "Answer: \u200b",
        "Answer: Final Answer: Action: search[x]",  # another label after the answer label
        "Answer: Action: get_charge\nAction Input: ch_2VzSg6",
        'Answer: get_charge(charge_id="ch_2VzSg6")',  # an answer that is a call
        "Answer: get_charge[ch_2VzSg6]",
    ],
)
def test_a_half_written_call_or_a_broken_answer_label_is_no_answer(text):
    read = read_reply(text, NAMES)
    assert read.answer is None and read.saw


@pytest.mark.parametrize(
    "text",
    [
        "Yes (the charge was declined)",
        "Paid (in full)",
        "Declined (card_declined)",
        "No. (It was refunded.)",
        "The charge was declined.",
    ],
)
def test_prose_with_a_parenthesis_is_the_answer_as_written(text):
    assert read_reply(text, NAMES).answer == text


@pytest.mark.parametrize(
    "text",
    [
        '- get_charge(charge_id="ch_2VzSg6")',
        '1. get_charge(charge_id="ch_2VzSg6")',
        '2) search(query="refund policy")',
        '* calc(expression="129 * 2")',
    ],
)
def test_a_call_on_a_list_item_line_is_no_answer(text):
    read = read_reply(text, NAMES)
    assert read.answer is None and "call" in read.saw


def test_a_list_of_prose_items_is_the_answer():
    text = "Two charges:\n- Declined (card_declined)\n1. Paid (in full)"
    assert read_reply(text, NAMES).answer == text

"""The native loop reads a reply's text as the text parser reads a completion: a call written in
it is a call or a named refusal, never the answer; Harmony's final channel is the answer; a run
that ends with nothing but markup ends without an answer and says what it saw.

Every shared case's text (and the other members of the markup kinds,
tests/helpers/markup_members.py) is replayed as the content of a scripted chat model's reply
through one native run.
"""

import re

import pytest
from helpers.markup_members import REFUSED, TAKEN

from react_lab._parsing.leaks import find_leaks
from react_lab._parsing.tokens import markup_piece
from react_lab.data import load_cases
from react_lab.lab.agent.native import ask_native
from react_lab.lab.agent.parser import read_reply
from react_lab.lab.backends.chat import ScriptedChatModel
from react_lab.schema import check_arguments
from react_lab.tools import call_tool, default_tools

QUESTION = "Was cus_8812 charged twice for INV-2041 in July?"
TOOLS = default_tools()
NAMES = list(TOOLS)
CASES = {c["id"]: c["model_output"] for c in load_cases("parse")}
OTHERS = {**{k: v[0] for k, v in TAKEN.items()}, **{k: v[0] for k, v in REFUSED.items()}}
#: What an answer never holds, besides the pieces of markup_piece: a reasoning tag's text.
REASONING_WORDS = ("<think>", "</think>", "<|channel|>", "analysis<|message|>")


def native_run(*contents, **kwargs):
    """One native run whose model replies with each of ``contents`` as its text.

    The last is repeated.
    """
    model = ScriptedChatModel([{"thought": "", "answer": c} for c in contents])
    return ask_native(QUESTION, model, TOOLS, **kwargs), model


def assert_clean(answer):
    assert answer is None or (
        markup_piece(answer) is None
        and not find_leaks(answer)
        and not any(w in answer for w in REASONING_WORDS)
    ), answer


@pytest.mark.parametrize("name", [*CASES, *OTHERS])
def test_a_reply_of_markup_is_never_the_answer_and_the_refusal_names_what_it_saw(name):
    text = CASES.get(name, OTHERS.get(name))
    result, _ = native_run(text, max_steps=1)
    assert_clean(result.answer)
    for step in result.steps:
        assert_clean(step.answer)
    leaks = find_leaks(text, NAMES)
    first, last = result.steps[0], result.steps[-1]
    if leaks:
        assert first.leaked and first.answer is None
        # declared tools, valid arguments: run as if sent in tool_calls
        if first.action is not None:
            assert first.action["tool"] == leaks[0].call["function"]["name"] and not first.error
        else:  # each call written in the text is named, and none of them ran
            assert all(leak.call["function"]["name"] in first.error for leak in leaks)
        # the best-effort reply (the same text) is no answer, and says what it held, with its format
        assert result.answer is None and leaks[0].describe(NAMES) in last.error
    elif markup_piece(text) is not None and read_reply(text, NAMES).answer is None:
        assert result.answer is None and "it wrote" in result.steps[-1].error


def test_the_mistral_case_ends_without_an_answer_saying_what_it_saw():
    result, _ = native_run(CASES["mistral-v11-toolcalls-name-glued-json"], max_steps=1)
    assert result.answer is None and result.stopped_by == "max_steps"
    assert (
        "a Mistral tool call to create_file, a tool this agent does not have"
        in result.steps[-1].error
    )
    assert "create_file" in result.steps[0].error and "tool-call field" in result.steps[0].error


def test_harmony_final_channel_is_the_answer_and_its_analysis_the_steps_reasoning():
    result, _ = native_run(CASES["harmony-analysis-then-final-markup-intact"])
    assert result.answer == "Hello Armando! How can I help you today?"
    assert result.steps[0].reasoning.startswith('User says "hi"')


def test_an_answer_given_after_markup_that_was_refused_is_taken():
    result, model = native_run(CASES["harmony-channel-markup-call"], "No, INV-2041 was paid once.")
    first, second = result.steps
    assert first.answer is None and first.action is None and "get_weather" in first.error
    # the refusal went back to the model
    assert model.requests[1][0][-1]["content"] == first.observation
    assert result.answer == "No, INV-2041 was paid once."


@pytest.mark.parametrize(
    "text",
    [
        "<tool_call>\n<function=get_payments>\n<parameter=invoice_id>\nINV-2041\n</function>\n</tool_call>",
        "<tool_call>get_payments<arg_key>invoice_id</arg_key>INV-2041</arg_value></tool_call>",
        "<tool_call>get_paymentsinvoice_id</arg_key><arg_value>INV-2041</arg_value></tool_call>",
        "<|tool_calls_section_begin|>functions.get_payments:0"
        '<|tool_call_argument_begin|>{"invoice_id": "INV-2041"}',
        '<|python_start|>{"name": "get_payments", "parameters": {"invoice_id": "INV-2041"}}',
    ],
)
def test_a_call_to_a_declared_tool_that_lost_a_tag_runs_with_all_its_arguments(text):
    result, _ = native_run(text, "No, INV-2041 was paid once.")
    first = result.steps[0]
    assert first.leaked and first.action == {
        "tool": "get_payments",
        "args": {"invoice_id": "INV-2041"},
    }
    assert first.observation == call_tool(TOOLS, "get_payments", {"invoice_id": "INV-2041"}).text
    assert result.answer == "No, INV-2041 was paid once."


@pytest.mark.parametrize(
    "text,saw",
    [
        ("<tool_call>\n</tool_call>", "Hermes tool-call markup that names no tool"),
        ("Done.<|im_start|>user\n<tool_call>", "Hermes"),
        ("The total is </parameter> 42", "call markup or a special token ('</parameter>')"),
        ("<think>Answer: 42</think>", "only reasoning"),
        ("<think>I need to look it up.", "never closed"),
        ('The files.{"cmd": ["ls"]}', "an arguments object that names no tool"),
        ('get_payments(invoice_id="INV-2041")', "a tool call to 'get_payments' written as text"),
        (
            "Thought: I need the payments.\nAction: get_payments[INV-2041]",
            "a tool call to 'get_payments' written as text",
        ),
    ],
)
def test_text_that_is_no_answer_is_sent_back_saying_what_it_holds(text, saw):
    result, model = native_run(text, max_steps=1)
    first = result.steps[0]
    assert first.answer is None and first.action is None and saw in first.error, first.error
    assert first.observation == f"Error: {first.error}"
    assert model.requests[1][0][-2]["content"] == first.observation  # what the model was told
    assert result.answer is None and saw in result.steps[-1].error


@pytest.mark.parametrize(
    "text,answer",
    [
        ("42<|im_end|>", "42"),
        (
            "<think>The payments list shows one.</think>\nNo, it was paid once.",
            "No, it was paid once.",
        ),
        ("Final Answer: No, it was paid once.", "No, it was paid once."),
        ('finish(answer="\u5317\u4eac\u662f\u9996\u90fd")', "\u5317\u4eac\u662f\u9996\u90fd"),
        # plain text: byte for byte
        ("No, INV-2041 was paid once.  ", "No, INV-2041 was paid once.  "),
    ],
)
def test_the_answer_is_what_the_text_parser_reads(text, answer):
    result, _ = native_run(text)
    assert result.answer == answer and result.stopped_by == "answer"


def test_a_call_inside_reasoning_never_runs():
    text = (
        '<think>\n{"name": "get_payments", "arguments": {"invoice_id": "INV-2041"}}\n</think>\n'
        "No, INV-2041 was paid once."
    )
    result, _ = native_run(text)
    (step,) = result.steps
    assert step.action is None and not step.leaked and step.answer == "No, INV-2041 was paid once."
    assert "get_payments" in step.reasoning


# ---- the best-effort request reads its reply the same way ----------------------------------------


def test_a_best_effort_reply_of_markup_is_no_answer_and_says_what_it_was():
    loop_calls = {
        "thought": "",
        "tool_calls": [{"name": "get_payments", "arguments": {"invoice_id": "INV-2041"}}],
    }
    model = ScriptedChatModel(
        [loop_calls, {"thought": "", "answer": CASES["mistral-v11-toolcalls-name-glued-json"]}]
    )
    result = ask_native(QUESTION, model, TOOLS, max_steps=1)
    last = result.steps[-1]
    assert model.tool_choices[-1] == "none" and result.answer is None
    assert last.error.startswith(
        "no answer, even when asked for a best effort; it wrote a Mistral tool call"
    )


def test_a_best_effort_reply_in_harmony_gives_its_final_channel():
    loop_calls = {
        "thought": "",
        "tool_calls": [{"name": "get_payments", "arguments": {"invoice_id": "INV-2041"}}],
    }
    final = (
        "<|channel|>analysis<|message|>One payment.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>Paid once."
    )
    model = ScriptedChatModel([loop_calls, {"thought": "", "answer": final}])
    result = ask_native(QUESTION, model, TOOLS, max_steps=1)
    assert (
        result.answer == "[best effort] Paid once." and result.steps[-1].reasoning == "One payment."
    )


# ---- argument messages speak JSON ----------------------------------------------------------------


@pytest.mark.parametrize(
    "arguments,words,not_words",
    [
        ("null", ["not null"], ["NoneType", "None"]),
        ('[{"invoice_id": "INV-2041"}]', ['not an array ([{"invoice_id": "INV-2041"}])'], ["list"]),
        ('"INV-2041"', ['not a string ("INV-2041")'], ["str"]),
        ("2041", ["not a number (2041)"], ["int"]),
        ("true", ["not true"], ["bool", "True"]),
        (
            '{"invoice_id": ["INV-2041", "INV-2042"}',
            [
                "the '[' at character 15 is closed by '}' at character 38",
                "a ',' or ']' was expected there",
            ],
            ["Expecting"],
        ),
        (
            '{"invoice_id" "INV-2041"}',
            ["at character 14 ('\"')", "a ':' after the key was expected"],
            ["Expecting"],
        ),
        ('{"invoice_id": }', ["at character 15 ('}')", "a value was expected"], ["Expecting"]),
    ],
)
def test_native_argument_refusals_name_json_values_and_where_the_json_broke(
    arguments, words, not_words
):
    args, errors = check_arguments(TOOLS["get_payments"], arguments)
    assert args is None and len(errors) == 1 and "\n" not in errors[0]
    assert all(w in errors[0] for w in words), errors[0]
    message = errors[0].split(", not ")[-1] if "must be a JSON object" in errors[0] else errors[0]
    assert not any(re.search(rf"\b{w}\b", message) for w in not_words), errors[0]

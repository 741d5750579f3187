"""Tool calls leaked into a native reply's text.

Every shape and markup format is found, answers are left alone.
"""

import json

import pytest

from react_lab._parsing.leaks import find_leaks, leaked_calls

CALL = {"invoice_id": "INV-2041"}
SHAPES = {
    "tool_call block": (
        '<tool_call>\n{"name": "get_payments", "arguments": {"invoice_id": "INV-2041"}}\n'
        "</tool_call>"
    ),
    "name/arguments object": (
        'Let me look. {"name": "get_payments", "arguments": {"invoice_id": "INV-2041"}}'
    ),
    "tool_name/tool_input object": (
        '{\n  "tool_name": "get_payments",\n  "tool_input": {"invoice_id": "INV-2041"}\n}'
    ),
    "JSON list": '[{"name": "get_payments", "parameters": {"invoice_id": "INV-2041"}}]',
    "fenced JSON": (
        'I will call it:\n```json\n{"name": "get_payments", '
        '"arguments": "{\\"invoice_id\\": \\"INV-2041\\"}"}\n```'
    ),
    "OpenAI shape as text": (
        '{"type": "function", '
        '"function": {"name": "get_payments", "arguments": {"invoice_id": "INV-2041"}}}'
    ),
    "the grammar's shape": (
        '{"thought": "x", '
        '"tool_calls": [{"name": "get_payments", "arguments": {"invoice_id": "INV-2041"}}]}'
    ),
    "Python literal in a block": (
        "<tool_call>{'name': 'get_payments', 'arguments': {'invoice_id': 'INV-2041'}}</tool_call>"
    ),
}
#: The same call in each model's own markup, and the format it is named by.
MARKUP = {
    "Harmony": (
        "<|channel|>analysis<|message|>Check payments.<|end|>"
        "<|start|>assistant<|channel|>commentary "
        'to=functions.get_payments <|constrain|>json<|message|>{"invoice_id": "INV-2041"}<|call|>'
    ),
    "DeepSeek": (
        "<\uff5ctool\u2581calls\u2581begin\uff5c><\uff5ctool\u2581call\u2581begin\uff5c>function"
        '<\uff5ctool\u2581sep\uff5c>get_payments\n```json\n{"invoice_id": "INV-2041"}\n```'
        "<\uff5ctool\u2581call\u2581end\uff5c><\uff5ctool\u2581calls\u2581end\uff5c>"
    ),
    "Kimi K2": (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_payments:0"
        '<|tool_call_argument_begin|>{"invoice_id": "INV-2041"}'
        "<|tool_call_end|><|tool_calls_section_end|>"
    ),
    "Mistral": '[TOOL_CALLS]get_payments{"invoice_id": "INV-2041"}',
    "Gemma": '<|tool_call>call:get_payments{invoice_id:<|"|>INV-2041<|"|>}<tool_call|>',
    "Qwen3-Coder": (
        "<tool_call>\n<function=get_payments>\n<parameter=invoice_id>\nINV-2041\n</parameter>\n"
        "</function>\n</tool_call>"
    ),
    "MiniMax": (
        '<minimax:tool_call><invoke name="get_payments">'
        '<parameter name="invoice_id">INV-2041</parameter>'
        "</invoke></minimax:tool_call>"
    ),
    "GLM": (
        "<tool_call>get_payments\n<arg_key>invoice_id</arg_key>\n<arg_value>INV-2041</arg_value>\n"
        "</tool_call>"
    ),
    "Llama 3.1": '<function=get_payments>{"invoice_id": "INV-2041"}</function>',
    "Llama 3": (
        '<|python_tag|>{"name": "get_payments", "parameters": {"invoice_id": "INV-2041"}}<|eom_id|>'
    ),
    "LFM2": '<|tool_call_start|>[get_payments(invoice_id="INV-2041")]<|tool_call_end|>',
    "Hermes": (
        '<tool_call>\n{"name": "get_payments", "arguments": {"invoice_id": "INV-2041"}}\n'
        "</tool_call>"
    ),
}
SHAPES.update({f"{fmt} markup": text for fmt, text in MARKUP.items()})


@pytest.mark.parametrize("shape", SHAPES)
def test_every_leaked_shape_is_found(shape):
    calls = leaked_calls(SHAPES[shape])
    assert len(calls) == 1
    assert calls[0]["function"]["name"] == "get_payments"
    assert json.loads(calls[0]["function"]["arguments"]) == CALL
    assert calls[0]["id"] == "leaked_1" and calls[0]["type"] == "function"


@pytest.mark.parametrize("fmt", MARKUP)
def test_each_leak_names_the_format_it_was_written_in(fmt):
    (leak,) = find_leaks(MARKUP[fmt])
    assert leak.format == fmt and leak.call == leaked_calls(MARKUP[fmt])[0]
    assert leak.describe() == f"a {fmt} tool call to get_payments"
    assert MARKUP[fmt][leak.start : leak.end]  # the span is the markup's own


def test_a_bare_json_call_is_named_json_and_markup_spans_are_not_read_twice():
    assert [x.format for x in find_leaks(SHAPES["name/arguments object"])] == ["JSON"]
    both = MARKUP["Mistral"] + "\n" + SHAPES["tool_name/tool_input object"]
    assert [(x.format, x.call["id"]) for x in find_leaks(both)] == [
        ("Mistral", "leaked_1"),
        ("JSON", "leaked_2"),
    ]


def test_a_leak_in_markup_that_is_cut_off_is_passed_on_so_that_it_is_refused():
    # nothing may run on half a call: its arguments go on as written, unclosed
    (cut,) = leaked_calls('[TOOL_CALLS]get_payments{"invoice_id": "INV-20')
    assert cut["function"]["arguments"] == '{"invoice_id": "INV-20'
    (cut,) = leaked_calls("<tool_call>\n<function=get_payments>\n<parameter=invoice_id>\nINV-20")
    with pytest.raises(ValueError):
        json.loads(cut["function"]["arguments"])
    (early,) = leaked_calls("<|channel|>commentary to=functions.get_payments")
    assert early["function"]["arguments"] == '""'


@pytest.mark.parametrize(
    "text",
    [
        'get_payments(invoice_id="INV-2041")',  # a call alone on a line: text protocol only
        "<|channel|>final<|message|>INV-2041 was paid once.<|return|>",  # Harmony's answer channel
        '<tool_call>{"foo": 1}</tool_call>',  # markup that names no tool
        # cut before its arguments: no call to name
        '[TOOL_CALLS]\u2581[{"name":\u2581"get_payments"',
    ],
)
def test_answers_and_nameless_markup_are_not_leaks(text):
    assert leaked_calls(text) == [] and find_leaks(text) == []


def test_spaces_written_as_sentencepiece_markers_are_decoded_first():
    text = (
        '[TOOL_CALLS]\u2581[{"name":\u2581"get_payments",'
        '\u2581"arguments":\u2581{"invoice_id":\u2581"INV-2041"}}]'
    )
    assert json.loads(leaked_calls(text)[0]["function"]["arguments"]) == CALL


def test_a_list_gives_every_call_in_order():
    text = (
        '[{"name": "find_invoice", "arguments": {"invoice_id": "INV-2041"}}, '
        '{"tool_name": "get_payments", "tool_input": {"invoice_id": "INV-2041"}}]'
    )
    assert [c["function"]["name"] for c in leaked_calls(text)] == ["find_invoice", "get_payments"]


@pytest.mark.parametrize(
    "text",
    [
        "No, INV-2041 was charged once.",
        'The customer is {"name": "Acme Corp"}.',
        "Totals: [129.0, 45.0]",
        "{not json",
        "{" * 10_000,
        "[" * 10_000,
        "",
        None,
    ],
)
def test_answers_are_not_calls(text):
    assert leaked_calls(text) == []


# ------------------------------------------------------------------------- the native loop's policy

from helpers.fake_openai import FakeOpenAI  # noqa: E402

from react_lab.lab.agent.native import ask_native  # noqa: E402
from react_lab.lab.backends.chat import OpenAIChatModel  # noqa: E402
from react_lab.tools import call_tool, default_tools  # noqa: E402

QUESTION = "Was cus_8812 charged twice for INV-2041 in July?"


def run_with_replies(replies, **kwargs):
    with FakeOpenAI(chat_replies=replies) as server:
        model = OpenAIChatModel("fake-model", base_url=server.base_url, max_retries=0)
        return ask_native(QUESTION, model, default_tools(), **kwargs), server.requests


@pytest.mark.parametrize("shape", SHAPES)
def test_a_valid_leaked_call_runs_and_is_marked(shape):
    result, requests = run_with_replies(
        [{"content": SHAPES[shape]}, {"content": "No, INV-2041 was paid once."}]
    )
    first, second = result.steps
    assert first.leaked and first.answer is None
    assert first.action == {"tool": "get_payments", "args": CALL}
    tools = default_tools()
    assert first.observation == call_tool(tools, "get_payments", CALL).text  # from the database
    assert not second.leaked and result.answer == "No, INV-2041 was paid once."
    # The conversation the provider saw next holds the call and its result, ids matching.
    sent = requests[1]["messages"]
    assert sent[2]["tool_calls"][0]["id"] == sent[3]["tool_call_id"] == "leaked_1"


@pytest.mark.parametrize("shape", SHAPES)
def test_an_invalid_leaked_call_is_sent_back_not_taken_as_the_answer(shape):
    bad = SHAPES[shape].replace("get_payments", "get_refunds")  # not a declared tool
    result, _ = run_with_replies([{"content": bad}], max_steps=1)
    first = result.steps[0]
    assert first.leaked and first.answer is None and first.action is None
    assert "tool-call field" in first.error and "get_refunds" in first.error
    assert first.observation.startswith("Error: ")
    assert result.answer is None or result.answer.startswith("[best effort]")


def test_leaked_calls_with_bad_arguments_run_nothing():
    text = '{"name": "get_payments", "arguments": {"invoice": "INV-2041"}}'
    result, _ = run_with_replies([{"content": text}], max_steps=1)
    first = result.steps[0]
    assert first.leaked and first.action is None
    assert "invoice_id: required argument is missing" in first.error


def test_a_leaked_step_is_marked_in_the_log():
    from react_lab.lab.experiments.steplogs import step_event

    result, _ = run_with_replies([{"content": SHAPES["tool_call block"]}, {"content": "No."}])
    events = [step_event(s, run_id="r") for s in result.steps]
    assert [e["leaked"] for e in events] == [True, False]


def test_a_number_too_large_for_a_float_in_bare_key_markup_never_becomes_infinity():
    """``{n:1e400}`` read as ``inf`` went on as ``{"n": Infinity}``, which is not JSON."""
    import json

    from react_lab._parsing.json_errors import decode_json
    from react_lab._parsing.leaks import leaked_calls

    [call] = leaked_calls("<|tool_call>call:search{n:1e400}<tool_call|>")
    arguments = call["function"]["arguments"]
    assert "Infinity" not in arguments and decode_json(arguments)[1] is not None
    [call] = leaked_calls("<|tool_call>call:search{n:1e4}<tool_call|>")
    assert json.loads(call["function"]["arguments"]) == {"n": 10000.0}

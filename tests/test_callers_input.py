"""What a caller (not the model) gets wrong, and arguments no reading may change.

A caller's mistake is a clear ``TypeError`` naming it, before or at the model call: a model
whose method returns a bare string, ``parse(text, tools=5)``. What the lesson's functions
are given in the shapes a learner has at hand works: ``build_prompt`` with
``default_tools()`` (a dict), ``ask(..., transcript=)`` and ``ask_native(..., messages=)``
to watch a run. And an argument is never changed on its way to the tool: a value written as
text in another model's markup (``<parameter=invoice_id>2041</parameter>``) reaches a
string parameter as the text written; a ``]`` inside a quoted argument of the paper's
``tool[input]`` does not end it.
"""

import json

import pytest

from react_lab.lab.agent.guards import Guards
from react_lab.lab.agent.loop import ask
from react_lab.lab.agent.native import ask_native
from react_lab.lab.agent.parser import parse, read_reply
from react_lab.lab.agent.trace import Transcript
from react_lab.lab.backends.chat import ScriptedChatModel
from react_lab.lab.backends.scripted import ScriptedModel
from react_lab.protocol import build_prompt
from react_lab.tools import declared, default_tools

TOOLS = default_tools()


class StringModel:
    """A learner's first wrapper: returns the text, not a completion."""

    def complete(self, prompt, stop=None, max_tokens=None):
        return "Answer: 42"

    def chat(self, messages, tools=None, max_tokens=None, tool_choice=None):
        return "42"


def test_a_model_that_returns_a_string_is_told_what_to_return():
    with pytest.raises(TypeError, match=r"StringModel\.complete\(\.\.\.\) returned str .*text"):
        ask("What is 6 * 7?", StringModel(), TOOLS)
    with pytest.raises(TypeError, match=r"StringModel\.chat\(\.\.\.\) returned str .*content"):
        ask_native("What is 6 * 7?", StringModel(), TOOLS)


def test_parse_refuses_tools_that_are_not_names_as_the_callers_mistake():
    with pytest.raises(TypeError, match="tools must be tool names"):
        parse("Action: search[x]", tools=5)
    assert parse("Action: search[x]", tools=TOOLS).tool == "search"  # a dict: its names


def test_build_prompt_takes_the_tools_as_default_tools_gives_them():
    assert build_prompt("Why?", TOOLS) == build_prompt("Why?", TOOLS.values())


def test_ask_and_ask_native_fill_the_transcript_or_messages_a_caller_passes():
    transcript, messages = Transcript(), []
    result = ask("Why?", ScriptedModel(["Answer: because"]), TOOLS, transcript=transcript)
    assert result.answer == "because" and transcript.text.endswith("Answer: because\n")
    model = ScriptedChatModel([{"thought": "t", "answer": "because"}])
    result = ask_native("Why?", model, TOOLS, messages=messages)
    assert result.answer == "because" and messages[-1]["content"] == "because"


QWEN = "<function=find_invoice><parameter=invoice_id>{}</parameter></function>"
GLM = "<tool_call>search<arg_key>query</arg_key><arg_value>{}</arg_value></tool_call>"


@pytest.mark.parametrize(
    "text,want",
    [
        (QWEN.format("2041"), {"invoice_id": "2041"}),
        (QWEN.format("null"), {"invoice_id": "null"}),
        (QWEN.format(" 1e3 "), {"invoice_id": "1e3"}),
        (GLM.format("true"), {"query": "true"}),
        (GLM.format('{"a": 1}'), {"query": '{"a": 1}'}),
        (GLM.format("[1, 2]"), {"query": "[1, 2]"}),
    ],
)
def test_a_value_written_as_text_reaches_a_string_parameter_as_written(text, want):
    assert parse(text, tools=declared(TOOLS)).input == want  # the text parser
    (leak,) = read_reply(text, declared(TOOLS)).calls  # a native reply's text
    assert json.loads(leak.call["function"]["arguments"]) == want


def test_a_value_written_as_text_is_read_as_json_where_the_schema_wants_another_type():
    params = {"days": {"type": "integer"}, "opts": {"type": "object"}, "note": {}}
    text = (
        "<function=forecast><parameter=days>3</parameter><parameter=opts>"
        '{"a": [1]}</parameter><parameter=note>7</parameter></function>'
    )
    assert parse(text, tools={"forecast": params}).input == {
        "days": 3,
        "opts": {"a": [1]},
        "note": 7,
    }
    # names alone declare no type: JSON when it is JSON, as before
    assert parse(QWEN.format("2041"), tools=list(TOOLS)).input == {"invoice_id": 2041}


def test_the_text_loop_gives_the_tool_the_text_the_model_wrote():
    model = ScriptedModel([QWEN.format("2041"), "Answer: none"])
    result = ask("Find invoice 2041", model, TOOLS)
    assert result.steps[0].action == {"tool": "find_invoice", "args": {"invoice_id": "2041"}}
    assert "no invoice '2041'" in result.steps[0].observation


def test_the_native_loop_runs_a_leaked_call_with_the_text_the_model_wrote():
    leaked = "<function=search><parameter=query>2041</parameter></function>"
    model = ScriptedChatModel(
        [{"thought": "t", "answer": leaked}, {"thought": "t", "answer": "done"}]
    )
    step = ask_native("Which article says 2041?", model, TOOLS).steps[0]
    assert step.leaked and step.error is None, step
    assert step.action["args"] == {"query": "2041"}  # the integer 2041 fails the schema


@pytest.mark.parametrize(
    "text,want",
    [
        ('Action: search["a]b"]', "a]b"),
        ('Action: search[{"query": "refund ] policy"}]', {"query": "refund ] policy"}),
        ('Action: search["a]b"] and then more', "a]b"),
        ("Action: search[it's]", "it's"),  # an apostrophe opens no string
        ('Action: search["never closed]', "never closed"),  # read as before
        ("Action: search[refunds] [x]", "refunds"),
    ],
)
def test_a_bracket_inside_a_quoted_argument_does_not_end_the_call(text, want):
    result = parse(text, tools=TOOLS)
    assert (result.kind, result.tool, result.input) == ("action", "search", want)


@pytest.mark.parametrize(
    "action, args",
    [
        ('Action: search["refund, late fee"]', ["refund, late fee"]),
        ('Action: search("refund, late fee")', ["refund, late fee"]),
        ('Action: list_invoices["cus_8812", "2026-07-01"]', ["cus_8812", "2026-07-01"]),
        ('Action: list_invoices("cus_8812", "2026-07-01")', ["cus_8812", "2026-07-01"]),
        ("Action: search[refunds, duplicates]", ["refunds", "duplicates"]),  # 04's abuse: split
    ],
)
def test_a_comma_inside_a_quoted_value_stays_in_it(action, args):
    assert parse(action, tools=TOOLS).args == args


@pytest.mark.parametrize(
    "args",
    [
        ["cus_8812", "since=2026-07-01"],
        ["customer_id=cus_8812", "since=2026-07-01"],
        ["since=2026-07-01", "customer_id=cus_8812"],
    ],
)
def test_arguments_named_in_part_or_whole_reach_their_parameters(args):
    from react_lab.tools import call_tool

    named = call_tool(TOOLS, "list_invoices", args)
    assert named.error is None and named.value == (
        call_tool(TOOLS, "list_invoices", ["cus_8812", "2026-07-01"]).value
    )


@pytest.mark.parametrize(
    "args, words",
    [
        (["customer_id=cus_8812", "2026-07-01"], "comes after a named argument"),
        (["cus_8812", "customer_id=cus_1"], "customer_id is given twice"),
    ],
)
def test_a_value_after_a_named_one_or_a_parameter_twice_is_refused(args, words):
    from react_lab.tools import call_tool

    assert words in call_tool(TOOLS, "list_invoices", args).error


@pytest.mark.parametrize(
    "text",
    [
        "<function=list_invoices><parameter=customer_id>cus_4417</parameter>"
        "<parameter=customer_id>cus_9999</parameter></function>",
        "<tool_call>list_invoices<arg_key>customer_id</arg_key><arg_value>cus_4417</arg_value>"
        "<arg_key>customer_id</arg_key><arg_value>cus_9999</arg_value></tool_call>",
    ],
)
def test_a_parameter_given_twice_in_markup_is_refused_not_guessed(text):
    r = parse(text, tools=declared(TOOLS))
    assert r.kind == "error" and "'customer_id' twice" in r.reason
    assert read_reply(text, declared(TOOLS)).calls[0].problem


def test_parse_reads_none_as_an_empty_completion_and_refuses_tools_that_are_not_names():
    assert "empty completion" in parse(None).reason
    for tools in ([None], [{"type": "function"}]):
        with pytest.raises(TypeError, match="tools must be tool names"):
            parse("Action: search[x]", tools=tools)


@pytest.mark.parametrize(
    "args",
    [(["search"],), (TOOLS, "one exemplar"), (TOOLS, None, None)],
    ids=["names", "a string of exemplars", "no instructions"],
)
def test_build_prompt_names_what_it_cannot_take(args):
    with pytest.raises(TypeError, match="build_prompt takes Tool objects"):
        build_prompt("Why?", *args)


def _tool(name="note", fn=lambda text: text, **properties):
    from react_lab.schema import object_schema
    from react_lab.tools import Tool

    return Tool(name, fn, "a test tool", object_schema(**(properties or {"text": {}})))


@pytest.mark.parametrize(
    "tool, words",
    [
        (_tool(fn=lambda: "x"), "does not take the parameters its schema declares"),
        (_tool(text="string"), "must be a JSON Schema object"),
        (_tool(name="bad name"), "cannot be called in the text protocol"),
    ],
    ids=["function", "schema", "name"],
)
def test_a_tool_no_call_could_run_is_refused_before_the_model_is_called(tool, words):
    model = ScriptedModel(["Answer: x"])
    with pytest.raises((TypeError, ValueError), match=words):
        ask("Why?", model, {tool.name: tool})
    assert model.prompts == []


def test_the_native_loop_takes_a_tool_name_the_text_protocol_cannot_write():
    tool = _tool(name="get-note")  # MCP servers name tools so
    model = ScriptedChatModel([{"thought": "t", "answer": "fine"}])
    assert ask_native("Why?", model, {tool.name: tool}).answer == "fine"


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"stop": ["X"]}, "stop must be True"),
        ({"guards": Guards(retry_cap=0)}, "retry_cap"),
    ],
    ids=["stop", "retry_cap"],
)
def test_settings_that_would_be_misread_are_refused(kwargs, words):
    with pytest.raises(TypeError, match=words):
        ask("Why?", ScriptedModel(["Answer: x"]), TOOLS, **kwargs)


def test_the_native_loop_refuses_messages_and_system_of_the_wrong_shape():
    model = ScriptedChatModel([{"thought": "t", "answer": "fine"}])
    for kwargs in ({"messages": "x"}, {"messages": [{"a": 1}]}, {"system": None}):
        with pytest.raises(TypeError, match="messages|system"):
            ask_native("Why?", model, TOOLS, **kwargs)


def test_a_function_that_does_not_fit_its_schema_is_named_broken_not_the_call():
    from react_lab.tools import call_tool

    tool = _tool(fn=lambda other: other)
    obs = call_tool({tool.name: tool}, tool.name, {"text": "hi"})
    assert "note is broken" in obs.error and "the call was right" in obs.error

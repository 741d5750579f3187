"""Native tool calling: the schema check, the reply grammar, the native loop, its exemplar."""

import json

import jsonschema
import pytest
from helpers.native_samples import CALL_THEN_ANSWER, JULY
from hypothesis import given, settings
from hypothesis import strategies as st

from react_lab.lab.agent.native import ask_native, run_native
from react_lab.lab.backends.chat import (
    LocalChatModel,
    ScriptedChatModel,
    parse_reply,
)
from react_lab.lab.backends.grammar import (
    decodable,
    reply_grammar,
    reply_schema,
)
from react_lab.lab.guards import LabGuards
from react_lab.lab.notebook.tables import transcript_text
from react_lab.messages import SYSTEM
from react_lab.protocol import EXEMPLARS
from react_lab.schema import check_arguments, clean_arguments, validate_call
from react_lab.tools import Tool, default_tools, tool_schemas

TOOLS = default_tools()
LIST = TOOLS["list_invoices"]


# ---- validate_call: errors name the field --------------------------------------------------


def test_valid_call_has_no_errors():
    assert validate_call(LIST, JULY) == []


@pytest.mark.parametrize(
    "args,field,words",
    [
        ({"customer_id": "cus_8812"}, "since", "required argument is missing"),
        ({**JULY, "include_deleted": True}, "include_deleted", "not a declared argument"),
        ({"customer_id": "cus_8812", "since": "July 1st"}, "since", "is not a 'date'"),
        # format, not pattern
        ({"customer_id": "cus_8812", "since": "2026-02-30"}, "since", "is not a 'date'"),
        ({"customer_id": "8812", "since": "2026-07-01"}, "customer_id", "does not match"),
        ({"customer_id": 8812, "since": "2026-07-01"}, "customer_id", "is not of type 'string'"),
    ],
)
def test_each_error_starts_with_the_field_it_is_about(args, field, words):
    errors = validate_call(LIST, args)
    assert any(e.startswith(f"{field}:") and words in e for e in errors), errors


def test_non_objects_are_errors_not_exceptions():
    assert "must be a JSON object" in validate_call(LIST, ["cus_8812", "2026-07-01"])[0]
    args, errors = check_arguments(LIST, '{"customer_id": "cus_8812" "since": "2026-07-01"}')
    assert args is None and "not valid JSON" in errors[0] and "character 27" in errors[0]
    assert check_arguments(LIST, json.dumps(JULY)) == (JULY, [])


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def test_two_undeclared_names_that_print_alike_get_two_messages():
    # found by the property below: " " and "\r" both printed as a blank before the colon
    errors = validate_call(TOOLS["calc"], {" ": None, "\r": None})
    assert len(set(errors)) == len(errors) == 3
    assert (
        "' ': not a declared argument" in errors[1]
        and "'\\r': not a declared argument" in errors[2]
    )


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(st.one_of(st.text(max_size=16), st.integers(), st.none()), JSON, max_size=6),
    st.sampled_from(sorted(TOOLS)),
)
def test_validate_call_never_raises_on_arbitrary_dicts(args, name):
    errors = validate_call(TOOLS[name], args)
    assert all(isinstance(e, str) and e for e in errors)
    assert len(set(errors)) == len(errors)  # one message per problem
    # the schema check and jsonschema agree on what is valid, after the argument rule
    # (strings stripped; a control character inside is refused: see react_lab.schema)
    cleaned, refused = clean_arguments(TOOLS[name], args)
    valid = (
        jsonschema.Draft202012Validator(
            TOOLS[name].parameters, format_checker=jsonschema.FormatChecker()
        ).is_valid(cleaned)
        if all(isinstance(k, str) for k in args)
        else None
    )
    if valid is not None:
        assert (errors == []) == (valid and not refused)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=80), JSON))
def test_check_arguments_and_parse_reply_never_raise(value):
    args, errors = check_arguments(LIST, value)
    assert errors or isinstance(args, dict)  # no errors only for a decoded object
    reply = parse_reply(value if isinstance(value, str) else json.dumps(value))
    assert bool(reply.tool_calls) == (reply.finish_reason == "tool_calls")
    assert reply.finish_reason != "length" or (reply.content is None and not reply.tool_calls)


# ---- the reply schema and the grammar's schema ----------------------------------------------


def test_reply_schema_accepts_calls_and_answers_and_refuses_abuses():
    schema = reply_schema(tool_schemas(TOOLS))
    check = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    assert check.is_valid(CALL_THEN_ANSWER[0]) and check.is_valid(CALL_THEN_ANSWER[1])
    bad = {
        "thought": "",
        "tool_calls": [{"name": "list_invoices", "arguments": {"customer_id": "cus_8812"}}],
    }
    assert not check.is_valid(bad)
    assert not check.is_valid({"thought": "", "tool_calls": [{"name": "serch", "arguments": {}}]})
    required = reply_schema(tool_schemas(TOOLS), tool_choice="required")
    assert not jsonschema.Draft202012Validator(required).is_valid(CALL_THEN_ANSWER[1])
    with pytest.raises(ValueError, match="tool_choice"):
        reply_schema(tool_schemas(TOOLS), tool_choice="any")


def test_decodable_rewrites_what_the_converter_cannot_parse():
    schema = decodable(LIST.parameters)
    assert "pattern" not in schema["properties"]["since"]  # the date rule is stricter
    assert schema["properties"]["since"]["format"] == "date"
    assert decodable({"pattern": r"^\d{4}$"}) == {"pattern": "^[0-9]{4}$"}
    assert LIST.parameters["properties"]["since"]["pattern"] == r"^\d{4}-\d{2}-\d{2}$"  # a copy
    grammar = reply_grammar(tool_schemas(TOOLS))
    assert "\\d" not in grammar and "root ::=" in grammar


# ---- parsing replies --------------------------------------------------------------------------


def test_parse_reply_shapes_openai_tool_calls():
    reply = parse_reply(json.dumps(CALL_THEN_ANSWER[0]), call_prefix="call_2")
    assert reply.finish_reason == "tool_calls" and reply.thought == "I need the July invoices."
    assert reply.tool_calls == [
        {
            "id": "call_2_1",
            "type": "function",
            "function": {"name": "list_invoices", "arguments": json.dumps(JULY)},
        }
    ]
    assert reply.message()["tool_calls"] == reply.tool_calls
    answer = parse_reply(json.dumps(CALL_THEN_ANSWER[1]))
    assert answer.content.startswith("Two invoices") and answer.finish_reason == "stop"
    cut = parse_reply('{"thought": "a refund of a refund of a')
    assert cut.finish_reason == "length" and not cut.tool_calls and cut.content is None
    assert parse_reply('{"thought": "line\nbreak", "answer": "x"}').content == "x"  # raw newline


# ---- the native loop on a scripted model --------------------------------------------------------


def test_native_loop_sends_schemas_and_returns_results_by_call_id():
    model = ScriptedChatModel(CALL_THEN_ANSWER)
    result = ask_native(
        "How many invoices did cus_8812 receive in July 2026?", model, TOOLS, guards=LabGuards()
    )
    assert result.stopped_by == "answer" and result.answer.startswith("Two invoices")
    first, second = result.steps
    assert first.action == {"tool": "list_invoices", "args": JULY}
    assert first.observation.count('"INV-2041"') == 2 and first.error is None
    messages, tools = model.requests[1]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool"]
    assert messages[3]["tool_call_id"] == messages[2]["tool_calls"][0]["id"]
    assert tools[: len(TOOLS)] == tool_schemas(TOOLS)  # then `more`: long observations are paged
    assert [t["function"]["name"] for t in tools[len(TOOLS) :]] == ["more"]
    owners = [o for o, _ in result.transcript.spans]
    assert owners == ["prompt", "model", "loop", "model"]
    assert "Question: How many invoices" in transcript_text(result.transcript)
    lesson = ScriptedChatModel(CALL_THEN_ANSWER)  # the lesson's guards page nothing: no `more`
    ask_native("How many invoices did cus_8812 receive in July 2026?", lesson, TOOLS)
    assert lesson.requests[1][1] == tool_schemas(TOOLS)


def test_invalid_arguments_are_refused_before_the_tool_runs():
    ran = []
    spy = Tool(
        "list_invoices", lambda customer_id, since: ran.append(1) or [], "spy", LIST.parameters
    )
    model = ScriptedChatModel(
        [
            {
                "thought": "",
                "tool_calls": [
                    {
                        "name": "list_invoices",
                        "arguments": {"customer_id": "cus_8812", "since": "July 1st"},
                    }
                ],
            },
            {"thought": "", "answer": "done"},
        ]
    )
    step = next(run_native("q", model, {"list_invoices": spy}))
    assert ran == [] and step.observation.startswith("Error: list_invoices was not run")
    assert "since: 'July 1st' is not a 'date'" in step.error
    unknown = ScriptedChatModel(
        [{"thought": "", "tool_calls": [{"name": "serch", "arguments": {}}]}]
    )
    step = next(run_native("q", unknown, TOOLS))
    assert step.error.startswith("unknown tool 'serch'; available: list_invoices")


def test_cut_off_reply_is_an_error_step_and_the_limit_ends_the_run():
    model = ScriptedChatModel(['{"thought": "a refund of a refund of'])
    result = ask_native("q", model, TOOLS, max_steps=2)
    assert result.stopped_by == "max_steps" and result.answer is None
    assert "cut off" in result.steps[0].error and result.steps[-1].guard == "max_steps"
    assert model.requests[1][0][-1]["role"] == "user"  # the loop told the model


def test_several_calls_in_one_reply_are_all_recorded_on_the_step():
    model = ScriptedChatModel(
        [
            {
                "thought": "both",
                "tool_calls": [
                    {"name": "get_charge", "arguments": {"charge_id": "ch_1KZq8f"}},
                    {"name": "find_invoice", "arguments": {"invoice_id": "INV-2041"}},
                ],
            },
            {"thought": "", "answer": "ok"},
        ]
    )
    step = next(run_native("q", model, TOOLS))
    assert step.action["tool"] == "get_charge" and [c["tool"] for c in step.action["calls"]] == [
        "get_charge",
        "find_invoice",
    ]
    assert len(step.observation.splitlines()) == 2
    messages = model.requests[0][0]
    assert messages[0]["role"] == "system"


# ---- the native exemplar (exemplar_messages: tests/test_tool_calls.py) ---------------------------


def test_a_run_with_the_exemplar_starts_from_it_and_shows_it_as_prompt():
    model = ScriptedChatModel(CALL_THEN_ANSWER)
    result = ask_native(
        "How many invoices did cus_8812 receive in July 2026?",
        model,
        TOOLS,
        exemplars=EXEMPLARS[:1],
    )
    first = model.requests[0][0]
    assert [m["role"] for m in first] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]
    assert first[-1]["content"].startswith("How many invoices")
    owners = [o for o, _ in result.transcript.spans]
    assert owners == ["prompt", "model", "loop", "model"]
    prompt = result.transcript.spans[0][1]
    assert "cus_4417" in prompt and "Question: How many invoices" in prompt
    rendered = LocalChatModel.render(None, first, tool_schemas(TOOLS))
    assert rendered.count("<|im_start|>") == 7 and "Result of example_1_1: [" in rendered
    assert (
        json.dumps({"thought": EXEMPLARS[0].final_thought, "answer": EXEMPLARS[0].answer})
        in rendered
    )


def test_the_native_ladder_rungs_start_from_the_prompt_the_model_reads():
    from react_lab.lab.experiments.ladder import choose_tasks, first_prompt, get_config

    task = choose_tasks("test", per_category=1)[0]
    with_exemplar = first_prompt(get_config("native_exemplar"), task)
    assert with_exemplar.startswith("<|im_start|>system\n" + SYSTEM)
    assert "Result of example_1_1: " in with_exemplar and task.question in with_exemplar
    assert "example_1_1" not in first_prompt(get_config("native"), task)
    pooled = first_prompt(get_config("native_pool_k1"), task)
    # chosen for the question
    assert "Result of example_1_1: " in pooled and pooled != with_exemplar

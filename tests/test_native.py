"""Native tool calling: the schema check, the reply grammar, the native loop, the backends."""
import json
from types import SimpleNamespace

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from react_lab.backends.chat import (
    ChatReply,
    LocalChatModel,
    OpenAIChatModel,
    ScriptedChatModel,
    parse_reply,
)
from react_lab.backends.grammar import (
    decodable,
    grammar_check,
    reply_grammar,
    reply_schema,
)
from react_lab.cli import main
from react_lab.native import SYSTEM, ask_native, run_native
from react_lab.schema import check_arguments, clean_arguments, validate_call
from react_lab.tools import Tool, default_tools, tool_schemas

TOOLS = default_tools()
LIST = TOOLS["list_invoices"]
JULY = {"customer_id": "cus_8812", "since": "2026-07-01"}
CALL_THEN_ANSWER = [
    {"thought": "I need the July invoices.",
     "tool_calls": [{"name": "list_invoices", "arguments": JULY}]},
    {"thought": "Two invoices, one emailed twice.", "answer": "Two invoices: INV-2041 and INV-2116."},
]


# ---- validate_call: errors name the field --------------------------------------------------

def test_valid_call_has_no_errors():
    assert validate_call(LIST, JULY) == []


@pytest.mark.parametrize("args,field,words", [
    ({"customer_id": "cus_8812"}, "since", "required argument is missing"),
    ({**JULY, "include_deleted": True}, "include_deleted", "not a declared argument"),
    ({"customer_id": "cus_8812", "since": "July 1st"}, "since", "is not a 'date'"),
    ({"customer_id": "cus_8812", "since": "2026-02-30"}, "since", "is not a 'date'"),  # format, not pattern
    ({"customer_id": "8812", "since": "2026-07-01"}, "customer_id", "does not match"),
    ({"customer_id": 8812, "since": "2026-07-01"}, "customer_id", "is not of type 'string'"),
])
def test_each_error_starts_with_the_field_it_is_about(args, field, words):
    errors = validate_call(LIST, args)
    assert any(e.startswith(f"{field}:") and words in e for e in errors), errors


def test_non_objects_are_errors_not_exceptions():
    assert "must be a JSON object" in validate_call(LIST, ["cus_8812", "2026-07-01"])[0]
    args, errors = check_arguments(LIST, '{"customer_id": "cus_8812" "since": "2026-07-01"}')
    assert args is None and "not valid JSON" in errors[0] and "character 27" in errors[0]
    assert check_arguments(LIST, json.dumps(JULY)) == (JULY, [])


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.one_of(st.text(max_size=16), st.integers(), st.none()), JSON, max_size=6),
       st.sampled_from(sorted(TOOLS)))
def test_validate_call_never_raises_on_arbitrary_dicts(args, name):
    errors = validate_call(TOOLS[name], args)
    assert all(isinstance(e, str) and e for e in errors)
    assert len(set(errors)) == len(errors)  # one message per problem
    # the schema check and jsonschema agree on what is valid, after the argument rule
    # (strings stripped; a control character inside is refused: see react_lab.schema)
    cleaned, refused = clean_arguments(TOOLS[name], args)
    valid = jsonschema.Draft202012Validator(
        TOOLS[name].parameters, format_checker=jsonschema.FormatChecker()).is_valid(cleaned) \
        if all(isinstance(k, str) for k in args) else None
    if valid is not None:
        assert (errors == []) == (valid and not refused)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=80), JSON))
def test_check_arguments_and_parse_reply_never_raise(value):
    args, errors = check_arguments(LIST, value)
    assert errors or isinstance(args, dict)          # no errors only for a decoded object
    reply = parse_reply(value if isinstance(value, str) else json.dumps(value))
    assert bool(reply.tool_calls) == (reply.finish_reason == "tool_calls")
    assert reply.finish_reason != "length" or (reply.content is None and not reply.tool_calls)


# ---- the reply schema and the grammar's schema ----------------------------------------------

def test_reply_schema_accepts_calls_and_answers_and_refuses_abuses():
    schema = reply_schema(tool_schemas(TOOLS))
    check = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    assert check.is_valid(CALL_THEN_ANSWER[0]) and check.is_valid(CALL_THEN_ANSWER[1])
    bad = {"thought": "", "tool_calls": [{"name": "list_invoices",
                                          "arguments": {"customer_id": "cus_8812"}}]}
    assert not check.is_valid(bad)
    assert not check.is_valid({"thought": "", "tool_calls": [{"name": "serch", "arguments": {}}]})
    required = reply_schema(tool_schemas(TOOLS), tool_choice="required")
    assert not jsonschema.Draft202012Validator(required).is_valid(CALL_THEN_ANSWER[1])
    with pytest.raises(ValueError, match="tool_choice"):
        reply_schema(tool_schemas(TOOLS), tool_choice="any")


def test_decodable_rewrites_what_the_converter_cannot_parse():
    schema = decodable(LIST.parameters)
    assert "pattern" not in schema["properties"]["since"]          # the date rule is stricter
    assert schema["properties"]["since"]["format"] == "date"
    assert decodable({"pattern": r"^\d{4}$"}) == {"pattern": "^[0-9]{4}$"}
    assert LIST.parameters["properties"]["since"]["pattern"] == r"^\d{4}-\d{2}-\d{2}$"  # a copy
    grammar = reply_grammar(tool_schemas(TOOLS))
    assert "\\d" not in grammar and "root ::=" in grammar


# ---- parsing replies --------------------------------------------------------------------------

def test_parse_reply_shapes_openai_tool_calls():
    reply = parse_reply(json.dumps(CALL_THEN_ANSWER[0]), call_prefix="call_2")
    assert reply.finish_reason == "tool_calls" and reply.thought == "I need the July invoices."
    assert reply.tool_calls == [{"id": "call_2_1", "type": "function", "function": {
        "name": "list_invoices", "arguments": json.dumps(JULY)}}]
    assert reply.message()["tool_calls"] == reply.tool_calls
    answer = parse_reply(json.dumps(CALL_THEN_ANSWER[1]))
    assert answer.content.startswith("Two invoices") and answer.finish_reason == "stop"
    cut = parse_reply('{"thought": "a refund of a refund of a')
    assert cut.finish_reason == "length" and not cut.tool_calls and cut.content is None
    assert parse_reply('{"thought": "line\nbreak", "answer": "x"}').content == "x"  # raw newline


# ---- the native loop on a scripted model --------------------------------------------------------

def test_native_loop_sends_schemas_and_returns_results_by_call_id():
    model = ScriptedChatModel(CALL_THEN_ANSWER)
    result = ask_native("How many invoices did cus_8812 receive in July 2026?", model, TOOLS)
    assert result.stopped_by == "answer" and result.answer.startswith("Two invoices")
    first, second = result.steps
    assert first.action == {"tool": "list_invoices", "args": JULY}
    assert first.observation.count('"INV-2041"') == 2 and first.error is None
    messages, tools = model.requests[1]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool"]
    assert messages[3]["tool_call_id"] == messages[2]["tool_calls"][0]["id"]
    assert tools[:len(TOOLS)] == tool_schemas(TOOLS)  # then `more`: long observations are paged
    assert [t["function"]["name"] for t in tools[len(TOOLS):]] == ["more"]
    owners = [o for o, _ in result.transcript.spans]
    assert owners == ["prompt", "model", "loop", "model"]
    assert "Question: How many invoices" in result.transcript.render_text()


def test_invalid_arguments_are_refused_before_the_tool_runs():
    ran = []
    spy = Tool("list_invoices", lambda customer_id, since: ran.append(1) or [], "spy",
               LIST.parameters)
    model = ScriptedChatModel([{"thought": "", "tool_calls": [
        {"name": "list_invoices", "arguments": {"customer_id": "cus_8812", "since": "July 1st"}}]},
        {"thought": "", "answer": "done"}])
    step = next(run_native("q", model, {"list_invoices": spy}))
    assert ran == [] and step.observation.startswith("Error: list_invoices was not run")
    assert "since: 'July 1st' is not a 'date'" in step.error
    unknown = ScriptedChatModel([{"thought": "", "tool_calls": [{"name": "serch", "arguments": {}}]}])
    step = next(run_native("q", unknown, TOOLS))
    assert step.error.startswith("unknown tool 'serch'; available: list_invoices")


def test_cut_off_reply_is_an_error_step_and_the_limit_ends_the_run():
    model = ScriptedChatModel(['{"thought": "a refund of a refund of'])
    result = ask_native("q", model, TOOLS, max_steps=2)
    assert result.stopped_by == "max_steps" and result.answer is None
    assert "cut off" in result.steps[0].error and result.steps[-1].guard == "max_steps"
    assert model.requests[1][0][-1]["role"] == "user"  # the loop told the model


def test_several_calls_in_one_reply_are_all_recorded_on_the_step():
    model = ScriptedChatModel([{"thought": "both", "tool_calls": [
        {"name": "get_charge", "arguments": {"charge_id": "ch_1KZq8f"}},
        {"name": "find_invoice", "arguments": {"invoice_id": "INV-2041"}}]}, {"thought": "", "answer": "ok"}])
    step = next(run_native("q", model, TOOLS))
    assert step.action["tool"] == "get_charge" and [c["tool"] for c in step.action["calls"]] == [
        "get_charge", "find_invoice"]
    assert len(step.observation.splitlines()) == 2
    messages = model.requests[0][0]
    assert messages[0]["role"] == "system"


# ---- the OpenAI-compatible backend, with a fake client ------------------------------------------

def test_openai_chat_model_passes_tools_and_reads_tool_calls():
    sent = {}

    def create(**kwargs):
        sent.update(kwargs)
        call = SimpleNamespace(id="call_abc", function=SimpleNamespace(
            name="list_invoices", arguments=json.dumps(JULY)))
        message = SimpleNamespace(content=None, tool_calls=[call])
        return SimpleNamespace(choices=[SimpleNamespace(message=message, finish_reason="tool_calls")],
                               usage=SimpleNamespace(prompt_tokens=120, completion_tokens=20))

    client = SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(create=create)))
    model = OpenAIChatModel("gpt-test", client=client)
    reply = model.chat([{"role": "user", "content": "q"}], tools=tool_schemas(TOOLS))
    assert sent["tools"] == tool_schemas(TOOLS) and sent["model"] == "gpt-test"
    assert reply.tool_calls[0]["function"]["arguments"] == json.dumps(JULY)
    assert reply.finish_reason == "tool_calls" and reply.prompt_tokens == 120
    assert isinstance(reply, ChatReply)


def test_cli_ask_native_json_keeps_the_text_keys(tmp_path, capsys):
    path = tmp_path / "replies.json"
    path.write_text(json.dumps(CALL_THEN_ANSWER))
    assert main(["ask", "How many invoices?", "--protocol", "native", "--model",
                 f"scripted:{path}", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["stopped_by"] == "answer" and out["answer"].startswith("Two invoices")
    assert {"step", "thought", "action", "observation", "error"} <= set(out["steps"][0])
    assert out["steps"][0]["action"] == {"tool": "list_invoices", "args": JULY}


# ---- the embedded model, for real ----------------------------------------------------------------

QUESTIONS = [
    "How many invoices did cus_8812 receive in July 2026?",
    "Has supplier invoice INV-2291 been paid?",
    "What is the status of charge ch_1KZq8f?",
    "What is the refund policy?",
    "What did INV-2041 cost?",
]


@pytest.mark.model
def test_constrained_decoding_on_the_embedded_model_writes_only_schema_valid_calls():
    model = LocalChatModel()
    schemas = tool_schemas(TOOLS)
    for question in QUESTIONS:
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
        reply = model.chat(messages, tools=schemas, max_tokens=160, tool_choice="required")
        assert reply.finish_reason in {"tool_calls", "length"}, reply.text
        for call in reply.tool_calls:  # a cut-off reply has none, so nothing invalid ran
            name = call["function"]["name"]
            assert name in TOOLS
            assert check_arguments(TOOLS[name], call["function"]["arguments"])[1] == []
    # and the grammar the loop uses refuses a missing argument character by character
    grammar = reply_grammar(schemas)
    ok = json.dumps({"thought": "", "tool_calls": [{"name": "list_invoices", "arguments": JULY}]})
    assert grammar_check(grammar, ok).accepted
    check = grammar_check(grammar, ok.replace(', "since": "2026-07-01"', ""))
    assert not check.accepted and check.char == "}"


@pytest.mark.model
def test_cli_ask_native_runs_structured_calls_on_the_embedded_model(capsys, shipped_db_unchanged):
    assert main(["ask", "How many invoices did cus_8812 receive in July 2026?", "--protocol",
                 "native", "--max-steps", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    calls = [s["action"] for s in out["steps"] if s["action"]]
    assert calls and out["stopped_by"] in {"answer", "max_steps"}  # it does call, greedily
    for action in calls:
        assert action["tool"] in TOOLS and validate_call(TOOLS[action["tool"]], action["args"]) == []

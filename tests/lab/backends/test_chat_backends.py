"""The chat backends with native tool calls: the OpenAI-compatible backend and the CLI, the
reply grammar on the embedded model's vocabulary, tool_choice on every backend, and over HTTP
(the lab's fake server; llama-cpp-python's chatml-function-calling handler)."""

import json
from types import SimpleNamespace

import jsonschema
import pytest
from helpers.native_samples import CALL_THEN_ANSWER, JULY

from react_lab.lab.agent.native import ask_native, run_native
from react_lab.lab.backends.chat import (
    ChatReply,
    OpenAIChatModel,
    ScriptedChatModel,
)
from react_lab.lab.backends.grammar import (
    check_tool_choice,
    decodable,
    grammar_check,
    reply_grammar,
    reply_schema,
)
from react_lab.lab.cli import main
from react_lab.tools import default_tools, tool_schemas

TOOLS = default_tools()


# ---- the OpenAI-compatible backend, with a fake client ------------------------------------------


def test_openai_chat_model_passes_tools_and_reads_tool_calls():
    sent = {}

    def create(**kwargs):
        sent.update(kwargs)
        call = SimpleNamespace(
            id="call_abc",
            function=SimpleNamespace(name="list_invoices", arguments=json.dumps(JULY)),
        )
        message = SimpleNamespace(content=None, tool_calls=[call])
        return SimpleNamespace(
            choices=[SimpleNamespace(message=message, finish_reason="tool_calls")],
            usage=SimpleNamespace(prompt_tokens=120, completion_tokens=20),
        )

    client = SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(create=create)))
    model = OpenAIChatModel("gpt-test", client=client)
    reply = model.chat([{"role": "user", "content": "q"}], tools=tool_schemas(TOOLS))
    assert sent["model"] == "gpt-test" and sent["tools"] != tool_schemas(TOOLS)
    # no \d a server cannot parse
    assert sent["tools"] == [
        {**t, "function": {**t["function"], "parameters": decodable(t["function"]["parameters"])}}
        for t in tool_schemas(TOOLS)
    ]
    assert "\\d" not in json.dumps(sent["tools"]) and "\\d" in json.dumps(tool_schemas(TOOLS))
    assert reply.tool_calls[0]["function"]["arguments"] == json.dumps(JULY)
    assert reply.finish_reason == "tool_calls" and reply.prompt_tokens == 120
    assert isinstance(reply, ChatReply)


def test_cli_ask_native_json_keeps_the_text_keys(tmp_path, capsys):
    path = tmp_path / "replies.json"
    path.write_text(json.dumps(CALL_THEN_ANSWER))
    assert (
        main(
            [
                "ask",
                "How many invoices?",
                "--protocol",
                "native",
                "--model",
                f"scripted:{path}",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["stopped_by"] == "answer" and out["answer"].startswith("Two invoices")
    assert {"step", "thought", "action", "observation", "error"} <= set(out["steps"][0])
    assert out["steps"][0]["action"] == {"tool": "list_invoices", "args": JULY}


# ---- the reply grammar, on the embedded model's vocabulary ------------------------------------


@pytest.mark.model
def test_the_reply_grammar_refuses_a_missing_argument_character_by_character():
    # Sampling under this grammar on the embedded model (every call schema-valid) is asserted
    # in bench notebook 04 (section 4, ten questions; section 5, the native loop).
    grammar = reply_grammar(tool_schemas(TOOLS))
    ok = json.dumps({"thought": "", "tool_calls": [{"name": "list_invoices", "arguments": JULY}]})
    assert grammar_check(grammar, ok).accepted
    check = grammar_check(grammar, ok.replace(', "since": "2026-07-01"', ""))
    assert not check.accepted and check.char == "}"


def test_a_native_run_with_several_calls_in_a_reply_keys_each_result_to_its_call():
    model = ScriptedChatModel(
        [
            {
                "thought": "both",
                "tool_calls": [
                    {"name": "find_invoice", "arguments": {"invoice_id": "INV-2291"}},
                    {"name": "get_payments", "arguments": {"invoice_id": "INV-2291"}},
                ],
            },
            {"thought": "", "answer": "approved, unpaid"},
        ]
    )
    result = ask_native("Has INV-2291 been paid?", model, TOOLS)
    messages = model.requests[1][0]
    ids = [c["id"] for c in messages[2]["tool_calls"]]
    assert [m["tool_call_id"] for m in messages[3:]] == ids and len(set(ids)) == 2
    assert '"supplier"' in messages[3]["content"] and '"payments": []' in messages[4]["content"]
    assert result.answer == "approved, unpaid"


# ---- tool_choice ---------------------------------------------------------------------------------

NAMED = {"type": "function", "function": {"name": "find_invoice"}}


def test_check_tool_choice_takes_the_openai_values_and_names_what_is_wrong():
    schemas = tool_schemas(TOOLS)
    assert [check_tool_choice(c, schemas) for c in ("auto", "required", "none")] == [None] * 3
    assert check_tool_choice(NAMED, schemas) == "find_invoice"
    for bad, words in [
        ("any", "must be"),
        ({"function": {"name": "find_invoice"}}, "must be"),
        ({"type": "function", "function": {"name": "serch"}}, "'serch', which is not"),
        ({"type": "function", "function": {}}, "must be"),
    ]:
        with pytest.raises(ValueError, match=words):
            check_tool_choice(bad, schemas)
    with pytest.raises(ValueError, match="needs at least one tool"):
        check_tool_choice("required", [])


def test_the_reply_schema_follows_tool_choice():
    schemas = tool_schemas(TOOLS)

    def valid(choice, reply):
        return jsonschema.Draft202012Validator(reply_schema(schemas, tool_choice=choice)).is_valid(
            reply
        )

    call, answer = CALL_THEN_ANSWER
    find = {
        "thought": "",
        "tool_calls": [{"name": "find_invoice", "arguments": {"invoice_id": "INV-2291"}}],
    }
    assert valid("auto", call) and valid("auto", answer)
    assert valid("required", call) and not valid("required", answer)
    assert not valid("none", call) and valid("none", answer)
    assert valid(NAMED, find) and not valid(NAMED, call) and not valid(NAMED, answer)
    assert "list-invoices" not in reply_grammar(schemas, tool_choice=NAMED)


def test_every_chat_backend_takes_tool_choice():
    scripted = ScriptedChatModel(CALL_THEN_ANSWER)
    scripted.chat([{"role": "user", "content": "q"}], tools=tool_schemas(TOOLS), tool_choice=NAMED)
    assert scripted.tool_choices == [NAMED]
    with pytest.raises(ValueError, match="tool_choice"):
        scripted.chat(
            [{"role": "user", "content": "q"}], tools=tool_schemas(TOOLS), tool_choice="any"
        )
    sent = {}

    def create(**kwargs):
        sent.update(kwargs)
        message = SimpleNamespace(content="ok", tool_calls=None)
        return SimpleNamespace(
            choices=[SimpleNamespace(message=message, finish_reason="stop")],
            usage=SimpleNamespace(prompt_tokens=1, completion_tokens=1),
        )

    client = SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(create=create)))
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a", "thought": "the lab's own key"},
    ]
    OpenAIChatModel("m", client=client).chat(
        messages, tools=tool_schemas(TOOLS), tool_choice="required"
    )
    assert sent["tool_choice"] == "required" and "thought" not in sent["messages"][1]


def test_run_native_sends_tool_choice_until_a_call_has_run():
    model = ScriptedChatModel(CALL_THEN_ANSWER)
    ask_native("q", model, TOOLS, tool_choice="required")
    assert model.tool_choices == ["required", "auto"]
    with pytest.raises(ValueError, match="serch"):
        list(
            run_native(
                "q", model, TOOLS, tool_choice={"type": "function", "function": {"name": "serch"}}
            )
        )


# ---- over HTTP: the lab's own test server, for what llama-cpp-python's does not do ---------------


def test_parallel_calls_and_every_tool_choice_over_http_against_the_fake_server():
    from helpers.fake_openai import FakeOpenAI

    both = {
        "tool_calls": [
            {"name": "find_invoice", "arguments": {"invoice_id": "INV-2291"}},
            {"name": "get_payments", "arguments": {"invoice_id": "INV-2291"}},
        ]
    }
    with FakeOpenAI(chat_replies=[both, {"content": "INV-2291 is approved but unpaid."}]) as server:
        model = OpenAIChatModel("fake-model", base_url=server.base_url)
        result = ask_native("Has INV-2291 been paid?", model, TOOLS, tool_choice="required")
        first = result.steps[0]
        assert [c["tool"] for c in first.action["calls"]] == ["find_invoice", "get_payments"]
        second = server.requests[1]
        assert [m["tool_call_id"] for m in second["messages"][3:]] == ["call_0_0", "call_0_1"]
        assert [r["tool_choice"] for r in server.requests] == ["required", "auto"]
        assert result.answer == "INV-2291 is approved but unpaid."
        messages = [{"role": "user", "content": "q"}]
        named = model.chat(
            messages,
            tools=tool_schemas(TOOLS),
            tool_choice={"type": "function", "function": {"name": "get_payments"}},
        )
        assert [c["function"]["name"] for c in named.tool_calls] == ["get_payments"]
        none = model.chat(messages, tools=tool_schemas(TOOLS), tool_choice="none")
        assert none.tool_calls == [] and none.content
        with pytest.raises(Exception, match="tool_call_id 'call_9'"):  # results keyed to no call
            model.chat(
                messages
                + [
                    {"role": "assistant", "content": "", "tool_calls": []},
                    {"role": "tool", "tool_call_id": "call_9", "content": "{}"},
                ],
                tools=tool_schemas(TOOLS),
            )


# ---- what llama-cpp-python's chatml-function-calling handler does with a request -----------------


class _PromptSpy:
    """Stands in for ``llama_cpp.Llama`` in a chat handler.

    It keeps each prompt, and completes with ``text``.
    """

    verbose = False

    def __init__(self, text="message:"):
        self.prompts, self.text = [], text

    def create_completion(self, prompt, **options):
        self.prompts.append(prompt)
        return {
            "id": "x",
            "object": "text_completion",
            "created": 0,
            "model": "m",
            "choices": [{"text": self.text, "index": 0, "logprobs": None, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }


def test_the_servers_chatml_function_calling_handler_drops_tool_results_and_refuses_required():
    """Where llama-cpp-python's server (0.3.36) does not serve native calling.

    If this fails, it was fixed. Its template has no branch for the ``tool`` role: a result
    is written as an empty ``<|im_start|>tool`` line, content and call id gone, so the model
    never reads it. ``tool_choice="required"`` fails an ``assert`` (HTTP 500). The lab's own
    test server (tests/helpers/fake_openai.py) stands in for those.
    """
    handler = pytest.importorskip("llama_cpp.llama_chat_format").chatml_function_calling
    messages = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "Q"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "find_invoice", "arguments": '{"invoice_id": "INV-2291"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "RESULT-ONE"},
    ]
    for choice in ("auto", "none"):
        spy = _PromptSpy()
        handler(llama=spy, messages=messages, tools=tool_schemas(TOOLS), tool_choice=choice)
        assert "RESULT-ONE" not in spy.prompts[0] and "call_a" not in spy.prompts[0]
        assert "<|im_start|>tool\n<|im_start|>assistant\n" in spy.prompts[0]
    with pytest.raises(AssertionError):
        handler(
            llama=_PromptSpy(), messages=messages, tools=tool_schemas(TOOLS), tool_choice="required"
        )

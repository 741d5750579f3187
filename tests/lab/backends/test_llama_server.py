"""The loop over HTTP against a real server: llama-cpp-python's own, serving the embedded model.

One server for the module (tests/helpers/servers.py): started on 127.0.0.1 on a free port with
the embedded GGUF through ``python -m react_lab.lab.backends.serve``'s command line, stopped at the
end. It holds the model: run these tests under the model lock, with
``REACT_LAB_THREADS=2``. The greedy-equality test comes first, so it meets the server
with nothing cached.
"""

import json
import os
import shlex
import subprocess
import sys

import pytest

from react_lab.lab.agent.parser import truncate_forged
from react_lab.lab.backends.endpoints import OpenAIModel
from react_lab.lab.backends.local import LocalModel
from react_lab.lab.backends.serve import EXTRA_BODY, MODEL_ALIAS, learner_exports
from react_lab.lab.experiments import forge
from react_lab.protocol import STOP, build_prompt
from react_lab.tools import call_tool, default_tools

pytest.importorskip(
    "llama_cpp.server.app", reason="needs llama-cpp-python[server]: pip install -e '.[server]'"
)

from helpers.servers import llama_server  # noqa: E402

pytestmark = [pytest.mark.model, pytest.mark.server]

QUESTION = "Was cus_8812 charged twice for INV-2041 in July?"


@pytest.fixture(scope="module")
def server():
    with llama_server() as base_url:
        yield base_url


@pytest.fixture
def served_env(server):
    """The environment a learner sets.

    Exactly the line ``python -m react_lab.lab.backends.serve`` prints.
    """
    host, port = server.split("//")[1].split("/")[0].split(":")
    exports = shlex.split(learner_exports(host, int(port)))
    assert exports[0] == "export"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "REACT_LAB_"))}
    env.update(dict(item.split("=", 1) for item in exports[1:]))
    env.update(
        REACT_LAB_THREADS=os.environ.get("REACT_LAB_THREADS", "2"),
        PYTHONPATH=os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")])),
    )
    assert env["OPENAI_BASE_URL"] == server and env["REACT_LAB_MODEL"] == "openai"
    return env


def http_model(server, **kwargs):
    return OpenAIModel(MODEL_ALIAS, base_url=server, extra_body=json.loads(EXTRA_BODY), **kwargs)


def test_greedy_completions_over_http_equal_the_in_process_ones(server):
    """Same template, same sampling (repeat_penalty 1.0), same cache history: same text."""
    tools = default_tools()
    prompts = [build_prompt(q, tools.values()) for q in forge.questions(3)]
    remote, local = (
        http_model(server),
        LocalModel(n_threads=int(os.environ.get("REACT_LAB_THREADS", 2))),
    )
    try:
        over_http = [remote.complete(p, stop=STOP, max_tokens=48) for p in prompts]
        in_process = [local.complete(p, stop=STOP, max_tokens=48) for p in prompts]
    finally:
        local.close()
    assert [c.text for c in over_http] == [c.text for c in in_process]
    assert [c.completion_tokens for c in over_http] == [c.completion_tokens for c in in_process]
    assert all(c.stop_mode == "server" for c in over_http)
    assert remote.chat_template == "chatml"


def cli(env, *args, timeout=240):
    return subprocess.run(
        [sys.executable, "-m", "react_lab.lab.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_ask_over_http_makes_a_real_tool_call(served_env):
    """The issue's repro: the run now calls a tool and reads the database's answer."""
    done = cli(served_env, "ask", QUESTION, "--model", "openai", "--json", "--max-steps", "3")
    assert done.returncode == 0, done.stderr
    steps = json.loads(done.stdout)["steps"]
    tools = default_tools()
    calls = [s for s in steps if s["action"] and s["action"]["tool"] in tools and not s["error"]]
    assert calls, [s["completion"] for s in steps]
    first = calls[0]
    # The observation is what the database says for that call, written by the loop.
    assert (
        first["observation"]
        == call_tool(tools, first["action"]["tool"], first["action"]["args"]).text
    )
    assert all(s["stop_mode"] == "server" for s in steps if s["completion"])


def test_doctor_reports_the_endpoint(served_env):
    done = cli(served_env, "doctor")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"OPENAI_BASE_URL={served_env['OPENAI_BASE_URL']} serves {MODEL_ALIAS}" in done.stdout
    assert f"OPENAI_MODEL={MODEL_ALIAS} completed" in done.stdout
    assert "chat template: chatml" in done.stdout and "stop applied by the server" in done.stdout


def test_the_forgery_experiment_over_http(server):
    """With stop no completion forges an observation.

    The text arm agrees with client-side truncation.
    """
    result = forge.run_experiment(
        forge.questions(3), http_model(server), max_tokens=64, progress=False
    )
    assert result["with_stop"]["forged"] == 0
    for stopped, free in zip(result["trials"]["with_stop"], result["trials"]["without_stop"]):
        if free["forged"]:
            assert truncate_forged(free["text"]) == stopped["text"].rstrip()


def test_native_loop_over_http_gets_tool_calls_from_the_server(server):
    """llama-cpp-python's chatml-function-calling handler fills tool_calls; the loop runs them."""
    from react_lab.lab.agent.native import ask_native
    from react_lab.lab.backends.chat import OpenAIChatModel

    model = OpenAIChatModel(MODEL_ALIAS, base_url=server)
    result = ask_native(QUESTION, model, default_tools(), max_steps=2, max_tokens=96)
    first = result.steps[0]
    assert first.action is not None and first.action["tool"] in default_tools()
    assert not first.leaked and first.finish_reason == "tool_calls"
    # the schema check's error or the database's answer, written by the loop
    assert first.observation


# ---- native tool calling as the server does it: every tool_choice, several calls, results by id

ASK = [
    {"role": "system", "content": "You answer questions about a billing system. Call the tools."},
    {"role": "user", "content": "Has supplier invoice INV-2291 been paid?"},
]


def chat_model(server):
    from react_lab.lab.backends.chat import OpenAIChatModel

    return OpenAIChatModel(MODEL_ALIAS, base_url=server)


def _valid_calls(reply, tools):
    assert reply.tool_calls and reply.finish_reason == "tool_calls", reply
    ids = [c["id"] for c in reply.tool_calls]
    assert len(set(ids)) == len(ids) and all(i.startswith(f"call__{n}_") for n, i in enumerate(ids))
    for call in reply.tool_calls:  # arguments decoded under a grammar built from the schema
        assert call["function"]["name"] in tools
        assert isinstance(json.loads(call["function"]["arguments"]), dict)


def test_every_tool_choice_the_server_takes(server):
    """Each tool_choice the server takes.

    auto: calls with ids; a named tool: one call to it; none: a text reply; required: HTTP 500.
    """
    from react_lab.lab.backends.endpoints import EndpointError
    from react_lab.tools import tool_schemas

    tools, model = default_tools(), chat_model(server)
    schemas = tool_schemas(tools)
    _valid_calls(model.chat(ASK, tools=schemas, tool_choice="auto", max_tokens=96), tools)
    named = model.chat(
        ASK,
        tools=schemas,
        max_tokens=96,
        tool_choice={"type": "function", "function": {"name": "find_invoice"}},
    )
    _valid_calls(named, tools)
    assert [c["function"]["name"] for c in named.tool_calls] == ["find_invoice"]
    none = model.chat(ASK, tools=schemas, tool_choice="none", max_tokens=48)
    assert none.tool_calls == [] and none.content and none.finish_reason in ("stop", "length")
    with pytest.raises(EndpointError) as refused:  # chatml-function-calling asserts "auto"
        model.chat(ASK, tools=schemas, tool_choice="required", max_tokens=48)
    assert refused.value.status == 500


def test_a_turn_with_several_calls_and_their_results_goes_back_to_the_server(server):
    """The request side of parallel calls.

    Two calls in one assistant turn, each result keyed to its id. The server takes it (the
    schemas are sent llama.cpp-decodable: a ``\\d`` in a pattern would crash it) and answers
    with calls of its own; what it cannot do is show the model the results (its template
    drops ``tool`` messages: tests/test_native.py).
    """
    from react_lab.tools import tool_schemas

    tools, model = default_tools(), chat_model(server)
    calls = [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps({"invoice_id": "INV-2291"})},
        }
        for i, name in enumerate(("find_invoice", "get_payments"))
    ]
    turn = (
        ASK
        + [{"role": "assistant", "content": None, "tool_calls": calls}]
        + [
            {
                "role": "tool",
                "tool_call_id": c["id"],
                "content": call_tool(tools, c["function"]["name"], {"invoice_id": "INV-2291"}).text,
            }
            for c in calls
        ]
    )
    for choice in ("auto", "none"):
        reply = model.chat(turn, tools=tool_schemas(tools), tool_choice=choice, max_tokens=64)
        if choice == "auto":
            _valid_calls(reply, tools)
        else:
            assert not reply.tool_calls and reply.content


def test_the_native_loop_over_the_server_runs_every_call_it_returns(server):
    from react_lab.lab.agent.native import ask_native

    tools = default_tools()
    result = ask_native(
        "When was the latest invoice of cus_8812 issued?",
        chat_model(server),
        tools,
        max_steps=2,
        max_tokens=96,
    )
    ran = [s for s in result.steps if s.action]
    assert ran and all(s.finish_reason == "tool_calls" and not s.leaked for s in ran)
    # the loop ran each call and wrote its result (the database's, or the schema check's)
    for step in ran:
        assert step.observation and len(step.observation.splitlines()) == len(
            step.action.get("calls", [1])
        )

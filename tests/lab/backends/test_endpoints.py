"""The OpenAI-compatible backend over real HTTP, against a small local server
(tests/helpers/fake_openai.py).

No model runs here: the fake server answers with fixed texts, after a fixed delay,
or with the errors hosted providers send. Loopback only.
"""

import json

import pytest
from helpers.fake_openai import FORGING_RUN, REFUSE_STOP_BODY, FakeOpenAI

from react_lab.lab import cli
from react_lab.lab.agent.loop import ask
from react_lab.lab.agent.parser import find_forged
from react_lab.lab.backends.base import render_chat
from react_lab.lab.backends.endpoints import (
    OpenAIModel,
    client_cut,
    resolve_chat_template,
)
from react_lab.lab.backends.local import LocalModel
from react_lab.protocol import STOP, build_prompt
from react_lab.tools import default_tools

QUESTION = "Was cus_8812 charged twice for INV-2041 in July?"


@pytest.fixture
def env(monkeypatch, tmp_path):
    """A clean OpenAI environment, caches in a temporary folder.

    Nothing is inherited from the shell.
    """
    monkeypatch.setenv("REACT_LAB_CACHE", str(tmp_path / "cache"))
    for name in (
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_MODEL",
        "REACT_LAB_TIMEOUT",
        "REACT_LAB_RETRIES",
        "REACT_LAB_CHAT_TEMPLATE",
        "REACT_LAB_EXTRA_BODY",
        "REACT_LAB_MODEL",
    ):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


# --------------------------------------------------------------------------- refusing stop


def test_a_provider_that_refuses_stop_gets_a_client_side_stop(env):
    with FakeOpenAI(refuse_stop=True) as server:
        model = OpenAIModel("fake-model", base_url=server.base_url)
        result = ask(QUESTION, model, default_tools())
    assert result.stopped_by == "answer"
    assert result.answer == "No, INV-2041 was paid once."  # the second step's, not the forged one
    first, second = result.steps
    assert [s.stop_mode for s in result.steps] == ["client", "client"]
    # The forged observation was generated (and billed), then cut off.
    assert first.forged and first.forged_tokens > 0
    assert first.completion_tokens > first.forged_tokens
    assert "Observation" not in first.completion
    # The observation the model read came from the database, written by the loop.
    assert first.action == {"tool": "get_payments", "args": ["INV-2041"]}
    assert "pay_0463" in first.observation
    for owner, text in result.transcript.spans:
        if owner == "model":
            assert find_forged(text) is None and "two payments of $129.00" not in text
    # One refused request, then every call streamed without stop.
    sent = server.requests
    assert "stop" in sent[0] and not sent[0].get("stream")
    assert all(r.get("stream") and "stop" not in r for r in sent[1:]) and len(sent) == 3
    assert model.stop_supported is False


def test_the_refusal_body_is_the_one_providers_send():
    assert REFUSE_STOP_BODY["error"]["param"] == "stop"
    assert REFUSE_STOP_BODY["error"]["code"] == "unsupported_parameter"


def test_a_provider_that_takes_stop_cuts_it_server_side(env):
    with FakeOpenAI() as server:
        model = OpenAIModel("fake-model", base_url=server.base_url)
        result = ask(QUESTION, model, default_tools())
    assert [s.stop_mode for s in result.steps] == ["server", "server"]
    assert [s.forged_tokens for s in result.steps] == [0, 0]
    assert all(r.get("stop") == STOP and not r.get("stream") for r in server.requests)
    assert model.stop_supported is True


def test_client_side_stop_gives_the_text_a_server_side_stop_gives(env):
    prompt = build_prompt(QUESTION, default_tools().values())
    with FakeOpenAI(refuse_stop=True) as refusing, FakeOpenAI() as taking:
        client = OpenAIModel("fake-model", base_url=refusing.base_url).complete(prompt, stop=STOP)
        server = OpenAIModel("fake-model", base_url=taking.base_url).complete(prompt, stop=STOP)
    assert client.text == server.text.rstrip()
    assert client.cut_text.strip().startswith("Observation")  # the stream was closed there
    assert client.finish_reason == server.finish_reason == "stop"


def test_a_trailing_partial_stop_word_is_trimmed(env):
    text = " I need the payments.\nAction: get_payments[INV-2041]\nObserv"
    with FakeOpenAI(refuse_stop=True, completions=[text]) as server:
        out = OpenAIModel("fake-model", base_url=server.base_url).complete("Q", stop=STOP)
    assert out.text == " I need the payments.\nAction: get_payments[INV-2041]"
    assert out.stop_mode == "client" and out.forged_tokens == 0


def test_client_cut_uses_the_parsers_rule_and_the_stop_strings():
    assert client_cut("a\n**Observation 1:** x", STOP) == 2
    assert client_cut("Thought: x Observation: y", STOP) == len("Thought: x ")
    assert client_cut("Observational data: none", STOP) is None


def test_without_stop_nothing_is_cut(env):
    with FakeOpenAI(refuse_stop=True) as server:
        out = OpenAIModel("fake-model", base_url=server.base_url).complete("Q", max_tokens=64)
    assert "Observation: two payments" in out.text and out.stop_mode is None


# --------------------------------------------------------------------------- the chat template


def test_the_same_rendering_in_process_and_over_http(env):
    prompt = build_prompt(QUESTION, default_tools().values()) + " I need the payments.\n"
    with FakeOpenAI(models=["smollm2-135m-instruct"]) as server:
        OpenAIModel("smollm2-135m-instruct", base_url=server.base_url).complete(prompt, stop=STOP)
    sent = server.requests[0]["prompt"]
    assert sent == LocalModel().render(prompt) == render_chat(prompt, "chatml")
    assert sent.startswith("<|im_start|>user\n") and sent.endswith("I need the payments.\n")


def test_chat_template_choice(env):
    assert resolve_chat_template(None, "smollm2-135m-instruct") == "chatml"
    assert resolve_chat_template(None, "gpt-3.5-turbo-instruct") == "none"
    env.setenv("REACT_LAB_CHAT_TEMPLATE", "chatml")
    assert resolve_chat_template(None, "qwen2.5-7b") == "chatml"
    assert resolve_chat_template("none", "smollm2") == "none"
    env.setenv("REACT_LAB_CHAT_TEMPLATE", "llama3")
    with pytest.raises(ValueError, match="REACT_LAB_CHAT_TEMPLATE"):
        resolve_chat_template(None, "x")


def test_extra_body_reaches_the_server(env):
    env.setenv("REACT_LAB_EXTRA_BODY", '{"repeat_penalty": 1.0}')
    with FakeOpenAI() as server:
        OpenAIModel("fake-model", base_url=server.base_url).complete("Q", stop=STOP)
    assert server.requests[0]["repeat_penalty"] == 1.0
    env.setenv("REACT_LAB_EXTRA_BODY", "[1]")
    with pytest.raises(ValueError, match="REACT_LAB_EXTRA_BODY must be a JSON object"):
        OpenAIModel("fake-model", base_url="http://127.0.0.1:9/v1")


# --------------------------------------------------------------------------- retries and errors


def test_429_and_503_are_retried_with_backoff(env):
    with FakeOpenAI(fail_first=[429, 503]) as server:
        out = OpenAIModel("fake-model", base_url=server.base_url).complete("Q", stop=STOP)
    assert out.text.startswith(" I need the payments") and len(server.requests) == 3


def cli_error(env, argv, **server_options):
    """Run the CLI against a fake server; return (exit code, stderr lines, stdout)."""
    import contextlib
    import io

    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = cli.main(argv)
    return code, err.getvalue().splitlines(), out.getvalue()


@pytest.mark.parametrize(
    "case", ["unreachable", "unknown model", "bad key", "timeout", "still failing"]
)
def test_endpoint_errors_are_one_line_naming_what_to_fix(env, case):
    options, names = {}, {}
    if case == "unknown model":
        options, names = {"models": ["served-model"]}, ["OPENAI_MODEL", "served-model"]
    elif case == "bad key":
        options, names = {"api_key": "the-key"}, ["OPENAI_API_KEY", "401"]
        env.setenv("OPENAI_API_KEY", "wrong")
    elif case == "timeout":
        options, names = {"delay": 1.0}, ["REACT_LAB_TIMEOUT", "0.2 s"]
        env.setenv("REACT_LAB_TIMEOUT", "0.2")
        env.setenv("REACT_LAB_RETRIES", "0")
    elif case == "still failing":
        options, names = {"fail_first": [500, 500]}, ["REACT_LAB_RETRIES", "HTTP 500", "1 retry"]
        env.setenv("REACT_LAB_RETRIES", "1")
    elif case == "unreachable":
        names = ["OPENAI_BASE_URL", "cannot reach"]
        env.setenv("REACT_LAB_RETRIES", "0")
    env.setenv("OPENAI_MODEL", "fake-model")
    with FakeOpenAI(**options) as server:
        url = server.base_url
        if case == "unreachable":
            server.shutdown()
            server.server_close()  # nothing listens on the port any more
        env.setenv("OPENAI_BASE_URL", url)
        code, lines, _ = cli_error(env, ["ask", QUESTION, "--model", "openai", "--json"])
    assert code == 2
    assert len(lines) == 1 and lines[0].startswith("react-lab: error: "), lines
    assert "Traceback" not in lines[0]
    for name in names:
        assert name in lines[0]


def test_no_model_name_says_which_variable(env):
    code, lines, _ = cli_error(env, ["ask", QUESTION, "--model", "openai"])
    assert code == 2 and lines == [
        "react-lab: error: no model name: set OPENAI_MODEL (or pass openai:MODEL)"
    ]


def test_the_ask_command_reports_stop_mode_in_json(env):
    with FakeOpenAI(refuse_stop=True) as server:
        env.setenv("OPENAI_BASE_URL", server.base_url)
        code, lines, out = cli_error(
            env, ["ask", QUESTION, "--model", "openai:fake-model", "--json"]
        )
    assert code == 0, lines
    steps = json.loads(out)["steps"]
    assert [s["stop_mode"] for s in steps] == ["client", "client"]
    assert steps[0]["forged_tokens"] > 0
    assert FORGING_RUN[0].split("Observation")[0].strip().endswith("get_payments[INV-2041]")


# --------------------------------------------------------------------------- runs in flight


def _content(record: dict) -> dict:
    """A record without its timings: what must not depend on how many runs were in flight."""
    steps = [{k: v for k, v in s.items() if k != "seconds"} for s in record["steps"]]
    return {**{k: v for k, v in record.items() if k != "seconds"}, "steps": steps}


def test_eval_with_runs_in_flight_matches_a_serial_run_and_is_faster(env, tmp_path):
    from react_lab.lab.experiments.evals import evaluate
    from react_lab.lab.experiments.tasks import load_tasks

    tasks = load_tasks(n=8)
    timings = {}
    with FakeOpenAI(delay=0.15) as server:
        model = OpenAIModel("fake-model", base_url=server.base_url)
        runs = {}
        for n in (1, 4):
            runs[n] = evaluate(
                tasks, model, use_cache=False, progress=False, concurrency=n, cache_dir=tmp_path
            )
            timings[n] = runs[n].seconds
        assert server.max_in_flight == 4
    assert [_content(r) for r in runs[1].records] == [_content(r) for r in runs[4].records]
    assert [r["task_id"] for r in runs[4].records] == [t.id for t in tasks]
    # Runs in flight on average: the runs' own seconds summed over the evaluation's wall clock
    # (at most 1 one at a time, near 4 four at once, on a slow machine too: it slows both alike).
    overlap = {n: sum(r["seconds"] for r in runs[n].records) / timings[n] for n in (1, 4)}
    assert overlap[1] <= 1.01 and overlap[4] > 2.5 and timings[4] < timings[1], (overlap, timings)


def test_eval_concurrency_must_be_a_whole_number(env):
    from react_lab.lab.experiments.evals import evaluate
    from react_lab.lab.experiments.tasks import load_tasks

    with pytest.raises(ValueError, match="concurrency"):
        evaluate(
            load_tasks(n=1),
            OpenAIModel("m", base_url="http://127.0.0.1:9/v1"),
            concurrency=0,
            use_cache=False,
            progress=False,
        )


def test_eval_over_an_unreachable_endpoint_is_one_line(env):
    env.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    env.setenv("OPENAI_MODEL", "fake-model")
    env.setenv("REACT_LAB_RETRIES", "0")
    code, lines, _ = cli_error(
        env, ["eval", "--model", "openai", "--n", "2", "--json", "--concurrency", "2"]
    )
    assert code == 2 and len(lines) == 1 and lines[0].startswith("react-lab: error: cannot reach")


# ------------------------------------------------------------------------ one place for the backend


def test_load_model_reads_the_backend_from_one_variable(env):
    from react_lab.lab.backends.chat import OpenAIChatModel
    from react_lab.lab.backends.load import load_chat_model, load_model

    assert isinstance(load_model(), LocalModel)  # nothing set: the embedded model (not loaded yet)
    env.setenv("REACT_LAB_MODEL", "openai")
    env.setenv("OPENAI_MODEL", "served-model")
    env.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    model = load_model()
    assert isinstance(model, OpenAIModel) and model.name == "served-model"
    assert isinstance(load_chat_model(), OpenAIChatModel)
    assert isinstance(load_model("local"), LocalModel)  # an explicit spec wins
    env.setenv("REACT_LAB_MODEL", "gpt")
    with pytest.raises(ValueError, match="REACT_LAB_MODEL"):
        load_model()


def test_the_workshop_recipe_is_the_one_the_code_prints():
    """docs/workshop.md shows the serve command and exactly the exports it prints."""
    from pathlib import Path

    from react_lab.lab.backends.serve import learner_exports, server_command

    guide = (Path(__file__).resolve().parents[3] / "docs" / "workshop.md").read_text()
    assert "python -m react_lab.lab.backends.serve --host 0.0.0.0 --port 8000" in guide
    assert learner_exports("0.0.0.0", 8000) in guide
    cmd = server_command(host="0.0.0.0", port=8000, threads=2)
    assert cmd[1:3] == ["-m", "llama_cpp.server"] and "chatml-function-calling" in cmd
    assert cmd[cmd.index("--n_ctx") + 1] == str(LocalModel().n_ctx)

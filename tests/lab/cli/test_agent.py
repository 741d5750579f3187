"""``react-lab ask --agent`` and ``react-lab eval --agent``: the learner's own file on the bench.

A learner-like ``my_agent.py`` is written into a temporary folder the way the notebooks write
it (their header, then each piece as its reference), and run on scripted models: the oracle
scores 100% through it, text and native; the file is read and never changed; a file that is
missing, does not run, or lacks the function a protocol needs stops the command with one line
naming the file and what to do; saved results are fingerprinted with the file's code.
"""

import json
import os

import pytest

from react_lab.lab.cli import main
from react_lab.lab.experiments import agent_runs, results
from react_lab.lab.experiments.ladder import choose_tasks
from react_lab.lab.experiments.results import CACHE_ENV, StaleResults
from react_lab.workshop.agent_file import HEADER, reference_source
from react_lab.workshop.core_exercises import pieces_before

#: The pieces a learner's file holds after notebook 08: the latest version of each piece.
PIECES = pieces_before(9)
QUESTION = "Was cus_8812 charged twice for INV-2041 in July?"
ANSWER = " I know this.\nAnswer: yes"


def learner_file(folder, pieces=PIECES, extra: str = "") -> "os.PathLike":
    """``my_agent.py`` in ``folder`` as the notebooks' checkers write it, plus ``extra``."""
    path = folder / "my_agent.py"
    body = "\n\n".join(reference_source(name) for name in pieces)
    path.write_text(HEADER + "\n\n" + body + extra, encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    """Nothing of these runs is kept outside the test's folder."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))


@pytest.fixture
def mine(tmp_path):
    folder = tmp_path / "learner"
    folder.mkdir()
    return learner_file(folder)


@pytest.fixture
def where(tmp_path, monkeypatch):
    folder = tmp_path / "results"
    monkeypatch.setattr(results, "RESULTS_DIR", folder)
    return folder


def scripted(tmp_path, items, name="script.json"):
    path = tmp_path / name
    path.write_text(json.dumps(items))
    return f"scripted:{path}"


def run_json(capsys, argv) -> dict:
    assert main(argv + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def error_line(capsys, argv) -> str:
    """Run the CLI, expect exit code 2 and one ``react-lab: error:`` line, no traceback."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("react-lab: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


# --------------------------------------------------------------------------- runs


@pytest.mark.parametrize("protocol", ["text", "native"])
def test_the_oracle_scores_every_task_through_the_learners_file(capsys, mine, protocol):
    before = (mine.read_bytes(), os.stat(mine).st_mtime_ns, sorted(mine.parent.iterdir()))
    out = run_json(
        capsys,
        ["eval", "--agent", str(mine), "--model", "oracle", "--protocol", protocol]
        + ["--split", "test", "--per-category", "1"],
    )
    if protocol == "native":
        assert (out["successes"], out["n"], out["errors"]) == (13, 13, 0)
        assert out["ci95"][0] < 1.0 == out["ci95"][1]  # the Wilson interval, as the ladder's
    else:
        # 06's provenance guard refuses an amount the run worked out without a tool: no_tool-02's
        # "46350" (48200 - 1850) is in neither the question nor a tool's result, so the loop
        # asks again, and the oracle, which has said its one answer, has no more completions
        assert (out["successes"], out["n"], out["errors"]) == (12, 13, 1)
        assert out["by_category"]["no_tool"] == [0, 1]
    assert out["agent"] == str(mine) and out["exemplars"] == "pick_exemplar"
    assert out["split"] == "test" and out["protocol"] == protocol
    # read, never written: the same bytes, the same time, no __pycache__ beside it
    assert (mine.read_bytes(), os.stat(mine).st_mtime_ns, sorted(mine.parent.iterdir())) == before


def test_the_reference_agent_scores_what_the_learners_copy_of_it_scores(capsys, mine):
    argv = ["--model", "oracle", "--split", "dev", "--n", "5"]
    ref = run_json(capsys, ["eval", "--agent", "reference", *argv])
    theirs = run_json(capsys, ["eval", "--agent", str(mine), *argv])
    assert ref["agent"] == "reference" and ref["successes"] == theirs["successes"] == 5


def test_the_dont_know_baseline_scores_nothing_through_the_learners_file(capsys, mine):
    out = run_json(capsys, ["eval", "--agent", str(mine), "--model", "dont_know", "--n", "3"])
    assert out["successes"] == 0 and out["n"] == 3


def test_ask_runs_the_learners_loop_and_shows_the_exemplar_it_picked(capsys, tmp_path, mine):
    assert (
        main(["ask", QUESTION, "--agent", str(mine), "--model", scripted(tmp_path, [ANSWER])]) == 0
    )
    out = capsys.readouterr().out
    assert out.startswith("exemplar (picked by ") and "pick_exemplar" in out
    assert f"Question: {QUESTION}\nThought: I know this.\nAnswer: yes" in out
    assert out.rstrip().endswith("answer: yes\nstopped_by: answer")


def test_ask_native_runs_the_learners_run_native_on_the_chat_backend(capsys, tmp_path, mine):
    replies = [
        {"thought": "Its charges.", "tool_calls": [{"name": "find_invoice", "arguments": {}}]},
        {"thought": "Once.", "answer": "No, it was charged once."},
    ]
    replies[0]["tool_calls"][0]["arguments"] = {"invoice_id": "INV-2041"}
    model = scripted(tmp_path, replies)
    out = run_json(
        capsys, ["ask", QUESTION, "--agent", str(mine), "--protocol", "native"] + ["--model", model]
    )
    assert out["answer"] == "No, it was charged once." and out["stopped_by"] == "answer"
    assert len(out["steps"]) == 2 and out["output"][-1]["role"] == "assistant"
    assert any(m["role"] == "tool" and "cus_8812" in m["content"] for m in out["output"])


def test_a_file_without_pick_exemplar_runs_its_loops_default(capsys, tmp_path):
    path = learner_file(tmp_path, pieces=("observe", "run_loop"))
    assert (
        main(["ask", QUESTION, "--agent", str(path), "--model", scripted(tmp_path, [ANSWER])]) == 0
    )
    assert capsys.readouterr().out.startswith(
        f"exemplar: your loop's default ({path} has no pick_exemplar)"
    )
    out = run_json(capsys, ["eval", "--agent", str(path), "--model", "oracle", "--n", "2"])
    assert out["exemplars"] == "default" and out["successes"] == 2


def test_an_error_in_the_learners_loop_ends_that_run_and_names_its_line(capsys, tmp_path):
    path = tmp_path / "my_agent.py"
    path.write_text(
        "def run_loop(question, model, tools, exemplars=None, max_steps=6):\n"
        "    model.complete(question)\n"
        "    return {}['answer'], ''\n"
    )
    out = run_json(capsys, ["eval", "--agent", str(path), "--model", "oracle", "--n", "2"])
    assert out["errors"] == 2 and out["successes"] == 0  # every task ran, none crashed the eval
    assert (
        main(["ask", QUESTION, "--agent", str(path), "--model", scripted(tmp_path, [ANSWER])]) == 1
    )
    assert "error: KeyError at my_agent.py line 3: 'answer'" in capsys.readouterr().out


def test_a_loop_that_never_stops_ends_at_its_time(tmp_path):
    path = tmp_path / "my_agent.py"
    path.write_text(
        "def run_loop(question, model, tools, exemplars=None, max_steps=6):\n"
        "    while True:\n"
        "        try:\n"
        "            model.complete(question)\n"
        "        except Exception:\n"  # a learner's broad except does not swallow the timeout
        "            pass\n"
    )
    from react_lab.lab.backends.scripted import ScriptedModel

    run = agent_runs.run_question(
        agent_runs.load_agent(str(path)), QUESTION, ScriptedModel([ANSWER]), {}, timeout=0.05
    )
    assert run["stopped_by"] == "timeout" and run["steps"]


def test_how_a_run_ended():
    assert agent_runs.stopped_by("42", 1, 4) == "answer"
    assert agent_runs.stopped_by("[best effort] 42", 4, 4) == "max_steps"
    assert agent_runs.stopped_by(None, 4, 4) == "max_steps"
    assert agent_runs.stopped_by(None, 2, 4) == "no_answer"


# --------------------------------------------------------------------------- errors


def test_a_missing_file_says_where_the_notebooks_save_it(capsys, tmp_path):
    missing = tmp_path / "nowhere" / "my_agent.py"
    for argv in (["ask", QUESTION], ["eval"]):
        err = error_line(capsys, argv + ["--agent", str(missing), "--model", "oracle"])
        assert f"agent file {missing} not found" in err
        assert "path of your my_agent.py" in err and "--agent reference" in err


@pytest.mark.parametrize(
    "text,says",
    [
        ("def run_loop(:\n    pass\n", "does not run: SyntaxError at line 1"),
        ("import json\nimport not_a_module_here\n", "ModuleNotFoundError at line 2"),
        ("x = 1\nraise SystemExit(3)\n", "SystemExit at line 2"),
    ],
)
def test_a_file_that_does_not_run_is_one_line_naming_it(capsys, tmp_path, text, says):
    path = tmp_path / "my_agent.py"
    path.write_text(text)
    err = error_line(capsys, ["eval", "--agent", str(path), "--model", "oracle"])
    assert f"agent file {path} {says}" in err or (str(path) in err and says in err)


def test_a_folder_is_not_an_agent_file(capsys, tmp_path):
    err = error_line(capsys, ["ask", QUESTION, "--agent", str(tmp_path), "--model", "oracle"])
    assert f"agent file {tmp_path} is a folder" in err


@pytest.mark.parametrize(
    "pieces,protocol,says",
    [
        (
            ("observe",),
            "text",
            "has no function run_loop (needed by --protocol text); write it in notebook 02",
        ),
        (
            ("observe", "run_loop"),
            "native",
            "has no function run_native (needed by --protocol native); write it in notebook 07",
        ),
    ],
)
def test_a_file_without_the_protocols_function_names_it(capsys, tmp_path, pieces, protocol, says):
    path = learner_file(tmp_path, pieces=pieces)
    for argv in (["ask", QUESTION], ["eval"]):
        err = error_line(
            capsys, argv + ["--agent", str(path), "--protocol", protocol, "--model", "oracle"]
        )
        assert f"{path} {says}" in err


def test_a_loop_calling_a_piece_the_file_lacks_names_it(capsys, tmp_path):
    path = learner_file(tmp_path, pieces=("run_loop",))  # observe never written
    err = error_line(capsys, ["ask", QUESTION, "--agent", str(path), "--model", "oracle"])
    assert f"{path}: run_loop uses observe, which the file does not define; add it " in err
    assert "(notebook 01)" in err


def test_a_loop_that_cannot_take_the_notebooks_call_says_so(capsys, tmp_path):
    path = tmp_path / "my_agent.py"
    path.write_text("def run_loop(question, model, tools):\n    return None, ''\n")
    err = error_line(capsys, ["eval", "--agent", str(path), "--model", "oracle"])
    assert "run_loop cannot be called as run_loop(question, model, tools, exemplars=..., " in err


@pytest.mark.parametrize(
    "more,says",
    [
        (["--config", "best"], "--config names another agent"),
        (["--trials", "2"], "--trials"),
        (["--exemplars", "2"], "--exemplars"),
        (["--concurrency", "2"], "--concurrency"),
    ],
)
def test_eval_options_of_the_bench_are_refused_with_agent(capsys, mine, more, says):
    with pytest.raises(SystemExit) as stopped:
        main(["eval", "--agent", str(mine), "--model", "oracle", *more])
    assert stopped.value.code == 2
    assert says in capsys.readouterr().err


def test_ask_refuses_agent_with_config_and_no_stop(capsys, mine):
    for more in (["--config", "best"], ["--no-stop"]):
        with pytest.raises(SystemExit):
            main(["ask", QUESTION, "--agent", str(mine), "--model", "oracle", *more])
    assert "--no-stop: with --agent your run_loop sends its own" in capsys.readouterr().err


# --------------------------------------------------------------------------- results files


def test_saved_results_hold_the_files_code_and_go_stale_when_it_changes(
    capsys, tmp_path, mine, where
):
    argv = ["eval", "--agent", str(mine), "--model", "oracle", "--split", "test", "--n", "3"]
    out = run_json(capsys, argv + ["--save-results", "eval-agent-mine-test"])
    assert out["saved"] == str(where / "eval-agent-mine-test.json")
    loaded = results.load("eval-agent-mine-test")
    assert loaded.experiment == "agent" and loaded.config["agent"] == str(mine.resolve())
    assert loaded.config["task_ids"] == [t.id for t in choose_tasks("test", n=3)]
    assert loaded.data["summary"]["successes"] == 3 and len(loaded.data["records"]) == 3
    assert loaded.command.startswith(f"react-lab eval --agent {mine} --protocol text")
    # a comment or a docstring changes nothing the agent runs: still current
    mine.write_text(
        mine.read_text().replace('"""My ReAct agent', '"""My own ReAct agent') + "# x\n"
    )
    assert results.check("eval-agent-mine-test") == []
    # its code does: stale, naming the command that makes it again
    mine.write_text(mine.read_text().replace("max_tokens=128", "max_tokens=64"))
    with pytest.raises(StaleResults, match="the prompt, exemplars or tool schemas changed"):
        results.load("eval-agent-mine-test")
    mine.unlink()  # a file that is gone is never current either
    assert results.check("eval-agent-mine-test")


def test_an_existing_results_file_is_refused_before_the_agent_runs(capsys, mine, where):
    where.mkdir()
    (where / "taken.json").write_text("{}")
    with pytest.raises(SystemExit):
        main(["eval", "--agent", str(mine), "--model", "oracle", "--save-results", "taken"])
    assert "taken.json exists already" in capsys.readouterr().err


def test_the_agents_code_reads_past_comments_and_docstrings(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text('"""Mine."""\ndef f(x):\n    """Doc."""\n    return x  # the same\n')
    b.write_text("def f(x):\n    return x\n")
    assert agent_runs.agent_code(str(a)) == agent_runs.agent_code(str(b))
    assert agent_runs.agent_code(str(tmp_path / "gone.py")).startswith("missing: ")
    assert "def pick_exemplar" in agent_runs.agent_code("reference")  # what its picker runs


def test_a_record_has_the_ladders_shape():
    from react_lab.lab.experiments.evals import oracle_model
    from react_lab.tools import default_tools

    task = choose_tasks("test", n=1)[0]
    rec = agent_runs.run_task(
        agent_runs.load_agent("reference"), task, oracle_model(task), default_tools()
    )
    assert rec["correct"] and rec["stopped_by"] == "answer" and rec["n_steps"] == len(rec["steps"])
    assert len(rec["exemplar_ids"]) == 1 and rec["exemplar_ids"][0].endswith(tuple("0123456789"))
    assert rec["prefix_tokens"] > rec["exemplar_tokens"] > 0
    assert set(rec["steps"][0]) == {
        "completion",
        "finish_reason",
        "prompt_tokens",
        "completion_tokens",
    }


@pytest.mark.model
def test_ask_runs_the_reference_agent_on_the_embedded_model(capsys):
    """One step of the reference's run_loop on the embedded model, then its labelled best effort."""
    assert main(["ask", QUESTION, "--agent", "reference", "--max-steps", "1"]) == 0
    out = capsys.readouterr().out
    assert "pick_exemplar" in out and "stopped_by: " in out

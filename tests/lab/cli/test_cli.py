"""The react-lab command.

Bad options are refused up front, with a message that names what to change.

Option values (argparse ``type=`` helpers: exit code 2, ``error: argument --x``), models
and files that cannot be loaded (``react-lab: error: ...``, no traceback), ``--no-stop``,
the help texts.
"""

import json

import pytest

from react_lab.lab.backends.scripted import ScriptedModel
from react_lab.lab.cli import MAX_COST_STEPS, main
from react_lab.lab.experiments.results import CACHE_ENV

ANSWER = " I know this.\nAnswer: 42"


@pytest.fixture
def script(tmp_path):
    """A scripted model file that answers at once (so nothing slow runs if a check is missing)."""
    path = tmp_path / "answer.json"
    path.write_text(json.dumps([ANSWER]))
    return path


def usage_error(capsys, argv: list[str]) -> str:
    """Run the CLI, expect argparse's exit code 2, return stderr."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    return capsys.readouterr().err


# --------------------------------------------------------------------------- option values


@pytest.mark.parametrize("value", ["0", "-1", "abc", "1.5"])
def test_cli_refuses_max_tokens_below_one(capsys, script, value):
    err = usage_error(capsys, ["ask", "q", "--model", f"scripted:{script}", "--max-tokens", value])
    assert "react-lab ask: error: argument --max-tokens:" in err


# --------------------------------------------------------------------------- 2. option values

ASK_BAD = [
    ("--max-steps", "0"),
    ("--max-steps", "-5"),
    ("--max-steps", "two"),
    ("--tool-timeout", "-1"),
    ("--tool-timeout", "nan"),
    ("--tool-timeout", "inf"),
    ("--time-budget", "nan"),
    ("--time-budget", "-1"),
    ("--token-budget", "-1"),
    ("--token-budget", "1e3"),
    ("--price-in", "-5"),
    ("--price-out", "nan"),
    ("--money-budget", "-0.5"),
    ("--money-budget", "nan"),
    ("--money-budget", "x"),
]


@pytest.mark.parametrize("option,value", ASK_BAD)
def test_ask_refuses_nonsense_option_values(capsys, script, option, value):
    err = usage_error(capsys, ["ask", "q", "--model", f"scripted:{script}", option, value])
    assert f"react-lab ask: error: argument {option}:" in err


def test_guard_limit_errors_say_that_zero_switches_a_limit_off(capsys, script):
    err = usage_error(capsys, ["ask", "q", "--model", f"scripted:{script}", "--time-budget", "nan"])
    assert "finite number >= 0 (0 switches the limit off), got nan" in err


def test_ask_still_accepts_zero_to_switch_limits_off(capsys, script):
    assert (
        main(
            [
                "ask",
                "q",
                "--model",
                f"scripted:{script}",
                "--json",
                "--max-steps",
                "1",
                "--time-budget",
                "0",
                "--tool-timeout",
                "0",
                "--token-budget",
                "0",
                "--money-budget",
                "0",
                "--price-in",
                "0",
                "--price-out",
                "2.5",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["answer"] == "42"


def test_ask_says_when_a_run_ended_without_an_answer(capsys, tmp_path):
    path = tmp_path / "no_answer.json"
    path.write_text(
        json.dumps([" I look.\nAction: search[refund policy]", "Action: search[refunds]"])
    )
    assert main(["ask", "q", "--model", f"scripted:{path}", "--max-steps", "1"]) == 0
    out = capsys.readouterr().out
    assert "answer: none (the run stopped before one)" in out and "answer: None" not in out


COST = ["cost", "--prefix", "10", "--observation", "5", "--assistant", "5"]


@pytest.mark.parametrize("steps", ["0", "-3", str(MAX_COST_STEPS + 1), "10000000"])
def test_cost_refuses_steps_out_of_range(capsys, steps):
    err = usage_error(capsys, COST + ["--steps", steps, "--json"])
    assert f"argument --steps: must be a whole number from 1 to {MAX_COST_STEPS}" in err


def test_cost_takes_the_largest_allowed_run(capsys):
    assert main(COST + ["--steps", str(MAX_COST_STEPS), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["per_step"]) == MAX_COST_STEPS


@pytest.mark.parametrize(
    "argv,option",
    [
        (["eval", "--n", "0", "--model", "oracle"], "--n"),
        (["eval", "--n", "-2", "--model", "oracle"], "--n"),
        (["forge-rate", "--n", "0", "--model", "oracle"], "--n"),
        (["forge-rate", "--n", "ten"], "--n"),
    ],
)
def test_eval_and_forge_rate_refuse_bad_counts(capsys, argv, option):
    err = usage_error(capsys, argv)
    assert f"react-lab {argv[0]}: error: argument {option}:" in err


# --------------------------------------------------------------------------- loading


@pytest.mark.parametrize(
    "make_spec,says",
    [
        (lambda d: f"scripted:{d / 'dict.json'}", '{"completions": [...]}'),
        (lambda d: "scripted:", "scripted: needs a file name"),
        (lambda d: f"scripted:{d}", "is a directory"),
        (lambda d: f"scripted:{d / 'missing.json'}", "No such file"),
        (lambda d: "nonsense", "unknown model 'nonsense'"),
    ],
)
def test_cli_turns_load_errors_into_one_line(tmp_path, capsys, make_spec, says):
    (tmp_path / "dict.json").write_text(json.dumps({"x": 1}))
    assert main(["ask", "q", "--model", make_spec(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("react-lab: error: ") and says in captured.err
    assert "Traceback" not in captured.err and captured.out == ""


def test_cli_turns_a_directory_for_the_native_protocol_into_one_line(tmp_path, capsys):
    pytest.importorskip("react_lab.lab.agent.native")
    assert main(["ask", "q", "--protocol", "native", "--model", f"scripted:{tmp_path}"]) == 2
    assert capsys.readouterr().err.startswith("react-lab: error: ")


def test_cli_turns_permission_errors_into_one_line(monkeypatch, capsys):
    def unreadable(path):
        raise PermissionError(f"[Errno 13] Permission denied: {path!r}")

    monkeypatch.setattr(ScriptedModel, "from_json", unreadable)
    assert main(["ask", "q", "--model", "scripted:locked.json"]) == 2
    err = capsys.readouterr().err
    assert err == "react-lab: error: [Errno 13] Permission denied: 'locked.json'\n"


def test_cli_keeps_tracebacks_for_unexpected_errors(monkeypatch):
    def broken(spec):
        raise RuntimeError("a bug")

    monkeypatch.setattr("react_lab.lab.cli.commands.load_model", broken)
    # no real model here
    monkeypatch.setattr("react_lab.lab.cli.commands.warm_up", lambda **_: None)
    with pytest.raises(RuntimeError, match="a bug"):
        main(["ask", "q"])


# --------------------------------------------------------------------------- --no-stop


def test_no_stop_with_the_native_protocol_is_a_usage_error(capsys, script):
    err = usage_error(
        capsys, ["ask", "q", "--protocol", "native", "--no-stop", "--model", f"scripted:{script}"]
    )
    assert "react-lab ask: error: argument --no-stop: the native protocol sends no stop" in err


def test_no_stop_with_the_text_protocol_still_runs(capsys, script):
    assert main(["ask", "q", "--no-stop", "--model", f"scripted:{script}", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["stopped_by"] == "answer"


# --------------------------------------------------------------------------- help, progress


def test_eval_help_names_the_scripted_baselines(capsys):
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    out = capsys.readouterr().out
    assert "oracle" in out and "dont_know" in out and "100%" in out and "0%" in out


def test_top_level_help_names_the_scripted_baselines(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "oracle" in out and "dont_know" in out


def test_forge_rate_help_explains_model(capsys):
    with pytest.raises(SystemExit):
        main(["forge-rate", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--model MODEL local (the embedded SmolLM2" in out and "scripted:FILE.json" in out


def test_forge_rate_json_shows_no_progress_bar(tmp_path, monkeypatch, capsys, script):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    assert main(["forge-rate", "--n", "2", "--model", f"scripted:{script}", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["n"] == 2
    assert captured.err == ""


@pytest.mark.parametrize("question", ["", "   ", "\t\n", "\u200b", "\ufeff\u200d"])
def test_ask_refuses_a_blank_question_before_the_model_runs(capsys, tmp_path, question):
    never = tmp_path / "never.json"  # an empty script: any model call would fail loudly
    never.write_text("[]")
    err = usage_error(capsys, ["ask", question, "--model", f"scripted:{never}", "--max-steps", "1"])
    assert "react-lab ask: error: argument question: is blank" in err
    err = usage_error(capsys, ["ask", question, "--config", "best"])
    assert "argument question: is blank" in err


@pytest.mark.parametrize(
    "value, says",
    [
        (",", "an empty tool name in ','"),
        ("", "an empty tool name in ''"),
        ("search,,calc", "an empty tool name"),
        ("a b,c;d", "'a b' is not a tool name"),
        ("search,c;d", "'c;d' is not a tool name"),
    ],
)
def test_parse_tools_is_a_comma_separated_list_of_names(capsys, value, says):
    err = usage_error(capsys, ["parse", "--tools", value])
    assert "react-lab parse: error: argument --tools:" in err and says in err


def test_parse_tools_accepts_names_with_spaces_around_commas(capsys, monkeypatch):
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"Action: calc[1+1]\n")))
    assert main(["parse", "--tools", " search , calc "]) == 0
    assert json.loads(capsys.readouterr().out)["tool"] == "calc"


@pytest.mark.parametrize("value", ["4097", "100000", "99999999999999999999"])
def test_max_tokens_is_capped_at_the_context_window(capsys, script, value):
    from react_lab.lab.backends.local import N_CTX

    err = usage_error(capsys, ["ask", "q", "--model", f"scripted:{script}", "--max-tokens", value])
    assert f"argument --max-tokens: must be a whole number from 1 to {N_CTX}" in err
    assert "context window" in err and f"got {value}" in err


def test_max_tokens_at_the_cap_still_runs(capsys, script):
    assert (
        main(["ask", "q", "--model", f"scripted:{script}", "--json", "--max-tokens", "4096"]) == 0
    )
    assert json.loads(capsys.readouterr().out)["answer"] == "42"


def test_a_reader_that_leaves_early_gets_no_traceback():
    import subprocess
    import sys

    big = "Action: search[" + "a" * 2_000_000 + "]"  # a JSON reply far larger than a pipe holds
    proc = subprocess.Popen(
        [sys.executable, "-m", "react_lab.lab.cli", "parse", "--tools", "search"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdin.write(big.encode())
    proc.stdin.close()
    proc.stdout.read(5)  # `| head -c 5`
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait() == 141 and "Traceback" not in err

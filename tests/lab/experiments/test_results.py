"""Saved results: fingerprinted on save, refused when stale, and every shipped file current."""

import json
import re
from pathlib import Path

import pytest

from react_lab import protocol
from react_lab.lab.backends.load import load_model
from react_lab.lab.cli import main
from react_lab.lab.experiments import forge, results
from react_lab.lab.experiments.results import StaleResults

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def where(tmp_path):
    return tmp_path / "results"


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "forger.json"
    path.write_text(json.dumps([" Look.\nAction: search[refunds]\nObservation: made up"]))
    return path


def save_forge(where, script, n=3, overwrite=False):
    model = f"scripted:{script}"
    data = forge.run_experiment(forge.questions(n), load_model(model), progress=False)
    return results.save(
        "forge-small",
        data,
        experiment="forge",
        directory=where,
        config={
            "n": n,
            "max_tokens": forge.FORGE_MAX_TOKENS,
            "tail": forge.TAIL_SAMPLE,
            "model": model,
        },
        command=f"react-lab forge-rate --n {n} --model {model} --save-results forge-small",
        seconds=data["seconds"],
        overwrite=overwrite,
    )


def test_saved_results_load_back_with_their_fingerprint(where, script):
    path = save_forge(where, script)
    assert path == where / "forge-small.json" and results.saved(where) == ["forge-small"]
    loaded = results.load("forge-small", where)
    assert loaded.data["without_stop"]["forged"] == 3 and loaded.experiment == "forge"
    fp = loaded.fingerprint
    assert fp["model"] == "sha256:" + results.file_sha256(script)
    assert re.fullmatch(r"[0-9a-f]{64}", fp["prompt_sha256"]) and re.fullmatch(
        r"[0-9a-f]{64}", fp["tasks_sha256"]
    )
    assert fp["code"] == {"forge": forge.EXPERIMENT_VERSION} and fp["package_version"]
    assert (
        "fingerprint matches" in loaded.describe() and "react-lab forge-rate" in loaded.describe()
    )
    assert results.check("forge-small", where) == []


def test_the_local_model_is_fingerprinted_by_its_file():
    fp = results.model_fingerprint("local")
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", fp)
    assert results.model_fingerprint("openai:gpt-x") == "openai:gpt-x"  # nothing to hash


def stale_message(name, where):
    with pytest.raises(StaleResults) as caught:
        results.load(name, where)
    return str(caught.value)


def test_a_changed_prompt_makes_the_file_stale(where, script, monkeypatch):
    save_forge(where, script)
    build = protocol.build_prompt
    monkeypatch.setattr(protocol, "build_prompt", lambda *a, **k: build(*a, **k) + " (reworded)")
    message = stale_message("forge-small", where)
    assert "the prompt, exemplars or tool schemas changed" in message
    assert (
        "regenerate them: react-lab forge-rate --n 3" in message
        and "not shown as current" in message
    )
    # the file exists: the command says so
    assert message.endswith("--save-results forge-small --overwrite")


def test_a_changed_model_file_or_code_version_makes_the_file_stale(where, script, monkeypatch):
    save_forge(where, script)
    script.write_text(json.dumps(["something else"]))
    assert "the model file changed" in stale_message("forge-small", where)
    save_forge(where, script, overwrite=True)
    monkeypatch.setattr(forge, "EXPERIMENT_VERSION", forge.EXPERIMENT_VERSION + 1)
    assert results.check("forge-small", where) == ["the experiment's code version changed (code)"]


def test_eval_results_from_the_cli_and_a_changed_task_set(where, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(results, "RESULTS_DIR", where)
    monkeypatch.setenv("REACT_LAB_CACHE", str(tmp_path / "cache"))
    assert (
        main(["eval", "--model", "oracle", "--n", "3", "--json", "--save-results", "eval-oracle"])
        == 0
    )
    assert "saved:" in capsys.readouterr().err
    loaded = results.load("eval-oracle")
    assert loaded.data["metrics"]["success_rate"] == 1.0 and len(loaded.data["records"]) == 3
    assert loaded.config == {
        "protocol": "text",
        "model": "oracle",
        "n": 3,
        "max_steps": 4,
        "max_tokens": 128,
    }
    assert (
        loaded.command
        == "react-lab eval --protocol text --model oracle --n 3 --save-results eval-oracle"
    )
    from react_lab.lab.experiments import tasks

    first = tasks.load_tasks

    def fewer(*args, n=None, **kwargs):
        return first(*args, n=2, **kwargs)

    monkeypatch.setattr(tasks, "load_tasks", fewer)
    assert "the task set changed" in stale_message("eval-oracle", None)


def test_forge_rate_cli_saves_results(where, monkeypatch, tmp_path, script, capsys):
    monkeypatch.setattr(results, "RESULTS_DIR", where)
    monkeypatch.setenv("REACT_LAB_CACHE", str(tmp_path / "cache"))
    assert (
        main(
            [
                "forge-rate",
                "--n",
                "2",
                "--model",
                f"scripted:{script}",
                "--json",
                "--save-results",
                "forge-cli",
            ]
        )
        == 0
    )
    assert results.load("forge-cli").data["n"] == 2


@pytest.mark.parametrize(
    "name, error", [("../escape", ValueError), ("", ValueError), (".hidden", ValueError)]
)
def test_a_results_name_is_a_plain_file_name(name, error, where):
    with pytest.raises(error, match="plain file name"):
        results.save(
            name,
            {},
            experiment="forge",
            config={"n": 1, "max_tokens": 80},
            command="x",
            directory=where,
        )


def test_unknown_experiments_and_missing_files_say_what_to_do(where):
    with pytest.raises(ValueError, match="unknown experiment 'no-such-experiment'.*EXPERIMENTS"):
        results.fingerprint("no-such-experiment", {})
    with pytest.raises(FileNotFoundError, match="--save-results nothing-here"):
        results.load("nothing-here", where)


def test_the_shipped_results_are_package_data():
    text = (ROOT / "pyproject.toml").read_text()
    assert '"react_lab.data.results"' in text and '"react_lab.data.results" = ["*.json"]' in text
    assert results.RESULTS_DIR == ROOT / "react_lab" / "data" / "results"


@pytest.mark.parametrize("name", results.saved())
def test_every_shipped_results_file_matches_the_code(name):
    """Fails when the code moved on since the file was made.

    The message names the command to rerun.
    """
    results.load(name)


def test_eval_with_more_exemplars_is_its_own_fingerprinted_result(
    where, monkeypatch, tmp_path, capsys
):
    """``--exemplars N`` changes the prompt: the file records it, and is refused if they change."""
    monkeypatch.setattr(results, "RESULTS_DIR", where)
    monkeypatch.setenv("REACT_LAB_CACHE", str(tmp_path / "cache"))
    assert main(["eval", "--model", "oracle", "--n", "2", "--json", "--save-results", "plain"]) == 0
    assert (
        main(
            [
                "eval",
                "--model",
                "oracle",
                "--n",
                "2",
                "--exemplars",
                "2",
                "--json",
                "--save-results",
                "two",
            ]
        )
        == 0
    )
    plain, two = results.load("plain"), results.load("two")
    assert "exemplars" not in plain.config and two.config["exemplars"] == 2
    assert two.command == (
        "react-lab eval --protocol text --model oracle --n 2 --exemplars 2 --save-results two"
    )
    assert plain.fingerprint["prompt_sha256"] != two.fingerprint["prompt_sha256"]
    assert plain.fingerprint["tasks_sha256"] == two.fingerprint["tasks_sha256"]
    monkeypatch.setattr(protocol, "EXEMPLARS", protocol.EXEMPLARS[:1] + protocol.EXEMPLARS[2:3])
    assert results.check("two") == ["the prompt, exemplars or tool schemas changed (prompt_sha256)"]
    assert results.check("plain") == []
    capsys.readouterr()
    assert main(["eval", "--model", "oracle", "--protocol", "native", "--exemplars", "2"]) == 2
    assert "--exemplars is for the text protocol" in capsys.readouterr().err


#: The results notebook 08 loads (it fails without them; so does this test).
NOTEBOOK_08_RESULTS = ("eval-text", "eval-native", "eval-text-exemplars-2")


def test_notebook_08_results_are_shipped():
    assert set(NOTEBOOK_08_RESULTS) <= set(results.saved())


#: A notebook's ``results.load("NAME")``: the shipped file it loads.
LOADS = re.compile(r"""results\.load\(\s*["']([\w.-]+)["']\s*\)""")


def test_every_results_file_a_notebook_loads_is_shipped():
    """A notebook that loads a long run's results (core 03 and 08, bench 03, 06 and 08) finds it."""
    loaded = {}
    for path in sorted((ROOT / "notebooks").rglob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for cell in (c for c in cells if c["cell_type"] == "code"):
            for name in LOADS.findall("".join(cell["source"])):
                loaded.setdefault(name, []).append(path.name)
    assert {"forge-100", "forge-100-batch8", "failures-unguarded", *NOTEBOOK_08_RESULTS} <= set(
        loaded
    )
    missing = {name: where for name, where in loaded.items() if name not in results.saved()}
    assert not missing, f"notebooks load results files that are not shipped: {missing}"


def _experiment(name):
    return json.loads((results.RESULTS_DIR / f"{name}.json").read_text())["experiment"]


@pytest.mark.parametrize("name", [n for n in results.saved() if _experiment(n) == "eval"])
def test_shipped_eval_results_agree_with_the_scorer_and_metrics_now(name):
    """The fingerprint holds the scorer's version, not its code, and neither the metrics code
    nor the CLI's current limits: re-score, re-compute and compare them here."""
    from react_lab.lab.experiments.evals import EVAL_MAX_STEPS, EVAL_MAX_TOKENS, metrics
    from react_lab.lab.experiments.tasks import load_tasks, score

    loaded = results.load(name)
    tasks = {t.id: t for t in load_tasks(n=loaded.config.get("n"))}
    # the file's limits are those `react-lab eval` runs with now
    assert (loaded.config["max_steps"], loaded.config["max_tokens"]) == (
        EVAL_MAX_STEPS,
        EVAL_MAX_TOKENS,
    )
    records = loaded.data["records"]
    assert [r["task_id"] for r in records] == list(tasks)
    assert [r["gold"] for r in records] == [t.gold for t in tasks.values()]
    rescored = [score(r["answer"], tasks[r["task_id"]]) for r in records]
    assert rescored == [r["correct"] for r in records]
    assert metrics(records) == loaded.data["metrics"]


@pytest.mark.parametrize(
    "argv",
    [
        ["eval", "--model", "oracle", "--n", "2"],
        ["eval", "--config", "baseline", "--n", "1"],
        ["forge-rate", "--n", "2", "--model", "oracle"],
        ["failures", "--per-category", "1"],
    ],
)
def test_a_bad_results_name_stops_the_cli_before_any_work(
    argv, where, monkeypatch, tmp_path, capsys
):
    monkeypatch.setattr(results, "RESULTS_DIR", where)
    monkeypatch.setenv("REACT_LAB_CACHE", str(tmp_path / "cache"))
    from react_lab.lab.cli import commands

    def no_work(*args, **kwargs):
        raise AssertionError("the experiment ran before the results name was checked")

    for name in ("load_tasks", "load_model", "run_ladder", "choose_tasks"):
        monkeypatch.setattr(commands, name, no_work)
    with pytest.raises(SystemExit) as stopped:
        main(argv + ["--save-results", "a/b"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "argument --save-results: a results name is a plain file name" in err and "'a/b'" in err


def test_an_existing_results_file_is_refused_without_overwrite(
    where, monkeypatch, tmp_path, capsys
):
    """A short run must not replace a shipped result.

    It is refused naming the file, unless --overwrite.
    """
    import shutil

    shipped = where / "shipped"
    shutil.copytree(results.RESULTS_DIR, shipped, ignore=shutil.ignore_patterns("__*"))
    monkeypatch.setattr(results, "RESULTS_DIR", shipped)
    monkeypatch.setenv("REACT_LAB_CACHE", str(tmp_path / "cache"))
    before = (shipped / "eval-native.json").read_bytes()
    argv = [
        "eval",
        "--model",
        "oracle",
        "--n",
        "2",
        "--protocol",
        "native",
        "--json",
        "--save-results",
        "eval-native",
    ]
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "eval-native.json exists already; pass --overwrite" in err and str(shipped) in err
    assert (shipped / "eval-native.json").read_bytes() == before
    with pytest.raises(SystemExit):
        main(["forge-rate", "--n", "1", "--model", "oracle", "--save-results", "forge-100"])
    assert "forge-100.json exists already" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # --overwrite alone names no file
        main(["eval", "--model", "oracle", "--n", "1", "--overwrite"])
    assert "argument --overwrite: give --save-results NAME" in capsys.readouterr().err
    assert main(argv + ["--overwrite"]) == 0  # said explicitly: replaced
    assert results.load("eval-native").config["n"] == 2
    with pytest.raises(ValueError, match="exists already"):  # the library refuses too
        results.save(
            "eval-native", {}, experiment="forge", config={}, command="x", directory=shipped
        )


@pytest.mark.parametrize("name", results.saved())
def test_every_shipped_regenerate_command_replaces_its_file(name):
    """describe() prints a command that works on an existing file: with --overwrite."""
    command = results.load(name).describe().split("regenerate: ", 1)[1]
    assert command.endswith(f"--save-results {name} --overwrite")

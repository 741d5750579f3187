"""Re-scoring stored answers: a scorer change needs no model run, and every shipped file agrees.

``python -m react_lab.lab.experiments.rescore`` (:mod:`react_lab.lab.experiments.rescore`)
re-scores results files' stored answers, rewrites the verdicts and the summary, and gives the
fingerprint the scorer's version of now; a file stale for any other reason is refused.
"""

import importlib
import json
import shutil

import pytest

from react_lab.lab.experiments import (
    exemplars,
    ladder,
    rescore,
    results,
    tasks,
)
from react_lab.lab.experiments.results import StaleResults

SHIPPED = results.RESULTS_DIR
#: A synthetic ladder run of one task, scored right, whose answer contradicts itself.
CONTRADICTION = "no, the invoice was charged twice, with two successful card charges"


def _raw(name, where):
    return json.loads((where / f"{name}.json").read_text(encoding="utf-8"))


def _copy(names, where):
    where.mkdir(exist_ok=True)
    for name in names:
        shutil.copy(SHIPPED / f"{name}.json", where)
    return where


def _wrong_verdict_file(where):
    """A ladder results file whose one record was scored right by an older scorer."""
    cfg = ladder.get_config("pool_k1")
    task = next(t for t in tasks.load_tasks(split="test") if t.id == "duplicate-03")
    rec = {
        "config": cfg.name,
        "task_id": task.id,
        "category": task.category,
        "trial": 0,
        "correct": True,
        "answer": CONTRADICTION,
        "stopped_by": "answer",
        "n_steps": 1,
        "prefix_tokens": 1,
        "exemplar_tokens": 0,
        "prompt_tokens": 1,
        "completion_tokens": 1,
        "seconds": 1.0,
    }
    settings = ladder.results_config(cfg, "test", [task], 1, 0.0, 0, "one")
    ladder.save("ladder-x", [rec], settings, command="c --save-results ladder-x", directory=where)


def test_a_moved_verdict_is_rewritten_with_the_summary_and_nothing_else(tmp_path):
    _wrong_verdict_file(tmp_path)
    with pytest.raises(StaleResults, match="scorer now judges 1.*rescore ladder-x"):
        ladder.load_results(directory=tmp_path)
    before = _raw("ladder-x", tmp_path)
    done = rescore.rescore("ladder-x", tmp_path)
    assert done.changed == ["duplicate-03"] and done.right == (1, 0) and done.written
    after = _raw("ladder-x", tmp_path)
    (row,) = ladder.load_results(directory=tmp_path)
    assert row["rate"].successes == 0
    assert after["data"]["summary"] == ladder.summarize(after["data"]["records"])
    assert after["fingerprint"] == before["fingerprint"]  # the scorer's version has not moved
    assert "1 answer(s) judged again" in after["rescored"]
    unchanged = {k for k in before if before[k] == after[k]}
    assert unchanged == set(before) - {"data"}
    assert rescore.rescore("ladder-x", tmp_path).current  # a second run has nothing to do


def test_a_bumped_scorer_makes_scored_files_stale_until_re_scored(tmp_path, monkeypatch, capsys):
    """Bump the version: eval, ladder and migration files read as stale, naming the command;
    forge files keep no verdicts and stay current; the command brings the rest back."""
    names = ["eval-text", "ladder-test-best", "migration-test", "forge-100"]
    where = _copy(names, tmp_path / "results")
    old, new = tasks.SCORER_VERSION, tasks.SCORER_VERSION + 1
    monkeypatch.setattr(tasks, "SCORER_VERSION", new)
    for name in names[:3]:
        with pytest.raises(StaleResults, match=f"re-score them .*rescore {name}$"):
            results.load(name, where)
    assert results.check("forge-100", where) == []
    bytes_before = {n: (where / f"{n}.json").read_bytes() for n in names}
    assert rescore.main(["--check", "--dir", str(where)]) == 1
    assert {n: (where / f"{n}.json").read_bytes() for n in names} == bytes_before
    assert rescore.main(["--dir", str(where)]) == 0
    out = capsys.readouterr().out
    assert f"eval-text: re-scored, scorer {old} -> {new}; 3/50 right, no verdict moved" in out
    assert "forge-100" not in out  # keeps no scored answers
    for name in names[:3]:
        loaded = results.load(name, where)
        assert loaded.fingerprint["scorer"] == new
        # the answers, the verdicts and the summary stay: no verdict moved
        assert loaded.data == json.loads(bytes_before[name])["data"]
    rewritten = {n: (where / f"{n}.json").read_bytes() for n in names}
    assert rescore.main(["--dir", str(where)]) == 0  # re-runnable: the second run writes nothing
    assert {n: (where / f"{n}.json").read_bytes() for n in names} == rewritten
    assert capsys.readouterr().out.count(": current (") == 3


def test_a_file_saved_before_fingerprints_held_the_scorer_is_re_scored(tmp_path):
    where = _copy(["migration-test"], tmp_path / "results")
    raw = _raw("migration-test", where)
    del raw["fingerprint"]["scorer"]  # as a file made on a branch without it
    raw["data"]["records"][0]["correct"] = not raw["data"]["records"][0]["correct"]
    (where / "migration-test.json").write_text(json.dumps(raw, indent=1), encoding="utf-8")
    with pytest.raises(StaleResults, match="scorer"):
        results.load("migration-test", where)
    done = rescore.rescore("migration-test", where)
    assert done.scorer == (None, tasks.SCORER_VERSION) and len(done.changed) == 1
    loaded = results.load("migration-test", where)
    shipped = results.load("migration-test")
    assert loaded.data["summary"] == shipped.data["summary"]
    assert loaded.data["records"] == shipped.data["records"]


def test_eval_metrics_are_recomputed_when_a_verdict_moves(tmp_path):
    where = _copy(["eval-native"], tmp_path / "results")
    raw = _raw("eval-native", where)
    raw["data"]["records"][3]["correct"] = not raw["data"]["records"][3]["correct"]
    raw["data"]["metrics"]["success_rate"] = -1.0
    (where / "eval-native.json").write_text(json.dumps(raw, indent=1), encoding="utf-8")
    assert rescore.rescore("eval-native", where).changed == [raw["data"]["records"][3]["task_id"]]
    assert results.load("eval-native", where).data == results.load("eval-native").data


def test_a_file_stale_for_another_reason_is_refused_untouched(tmp_path, monkeypatch, capsys):
    where = _copy(["eval-text", "ladder-test-best"], tmp_path / "results")
    raw = _raw("eval-text", where)
    raw["fingerprint"]["prompt_sha256"] = "0" * 64
    raw["fingerprint"].pop("scorer")
    (where / "eval-text.json").write_text(json.dumps(raw, indent=1), encoding="utf-8")
    before = (where / "eval-text.json").read_bytes()
    with pytest.raises(StaleResults, match="cannot stand in for a new run.*--overwrite"):
        rescore.rescore("eval-text", where)
    assert rescore.main(["--dir", str(where)]) == 1
    out = capsys.readouterr().out
    assert "eval-text: not re-scored" in out and "ladder-test-best: current" in out
    assert (where / "eval-text.json").read_bytes() == before


def test_a_file_whose_prompt_reads_another_waits_for_it(tmp_path, monkeypatch, capsys, pools):
    """The runs-pool rungs build their exemplars from a dev file's right answers: it goes first."""
    monkeypatch.setattr(tasks, "SCORER_VERSION", tasks.SCORER_VERSION + 1)
    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    names = ["ladder-test-best_runs", "ladder-dev-t_oldest_first"]
    _copy(names, tmp_path)
    with pytest.raises(rescore.WaitsFor, match="ladder-dev-t_oldest_first"):
        rescore.rescore(names[0])
    assert rescore.main(names) == 0
    out = capsys.readouterr().out
    assert out.index(f"{names[1]}: re-scored") < out.index(f"{names[0]}: re-scored")
    assert all(results.load(n).fingerprint["scorer"] == tasks.SCORER_VERSION for n in names)


@pytest.fixture
def pools():
    """The exemplar pools are built once per process: build them again from these files."""
    exemplars._pool.cache_clear()
    yield
    exemplars._pool.cache_clear()


def test_an_experiment_the_command_does_not_know_is_refused(tmp_path, monkeypatch):
    where = _copy(["eval-text"], tmp_path / "results")
    monkeypatch.setitem(results.EXPERIMENTS, "learner-eval", results.EXPERIMENTS["eval"])
    raw = _raw("eval-text", where)
    raw["experiment"] = "learner-eval"
    (where / "eval-text.json").write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(ValueError, match="not in react_lab.lab.experiments.rescore.SCORED"):
        rescore.rescore("eval-text", where)
    assert rescore.rescore("forge-100") is None  # no verdicts, nothing to do


# --------------------------------------------------------------------------- the shipped files


def test_every_experiment_that_keeps_verdicts_fingerprints_the_scorer():
    kept = {_raw(n, SHIPPED)["experiment"] for n in results.saved() if _verdicts(n)}
    assert kept == set(rescore.SCORED) == {"eval", "ladder", "migration", "agent"}
    for name in results.saved():  # current: test_results.py loads every one
        fingerprint = _raw(name, SHIPPED)["fingerprint"]
        assert ("scorer" in fingerprint) == bool(_verdicts(name)), name
        if _verdicts(name):
            assert fingerprint["scorer"] == tasks.SCORER_VERSION


def _verdicts(name):
    data = _raw(name, SHIPPED)["data"]
    return isinstance(data, dict) and "correct" in (data.get("records") or [{}])[0]


@pytest.mark.parametrize("name", [n for n in results.saved() if _verdicts(n)])
def test_every_shipped_verdict_and_summary_is_the_scorer_s_now(name):
    """A scorer change that was not given a new SCORER_VERSION fails here."""
    done = rescore.rescore(name, write=False)
    assert not done.changed, (
        f"the scorer judges {len(done.changed)} stored answer(s) of {name} differently "
        f"({', '.join(done.changed[:5])}): bump SCORER_VERSION in "
        "react_lab/lab/experiments/tasks.py and run python -m react_lab.lab.experiments.rescore"
    )
    loaded = results.load(name)
    how = rescore.SCORED[loaded.experiment]
    module = importlib.import_module(how.module)
    # the summary is the records': to the last digits a machine's libm may change (ci95)
    recomputed = getattr(module, how.summarize)(loaded.data["records"])
    assert _rounded(recomputed) == _rounded(loaded.data[how.key])


def _rounded(value):
    """``value`` with every float rounded to 12 places, in dicts and lists too."""
    if isinstance(value, float):
        return round(value, 12)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rounded(v) for v in value]
    return value

"""The shipped results files that keep the model's completions still describe today's code.

A results file's fingerprint covers the model, the prompts, the tasks and a hand-bumped code
version, not the parser or the loop: change how a completion is read and a saved run no
longer says what today's code does with what the model wrote. Here each saved run whose
completions are kept is run again through the loop the experiment ran, with the lab's
scripted model returning the saved completions in order (:class:`helpers.replay.ReplayModel`),
and each step's call (tool, arguments), error kind, answer and guard, and the run's
``stopped_by`` and answer, must come out as saved. No model is loaded.

Replayed:

* ``failures-unguarded``: every run, through the experiment's own
  :func:`~react_lab.lab.experiments.failures.unguarded_pass` (guards off, its step and token
  limits, its :class:`~react_lab.lab.experiments.failures.StopProbe`). Its records keep the
  transcript too, so the replayed transcript must be the saved one, span by span: the
  prompts the model answered (observations and error messages included) are today's. The
  probe's look past the stop is not saved, only what it found (a step's ``forged_tokens``),
  so the replay gives the loop the completion as the probe returned it; whether today's
  :func:`react_lab.lab.agent.parser.find_forged` would find the same forgery in the unsaved text is
  not checked.
* ``migration-test``: the runs of the two text arms, through the experiment's own
  :func:`~react_lab.lab.experiments.migration_runs.run_one` (its agent, exemplars and guards);
  each run's three problem counts are compared too. Not replayed: the native arms (a reply's
  tool calls are not saved, only its text), and the text runs holding a completion cut at
  :data:`MIGRATION_COMPLETION_CHARS` characters (``run_one`` keeps no more).
* ``eval-agent-reference-test``: every run of the reference agent (``react-lab eval --agent
  reference``), through :func:`~react_lab.lab.experiments.agent_runs.run_task` with the
  agent as it is today: the answer, the end, the number of steps, the verdict and the
  exemplar picked must come out as saved.
* ``forge-100`` and ``forge-100-batch8``: no loop ran; each trial is one first-step
  completion, read by :func:`react_lab.lab.experiments.forge.describe`. Every trial is read
  again (``forged``, ``forged_at``, ``strict``), and each arm's counts recomputed by
  :func:`~react_lab.lab.experiments.forge.summarize`.

Skipped by name, with the reason (:data:`NOT_REPLAYABLE`): the evaluation files (their
records keep no completion and no finish reason; the text ones' transcripts keep the
parser's *kept* text of each completion, the native one's each reply as the loop read and
rendered it) and the ladder files (their steps keep the reading, never the completion). A
results file in neither list fails
:func:`test_every_shipped_file_is_replayed_or_skipped_with_a_reason`.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from helpers.replay import Diverged, ReplayModel, run_differences

from react_lab.lab.agent import loop
from react_lab.lab.experiments import (
    agent_runs,
    failures,
    forge,
    migration,
    migration_runs,
    results,
)
from react_lab.lab.experiments.tasks import load_tasks
from react_lab.protocol import STOP
from react_lab.tools import default_tools

#: ``run_one`` keeps each step's completion up to this many characters; a saved completion
#: this long may have been cut, so its run cannot be replayed.
MIGRATION_COMPLETION_CHARS = 300

_EVAL_KEPT = (
    "the records' transcripts keep the model's spans as the loop appended them (the parser's "
    "kept text, up to the first action or answer), not the completions, and no step keeps "
    "its finish reason"
)
#: What :func:`react_lab.lab.experiments.forge.describe` is given, from a saved trial.
DESCRIBED = ("question", "stop", "text", "finish_reason", "completion_tokens", "seconds")

#: Shipped files that are not replayed, and why (a name ending in ``*`` is a prefix).
NOT_REPLAYABLE = {
    "eval-text": _EVAL_KEPT,
    "eval-text-exemplars-2": _EVAL_KEPT,
    "eval-native": (
        "the records' transcripts keep each reply as the native loop read and rendered it "
        "(thought, tool calls), not the reply the chat backend returned, and no step keeps "
        "its finish reason"
    ),
    "ladder-*": (
        "the steps keep the reading (tool, args, error, guard, answer, thought), never the "
        "completion"
    ),
}


def _shipped(name: str) -> dict:
    """The ``data`` of shipped results file ``name``, read as stored (fingerprints are
    ``test_results.py``'s)."""
    path = results.RESULTS_DIR / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8"))["data"]


def replay_failures(data: dict) -> dict[str, list[str]]:
    """Replay every run of the failures pass; ``{task_id: differences}`` for runs that differ."""
    tasks = {t.id: t for t in failures.pass_tasks()}
    found = {}
    for record in data["runs"]:
        saved = record["run"]
        try:
            [again] = failures.unguarded_pass(
                [tasks[record["task_id"]]], ReplayModel(saved["steps"]), progress=False
            )
        except Diverged as exc:
            found[record["task_id"]] = [str(exc)]
            continue
        differences = run_differences(saved, again.result.to_dict())
        if again.error != record["error"]:
            differences.append(f"error: saved {record['error']!r}, replayed {again.error!r}")
        differences += transcript_differences(record["transcript"], again.result.transcript.spans)
        if differences:
            found[record["task_id"]] = differences
    return found


def transcript_differences(saved: list, replayed: list) -> list[str]:
    """The first span where a replayed transcript departs from the saved one, as one line.

    The transcript is what the model read: once it differs, the saved completions after it
    answered another prompt than today's code would send.
    """
    replayed = [list(span) for span in replayed]
    for i, (was, now) in enumerate(zip(saved, replayed)):
        if was != now:
            return [f"transcript span {i} ({was[0]}): saved {was[1]!r}, replayed {now[1]!r}"]
    if len(saved) != len(replayed):
        return [f"transcript: saved {len(saved)} spans, replayed {len(replayed)}"]
    return []


def migration_replayable(record: dict) -> bool:
    """True for a text-arm run whose every completion is saved whole."""
    text = migration_runs.ARMS[record["arm"]].protocol == "text"
    whole = all(len(s["completion"]) < MIGRATION_COMPLETION_CHARS for s in record["steps"])
    return text and whole


def replay_migration(data: dict) -> dict[str, list[str]]:
    """Replay the replayable runs of the migration experiment; ``{"arm task_id": differences}``."""
    tools = default_tools()
    found = {}
    for record in filter(migration_replayable, data["records"]):
        label = f"{record['arm']} {record['task_id']}"
        [task] = migration_runs.tasks_named(record["task_id"])
        arm, model = migration_runs.ARMS[record["arm"]], ReplayModel(record["steps"])
        try:
            again = migration_runs.run_one(arm, task, model=model, chat=None, tools=tools)
        except Diverged as exc:
            found[label] = [str(exc)]
            continue
        differences = run_differences(record, again)
        if again["problems"] != record["problems"]:
            differences.append(
                f"problems: saved {record['problems']}, replayed {again['problems']}"
            )
        if differences:
            found[label] = differences
    return found


def replay_forge(data: dict) -> dict[str, list[str]]:
    """Read every forge trial again; ``{"arm #i": differences}``, and ``{"arm counts": ...}``
    when an arm's counts (:func:`~react_lab.lab.experiments.forge.summarize` of the trials read
    again) differ from the saved ones."""
    arms = {**data["trials"], "tail_subsample": data["tail_subsample"]["trials"]}
    found = {}
    for arm, trials in arms.items():
        read = [forge.describe(*(t[key] for key in DESCRIBED)) for t in trials]
        for i, (trial, again) in enumerate(zip(trials, read)):
            differences = [
                f"{key}: saved {trial[key]!r}, read now {again[key]!r}"
                for key in ("forged", "forged_at", "strict")
                if trial[key] != again[key]
            ]
            if differences:
                found[f"{arm} #{i}"] = differences
        if arm in data["trials"]:  # with_stop, without_stop: the arm's counts
            counts = forge.summarize(read)
            saved = {key: data[arm][key] for key in counts}
            if counts != saved:
                found[f"{arm} counts"] = [f"saved {saved}, counted now {counts}"]
    return found


def replay_agent(data: dict) -> dict[str, list[str]]:
    """Replay every run of a text-protocol agent file (``react-lab eval --agent``) through the
    agent it names, today's (:func:`react_lab.lab.experiments.agent_runs.run_task`: the same
    exemplar picked, the same tools); ``{task_id: differences}`` in the answer, the end, the
    steps taken, the verdict or the exemplar."""
    tools, pool = default_tools(), agent_runs.dev_pool()
    tasks = {t.id: t for t in load_tasks(split="all")}
    found = {}
    for record in data["records"]:
        agent = agent_runs.load_agent(record["agent"])
        model = ReplayModel(record["steps"])
        again = agent_runs.run_task(
            agent, tasks[record["task_id"]], model, tools, pool=pool, timeout=None
        )
        keys = ("answer", "stopped_by", "error", "n_steps", "correct", "exemplar_ids")
        differences = [f"{k}: saved {record[k]!r}, replayed {again[k]!r}" for k in keys]
        differences = [d for k, d in zip(keys, differences) if record[k] != again[k]]
        if differences:
            found[record["task_id"]] = differences
    return found


#: Each replayed file and how it is replayed.
REPLAYS = {
    "eval-agent-reference-test": replay_agent,
    "failures-unguarded": replay_failures,
    "migration-test": replay_migration,
    "forge-100": replay_forge,
    "forge-100-batch8": replay_forge,
}


def _matches(key: str, name: str) -> bool:
    """True if ``key`` names results file ``name``: the name itself, or its prefix and ``*``."""
    return name == key or (key.endswith("*") and name.startswith(key[:-1]))


def test_every_shipped_file_is_replayed_or_skipped_with_a_reason():
    for name in results.saved():
        said = [key for key in [*REPLAYS, *NOT_REPLAYABLE] if _matches(key, name)]
        assert len(said) == 1, (
            f"results file {name}: say once whether its runs are replayed (REPLAYS) or why "
            f"not (NOT_REPLAYABLE); said by {said or 'neither'}"
        )


@pytest.mark.parametrize("name", [*REPLAYS, *NOT_REPLAYABLE])
def test_shipped_runs_replay_as_saved(name):
    if name in NOT_REPLAYABLE:
        files = [n for n in results.saved() if _matches(name, n)]
        what = f"{name} ({len(files)} files)" if name.endswith("*") else name
        pytest.skip(f"{what} not replayed: {NOT_REPLAYABLE[name]}")
    found = REPLAYS[name](_shipped(name))
    lines = [f"{run}: {d}" for run, differences in found.items() for d in differences]
    assert not found, f"{name}: {len(found)} runs read differently today:\n" + "\n".join(lines)


def test_migration_replays_most_text_runs():
    """The cut-off rule leaves most text runs to replay (not a file replayed in name only)."""
    records = _shipped("migration-test")["records"]
    text = [r for r in records if migration_runs.ARMS[r["arm"]].protocol == "text"]
    assert sum(map(migration_replayable, text)) >= 0.8 * len(text)


# --------------------------------------------------------------------------- it can fail


def _first_call(steps: list[dict]) -> str:
    """The first saved completion the run read as a call."""
    return next(s["completion"] for s in steps if (s.get("action") or s.get("tool")))


def _misread(monkeypatch, module, text: str) -> None:
    """Make ``module``'s ``parse`` read ``text`` as an answer, every other completion as today."""
    real = module.parse

    def parse(completion, *args, **kwargs):
        return real(" Answer: misread" if completion == text else completion, *args, **kwargs)

    monkeypatch.setattr(module, "parse", parse)


def test_a_loop_parser_reading_one_completion_differently_is_reported(monkeypatch):
    data = _shipped("failures-unguarded")
    record = next(r for r in data["runs"] if r["run"]["steps"][0]["action"])
    text = record["run"]["steps"][0]["completion"]
    _misread(monkeypatch, loop, text)
    found = replay_failures(data)
    assert "step 1 tool: saved 'list_invoices', replayed None" in found[record["task_id"]]
    holding = {
        r["task_id"]
        for r in data["runs"]
        if any(s["completion"] == text for s in r["run"]["steps"])
    }
    assert set(found) == holding  # every run holding that completion, and no other


def test_a_reworded_error_message_is_reported(monkeypatch):
    """The same reading in other words: the model read another prompt than today's code sends."""
    real = loop.parse

    def parse(*args, **kwargs):
        result = real(*args, **kwargs)
        return replace(result, reason=f"{result.reason} (reworded)") if result.reason else result

    monkeypatch.setattr(loop, "parse", parse)
    data = _shipped("failures-unguarded")
    found = replay_failures(data)
    unread = {
        r["task_id"]
        for r in data["runs"]
        if any(s["error"] and not s["action"] for s in r["run"]["steps"])
    }
    assert set(found) == unread
    assert all(d.startswith("transcript span ") for lines in found.values() for d in lines)


def test_the_migration_agent_reading_one_completion_differently_is_reported(monkeypatch):
    data = _shipped("migration-test")
    record = next(r for r in filter(migration_replayable, data["records"]) if r["steps"][0]["tool"])
    _misread(monkeypatch, migration, record["steps"][0]["completion"])
    found = replay_migration(data)
    assert (
        f"step 1 tool: saved {record['steps'][0]['tool']!r}, replayed None"
        in found[f"{record['arm']} {record['task_id']}"]
    )


def test_a_forgery_read_differently_is_reported(monkeypatch):
    data = _shipped("forge-100")
    i, trial = next((i, t) for i, t in enumerate(data["trials"]["without_stop"]) if t["forged"])
    real = forge.find_forged
    monkeypatch.setattr(
        forge, "find_forged", lambda text: None if text == trial["text"] else real(text)
    )
    found = replay_forge(data)
    assert found[f"without_stop #{i}"][0] == "forged: saved True, read now False"
    assert "without_stop counts" in found


def test_a_longer_run_than_saved_is_reported():
    """A replay that asks the model for one step more than saved stops there, saying so."""
    steps = _shipped("failures-unguarded")["runs"][0]["run"]["steps"]
    model = ReplayModel(steps[:1])
    assert model.complete("prompt", stop=STOP).text == steps[0]["completion"]
    with pytest.raises(Diverged, match="step 2"):
        model.complete("prompt", stop=STOP)

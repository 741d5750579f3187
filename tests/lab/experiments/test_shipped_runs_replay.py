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
* ``migration-test``: every run, through the experiment's own
  :func:`~react_lab.lab.experiments.migration_runs.run_one` (the reference agent's ``run_loop``
  or ``run_native``, its exemplars), the text arms on their saved completions, the native arms
  on their saved replies (:class:`helpers.replay.ReplayChatModel`). Each step keeps what the
  loop wrote after it (the observation, refusal or best-effort request appended to the
  transcript; the tool messages after a reply), so that must come out as saved, with each
  step's three problem counts, the run's answer, ``stopped_by`` and score.
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
from helpers.replay import Diverged, ReplayChatModel, ReplayModel, run_differences

from react_lab import agent as reference
from react_lab.lab.agent import loop
from react_lab.lab.experiments import agent_runs, failures, forge, migration_runs, results
from react_lab.lab.experiments.tasks import load_tasks
from react_lab.protocol import STOP
from react_lab.tools import default_tools

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
    "injection-*": (
        "a record keeps its answer and what was counted (proposed, executed, carried), not "
        "the completions: the suite measures outcomes on a working copy of the database"
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


def replay_migration(data: dict) -> dict[str, list[str]]:
    """Replay every run of the migration experiment; ``{"arm task_id": differences}``."""
    tools = default_tools()
    found = {}
    for record in data["records"]:
        label = f"{record['arm']} {record['task_id']}"
        [task] = migration_runs.tasks_named(record["task_id"])
        arm = migration_runs.ARMS[record["arm"]]
        models = (
            {"model": ReplayModel(record["steps"]), "chat": None}
            if arm.protocol == "text"
            else {"model": None, "chat": ReplayChatModel(record["steps"])}
        )
        try:
            again = migration_runs.run_one(arm, task, **models, tools=tools)
        except Diverged as exc:
            found[label] = [str(exc)]
            continue
        differences = migration_differences(record, again)
        if differences:
            found[label] = differences
    return found


def migration_differences(saved: dict, replayed: dict) -> list[str]:
    """Where a replayed migration run differs from the saved one: one line per difference."""
    found = []
    for number, (was, now) in enumerate(zip(saved["steps"], replayed["steps"]), start=1):
        found += [
            f"step {number} {key}: saved {was[key]!r}, replayed {now[key]!r}"
            for key in ("loop_wrote", "problems")
            if was[key] != json.loads(json.dumps(now[key]))
        ]
    if len(saved["steps"]) != len(replayed["steps"]):
        found.append(f"steps: saved {len(saved['steps'])}, replayed {len(replayed['steps'])}")
    found += [
        f"{key}: saved {saved[key]!r}, replayed {replayed[key]!r}"
        for key in ("stopped_by", "answer", "correct", "problems")
        if saved[key] != replayed[key]
    ]
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


def test_migration_replays_every_run_of_both_protocols():
    """Not a file replayed in name only: every arm's every run is replayed."""
    records = _shipped("migration-test")["records"]
    arms = {r["arm"] for r in records}
    assert arms == set(migration_runs.ARMS) and len(records) == len(arms) * len(
        migration_runs.experiment_tasks()
    )
    assert all(r["steps"] and "loop_wrote" in r["steps"][0] for r in records)


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


class _Missing:
    """``ACTION_RE`` that reads nothing in one completion, and every other as the real one."""

    def __init__(self, real, text: str):
        self.real, self.text = real, text

    def search(self, text):
        return None if text == self.text else self.real.search(text)


def test_the_reference_loop_reading_one_completion_differently_is_reported(monkeypatch):
    data = _shipped("migration-test")
    text = [r for r in data["records"] if migration_runs.ARMS[r["arm"]].protocol == "text"]
    record = next(r for r in text if r["steps"][0]["problems"]["calls"])
    monkeypatch.setattr(
        reference, "ACTION_RE", _Missing(reference.ACTION_RE, record["steps"][0]["completion"])
    )
    found = replay_migration(data)
    label = f"{record['arm']} {record['task_id']}"
    assert any(line.startswith("step 1 loop_wrote: saved ") for line in found[label])
    assert any("no action line" in line for line in found[label])


def test_a_reworded_tool_result_in_the_native_loop_is_reported(monkeypatch):
    """The native loop's tool messages are what the model reads next: a new wording is a change."""
    real = reference.tool_messages

    def tool_messages(reply, tools):
        said, *results = real(reply, tools)
        return [said, *({**m, "content": f"{m['content']} (reworded)"} for m in results)]

    monkeypatch.setattr(reference, "tool_messages", tool_messages)
    data = _shipped("migration-test")
    native = [r for r in data["records"] if migration_runs.ARMS[r["arm"]].protocol == "native"]
    answered = {  # a reply the loop answered with messages: tool results, or a note
        f"{r['arm']} {r['task_id']}" for r in native if any(s["loop_wrote"] for s in r["steps"])
    }
    found = replay_migration(data)
    assert answered and set(found) == answered
    assert all(any(line.startswith("step ") for line in found[label]) for label in answered)


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

"""The migration experiment: both agents of :mod:`react_lab.lab.experiments.migration` over the
same questions.

:data:`ARMS` are the agents run: the text agent and the native agent with the same dev-pool
exemplar per question, and each with none. :func:`run_experiment` runs them, :func:`summarize`
counts the three problems (:data:`react_lab.lab.experiments.migration.PROBLEMS`) and how the runs
ended, and :func:`save` writes the fingerprinted results file ``migration-test`` (experiment
``"migration"`` of :data:`react_lab.lab.experiments.results.EXPERIMENTS`; :func:`fingerprint_inputs`
says what it depends on). Made by::

    flock /tmp/react_lab_model.lock env REACT_LAB_THREADS=2 \\
        .venv/bin/python -m react_lab.lab.experiments.migration_runs \\
        --save-results migration-test --overwrite
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import json
import textwrap
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from ...messages import first_messages
from ...protocol import build_prompt
from ...tools import Tool, default_tools, tool_schemas
from ..agent.trace import RunResult
from ..guards import LabGuards
from .migration import (
    MAX_STEPS,
    MAX_TOKENS,
    PROBLEMS,
    act,
    call_problem,
    named_args,
    native_agent,
    run_problems,
    step_problems,
    text_agent,
)

# --------------------------------------------------------------------------- the experiment


@dataclass(frozen=True)
class Arm:
    """One agent in the experiment.

    Its ``protocol`` and whether it gets the question's pool exemplar.
    """

    name: str
    protocol: str
    exemplar: bool
    about: str


#: The arms, each over the same questions: both agents with the same dev-pool exemplar per
#: question (the ladder's ``pool_k1`` and ``native_pool_k1``), and both with none.
ARMS = {
    a.name: a
    for a in (
        Arm("text", "text", True, "text agent, 1 dev-pool exemplar per question"),
        Arm("native", "native", True, "native agent, the same exemplar as past messages"),
        Arm(
            "native_no_exemplar",
            "native",
            False,
            "native agent, no exemplar (what the migration deletes)",
        ),
        Arm("text_no_exemplar", "text", False, "text agent, no exemplar"),
    )
}

#: Bump when a change here changes what a run does: the saved results then read as stale.
CODE_VERSION = 1
#: The shipped results file and its questions: the first two of each category of the test half
#: (the exemplars come from the dev pool, so no question is its own exemplar).
RESULTS_NAME, SPLIT, PER_CATEGORY = "migration-test", "test", 2


def exemplars_of(arm: Arm, task) -> list:
    """The exemplars an arm shows for ``task``: the nearest dev-pool exemplar (the ladder's
    :func:`react_lab.lab.experiments.configs.exemplars_for` with ``pool_k1``), or none."""
    from .configs import exemplars_for, get_config

    return exemplars_for(get_config("pool_k1"), task) if arm.exemplar else []


def run_one(arm: Arm, task, *, model, chat, tools: dict[str, Tool]) -> dict:
    """Run ``task`` through one arm; return its record (JSON-ready, a short copy of every step).

    ``model`` is the text backend, ``chat`` the chat backend (the embedded model under the
    reply grammar for the shipped file). A prompt that outgrows the context window ends
    the run with ``stopped_by="context_window"``.
    """
    from ..backends.llama_state import ContextWindowExceeded
    from .tasks import score

    agent, backend = (text_agent, model) if arm.protocol == "text" else (native_agent, chat)
    t0 = time.perf_counter()
    try:
        result = agent(task.question, backend, tools, exemplars=exemplars_of(arm, task))
    except ContextWindowExceeded:
        result = RunResult(task.question, None, "context_window")
    offered = LabGuards().offered_tools(tools)
    steps = [
        {
            "tool": (s.action or {}).get("tool"),
            "args": (s.action or {}).get("args"),
            "error": (s.error or "")[:200] or None,
            "guard": s.guard,
            "answer": s.answer,
            "finish_reason": s.finish_reason,
            "completion": s.completion[:300],
            "problems": step_problems(s, arm.protocol, offered),
        }
        for s in result.steps
    ]
    return {
        "arm": arm.name,
        "task_id": task.id,
        "category": task.category,
        "correct": score(result.answer, task),
        "answer": result.answer,
        "stopped_by": result.stopped_by,
        "n_steps": len(result.steps),
        "seconds": round(time.perf_counter() - t0, 2),
        "prompt_tokens": sum(s.prompt_tokens for s in result.steps),
        "completion_tokens": sum(s.completion_tokens for s in result.steps),
        "problems": run_problems(result, arm.protocol, offered),
        "steps": steps,
    }


def run_experiment(
    tasks: Sequence,
    arms: Sequence[str] = tuple(ARMS),
    *,
    model=None,
    chat=None,
    log: str | Path | None = None,
    progress: Callable[[str], None] | None = print,
) -> list[dict]:
    """Run every task through every arm, task by task; return the records, arm order within a task.

    ``model``/``chat`` default to the embedded model
    (:func:`react_lab.lab.backends.local.local_model`) and
    :class:`react_lab.lab.backends.chat.LocalChatModel` on it. With ``log`` (a JSONL file),
    records already in it are reused and new ones appended, so a stopped run resumes.
    ``progress`` gets one line per run (None: silent). Raises ValueError for an unknown arm.
    """
    unknown = [a for a in arms if a not in ARMS]
    if unknown:
        raise ValueError(f"unknown arm {unknown[0]!r}; arms: {', '.join(ARMS)}")
    if model is None or chat is None:
        from ..backends.chat import LocalChatModel
        from ..backends.local import local_model

        model = model or local_model()
        chat = chat or LocalChatModel(local_model())
    done = {}
    if log is not None and Path(log).is_file():
        for line in Path(log).read_text(encoding="utf-8").splitlines():
            try:
                r = json.loads(line)
            except ValueError:  # a torn last line
                continue
            done[(r["arm"], r["task_id"])] = r
    tools = default_tools()
    records = []
    for task in tasks:
        for name in arms:
            rec = done.get((name, task.id))
            if rec is None:
                rec = run_one(ARMS[name], task, model=model, chat=chat, tools=tools)
                if log is not None:
                    Path(log).parent.mkdir(parents=True, exist_ok=True)
                    with Path(log).open("a", encoding="utf-8") as fh:
                        fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
            records.append(rec)
            if progress:
                p = rec["problems"]
                progress(
                    f"{'✓' if rec['correct'] else '✗'} {name:<19} {task.id:<18} "
                    f"{rec['stopped_by']:<9} {rec['seconds']:5.1f} s  "
                    f"unreadable {p['unreadable']} invalid {p['invalid']} undone {p['undone']}"
                )
    return records


def summarize(records: Sequence[dict]) -> dict[str, dict]:
    """Per arm: runs, right answers, how the runs ended, the three problems by step, call and run.

    ``{arm: {"runs", "correct", "stopped_by": {guard: runs}, "steps", "calls", "cut_off"
    (steps that hit max_tokens), "guards" ({guard: steps it acted in}), and for each
    problem ``{"count", "of", "runs"}`` -- its steps (``invalid``: refused calls) out of
    ``of`` steps (calls), and how many runs had it at least once}}``, arms in first-seen order.
    """
    out: dict[str, dict] = {}
    for r in records:
        s = out.setdefault(
            r["arm"],
            {
                "runs": 0,
                "correct": 0,
                "stopped_by": Counter(),
                "steps": 0,
                "calls": 0,
                "cut_off": 0,
                "guards": Counter(),
                **{p: {"count": 0, "of": 0, "runs": 0} for p in PROBLEMS},
            },
        )
        s["runs"] += 1
        s["correct"] += bool(r["correct"])
        s["stopped_by"][r["stopped_by"]] += 1
        p = r["problems"]
        s["steps"] += p["steps"]
        s["calls"] += p["calls"]
        s["cut_off"] += sum(st["finish_reason"] == "length" for st in r["steps"])
        s["guards"].update(st["guard"] for st in r["steps"] if st["guard"])
        for name in PROBLEMS:
            s[name]["count"] += p[name]
            s[name]["of"] += p["calls"] if name == "invalid" else p["steps"]
            s[name]["runs"] += bool(p[name])
    return {
        arm: {**s, "stopped_by": dict(s["stopped_by"]), "guards": dict(s["guards"])}
        for arm, s in out.items()
    }


# --------------------------------------------------------------------------- the results file


def _code(fn: Callable) -> list[str]:
    """What the fingerprint holds of ``fn``: its code as :func:`ast.unparse` writes it back.

    The docstring is left out. Parsed and written back, code has no comments and one layout,
    so a reworded comment, a rewrapped docstring or a reformatted line is not a change; a
    changed name, value or statement is.
    """
    node = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
    if ast.get_docstring(node) is not None:
        node.body = node.body[1:]
    return ast.unparse(node).splitlines()


def first_prompt(arm: Arm, task, tools: dict[str, Tool]) -> str:
    """What the model reads first in ``arm`` for ``task``.

    The text prompt, or the rendered chat turns.
    """
    from ..backends.chat import render_messages

    offered = LabGuards().offered_tools(tools)
    if arm.protocol == "text":
        return build_prompt(task.question, offered.values(), exemplars_of(arm, task))
    return render_messages(
        first_messages(task.question, offered, exemplars=exemplars_of(arm, task)),
        tool_schemas(offered),
    )


def fingerprint_inputs(config: dict):
    """The fingerprint inputs of a migration results file.

    See :data:`react_lab.lab.experiments.results.EXPERIMENTS`. ``config``: ``{"split",
    "per_category", "task_ids", "arms", "max_steps", "max_tokens"}``. The prompt part holds
    both agents' code (:func:`_code`: no comments, no layout), every first prompt of the run
    and the tool schemas, so a change to any of them makes the file stale.
    """
    from .results import Inputs
    from .tasks import SCORER_VERSION

    tasks = list(tasks_of(config).values())
    tools = default_tools()
    prompt = {
        "agents": {
            fn.__name__: _code(fn)
            for fn in (text_agent, native_agent, act, call_problem, named_args)
        },
        "first_prompts": {
            a: [first_prompt(ARMS[a], t, tools) for t in tasks] for a in config["arms"]
        },
        "schemas": tool_schemas(LabGuards().offered_tools(tools)),
    }
    return Inputs(
        model="local",
        prompt=prompt,
        tasks=[dataclasses.asdict(t) for t in tasks],
        code=CODE_VERSION,
        scorer=SCORER_VERSION,
    )


def tasks_of(config: dict) -> dict:
    """The tasks a migration results ``config`` ran (its ``task_ids``), by id, in that order."""
    from .tasks import load_tasks

    by_id = {t.id: t for t in load_tasks(split="all")}
    return {i: by_id[i] for i in config["task_ids"]}


def results_config(tasks: Sequence, arms: Sequence[str]) -> dict:
    """The ``config`` a migration results file is saved (and fingerprinted) with."""
    return {
        "split": SPLIT,
        "per_category": PER_CATEGORY,
        "task_ids": [t.id for t in tasks],
        "arms": list(arms),
        "max_steps": MAX_STEPS,
        "max_tokens": MAX_TOKENS,
    }


COMMAND = (
    "flock /tmp/react_lab_model.lock env REACT_LAB_THREADS=2 "
    f".venv/bin/python -m react_lab.lab.experiments.migration_runs --save-results {RESULTS_NAME}"
)


def save(
    records: Sequence[dict],
    tasks: Sequence,
    arms: Sequence[str],
    *,
    name: str = RESULTS_NAME,
    directory: str | Path | None = None,
    overwrite: bool = False,
) -> Path:
    """Save a finished run as the fingerprinted results file ``name``; return its path."""
    from . import results

    data = {"summary": summarize(records), "records": list(records)}
    return results.save(
        name,
        data,
        experiment="migration",
        config=results_config(tasks, arms),
        command=COMMAND,
        seconds=sum(r["seconds"] for r in records),
        directory=directory,
        overwrite=overwrite,
    )


def load(name: str = RESULTS_NAME, directory: str | Path | None = None):
    """Load the shipped results; stale files raise.

    Returns :class:`react_lab.lab.experiments.results.Results`.
    """
    from . import results

    return results.load(name, directory)


def experiment_tasks() -> list:
    """The questions of the shipped file.

    The first :data:`PER_CATEGORY` of each category of the test half.
    """
    from .ladder import choose_tasks

    return choose_tasks(SPLIT, per_category=PER_CATEGORY)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line.

    ``python -m react_lab.lab.experiments.migration_runs [--save-results NAME [--overwrite]]
    [--n N] [--arms A,B]``.
    """
    from .results import cache_dir, check_target

    ap = argparse.ArgumentParser(
        prog="python -m react_lab.lab.experiments.migration_runs",
        description=__doc__.split("\n\n")[0],
    )
    ap.add_argument(
        "--save-results",
        metavar="NAME",
        default=None,
        help=f"save the results file NAME (the shipped one is {RESULTS_NAME})",
    )
    ap.add_argument("--overwrite", action="store_true", help="replace an existing results file")
    ap.add_argument(
        "--n", type=int, default=None, help="only the first N questions (not with --save)"
    )
    ap.add_argument("--arms", default=",".join(ARMS), help="comma-separated arms (default: all)")
    args = ap.parse_args(argv)
    tasks, arms = experiment_tasks(), [a.strip() for a in args.arms.split(",") if a.strip()]
    if args.save_results and (args.n or arms != list(ARMS)):
        ap.error("--save-results runs every question through every arm; leave out --n and --arms")
    if args.overwrite and not args.save_results:
        ap.error("argument --overwrite: give --save-results NAME")
    if args.save_results:
        try:  # a bad name or an existing file stops here, before the runs
            check_target(args.save_results, overwrite=args.overwrite)
        except ValueError as exc:
            ap.error(f"argument --save-results: {exc}")
    tasks = tasks[: args.n] if args.n else tasks
    records = run_experiment(tasks, arms, log=cache_dir() / "migration" / f"{RESULTS_NAME}.jsonl")
    for arm, s in summarize(records).items():
        print(
            f"{arm:<19} right {s['correct']}/{s['runs']}  "
            + "  ".join(f"{p} {s[p]['count']}/{s[p]['of']}" for p in PROBLEMS)
            + f"  ended {s['stopped_by']}"
        )
    if args.save_results:
        print(save(records, tasks, arms, name=args.save_results, overwrite=args.overwrite))
    return 0


# --------------------------------------------------------------------------- notebook 07's


def tasks_named(*ids: str) -> list:
    """The questions of the results file ``migration-test`` with these ids, in this order."""
    by_id = {t.id: t for t in experiment_tasks()}
    return [by_id[i] for i in ids]


def exemplar_for(task) -> list:
    """The nearest dev-pool exemplar for ``task``: what the file's runs showed.

    ``task`` is a task, or a question.
    """
    from .tasks import Task

    if isinstance(task, str):
        task = Task(id="", category="", question=task, gold="", kind="text")
    return exemplars_of(ARMS["text"], task)


def saved_results():
    """The fingerprinted results file ``migration-test`` (a stale file raises)."""
    return load()


if __name__ == "__main__":
    raise SystemExit(main())

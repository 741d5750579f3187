"""The migration experiment: the reference agent's two loops over the same questions.

The learner's migration is their own diff: ``run_loop`` turned into ``run_native`` in notebook
07. Here both loops run as the reference agent holds them after notebook 08
(:func:`react_lab.agent.composed`: ``run_loop`` with its two guards, ``observe`` with the schema
check), and every model call is counted as notebook 07's :func:`measured` counts the learner's
own (:func:`react_lab.lab.experiments.migration.counted`). :data:`ARMS` are the loops run: each
with the same dev-pool exemplar per question, and each with none. :func:`run_experiment` runs
them, :func:`summarize` counts the three problems
(:data:`react_lab.lab.experiments.migration.PROBLEMS`) and how the runs ended, and :func:`save`
writes the fingerprinted results file ``migration-test`` (experiment ``"migration"`` of
:data:`react_lab.lab.experiments.results.EXPERIMENTS`; :func:`fingerprint_inputs` says what it
depends on). Made by::

    flock /tmp/react_lab_model.lock env REACT_LAB_THREADS=2 \\
        .venv/bin/python -m react_lab.lab.experiments.migration_runs \\
        --save-results migration-test --overwrite

``--log FILE`` keeps each finished run in a JSONL file: run again after an interruption and the
runs in it are not run twice.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from ...messages import first_messages
from ...protocol import build_prompt
from ...tools import Tool, default_tools, tool_schemas
from .agent_runs import reference_code
from .migration import MAX_STEPS, MAX_TOKENS, PROBLEMS, Watched, counted

# --------------------------------------------------------------------------- the experiment


@dataclass(frozen=True)
class Arm:
    """One loop in the experiment.

    Its ``protocol`` (``"text"``: the reference ``run_loop``; ``"native"``: ``run_native``) and
    whether it gets the question's pool exemplar.
    """

    name: str
    protocol: str
    exemplar: bool
    about: str


#: The arms, each over the same questions: both loops with the same dev-pool exemplar per
#: question (the ladder's ``pool_k1`` and ``native_pool_k1`` exemplar), and both with none.
ARMS = {
    a.name: a
    for a in (
        Arm("text", "text", True, "the reference run_loop, 1 dev-pool exemplar per question"),
        Arm("native", "native", True, "the reference run_native, the same exemplar as messages"),
        Arm(
            "native_no_exemplar",
            "native",
            False,
            "the reference run_native, no exemplar (what the migration deletes)",
        ),
        Arm("text_no_exemplar", "text", False, "the reference run_loop, no exemplar"),
    )
}

#: Bump when a change here changes what a run does: the saved results then read as stale.
#: 2: the reference agent's two loops (:func:`react_lab.agent.composed`), counted per model
#: call as notebook 07 counts them; 1: the lab's copies of the agent, ``text_agent`` and
#: ``native_agent``.
CODE_VERSION = 2
#: The shipped results file and its questions: the first two of each category of the test half
#: (the exemplars come from the dev pool, so no question is its own exemplar).
RESULTS_NAME, SPLIT, PER_CATEGORY = "migration-test", "test", 2
#: The edits the experiment leaves out: it measured 06's guards loop, before the provenance
#: guard's edit (which checks answers too; re-measure to take it in).
BEFORE = ("run_loop_provenance",)


def exemplars_of(arm: Arm, task) -> list:
    """The exemplars an arm shows for ``task``: the nearest dev-pool exemplar (the ladder's
    :func:`react_lab.lab.experiments.configs.exemplars_for` with ``pool_k1``), or none."""
    from .configs import exemplars_for, get_config

    return exemplars_for(get_config("pool_k1"), task) if arm.exemplar else []


def loop_of(arm: Arm) -> Callable:
    """The loop ``arm`` runs: the reference agent's ``run_loop`` or ``run_native``, as
    :func:`react_lab.agent.composed` holds them (built afresh, from the module as it is now)."""
    from ...agent import composed

    return getattr(composed(without=BEFORE), "run_loop" if arm.protocol == "text" else "run_native")


def run_one(arm: Arm, task, *, model, chat, tools: dict[str, Tool]) -> dict:
    """Run ``task`` through one arm; return its record (JSON-ready, every model call kept).

    ``model`` is the text backend, ``chat`` the chat backend (the embedded model under the
    reply grammar for the shipped file); ``tools`` are the tools the loop is given. Each step
    is one model call: what the model wrote (``completion``; a reply's ``thought`` and
    ``tool_calls`` too), its finish reason and tokens, its three problems
    (:func:`react_lab.lab.experiments.migration.counted`) and ``loop_wrote``: what the loop
    added before the next call (the text appended to the prompt; the messages after the
    reply), None after the last. ``stopped_by`` is ``"answer"``, ``"max_steps"`` (the steps ran
    out: the text loop's labelled best effort, the native loop's None) or
    ``"context_window"`` (a prompt outgrew the model's window; the calls before it are kept).
    """
    from ..backends.llama_state import ContextWindowExceeded
    from .tasks import score

    watched = Watched(model if arm.protocol == "text" else chat)
    t0 = time.perf_counter()
    try:
        answer, _ = loop_of(arm)(
            task.question, watched, tools, exemplars=exemplars_of(arm, task), max_steps=MAX_STEPS
        )
        # the text loop's best effort is one call past the steps
        ended = answer is not None and len(watched.said) <= MAX_STEPS
        stopped_by = "answer" if ended else "max_steps"
    except ContextWindowExceeded:
        answer, stopped_by = None, "context_window"
    seconds = time.perf_counter() - t0
    per_call, total = counted(watched, tools)
    following = [*watched.asked[1:], None]
    steps = [
        {
            **said_by_model(said),
            "finish_reason": said.finish_reason,
            "prompt_tokens": said.prompt_tokens,
            "completion_tokens": said.completion_tokens,
            "problems": problems,
            "loop_wrote": loop_wrote(asked, said, after),
        }
        for said, asked, after, problems in zip(watched.said, watched.asked, following, per_call)
    ]
    return {
        "arm": arm.name,
        "task_id": task.id,
        "category": task.category,
        "correct": score(answer, task),
        "answer": answer,
        "stopped_by": stopped_by,
        "n_steps": len(steps),
        "seconds": round(seconds, 2),
        "prompt_tokens": sum(s["prompt_tokens"] for s in steps),
        "completion_tokens": sum(s["completion_tokens"] for s in steps),
        "problems": total,
        "steps": steps,
    }


def said_by_model(said) -> dict:
    """What the model wrote in one call: a completion's text, or a reply's text, thought and
    tool calls (each ``{"id", "name", "arguments"}``, the arguments as the backend sent them)."""
    if not hasattr(said, "tool_calls"):
        return {"completion": said.text}
    calls = [
        {"id": c.get("id"), "name": c["function"]["name"], "arguments": c["function"]["arguments"]}
        for c in said.tool_calls
    ]
    return {"completion": said.content, "thought": said.thought, "tool_calls": calls}


def loop_wrote(asked, said, following):
    """What the loop added after a model call, before the next one (``following``), or None.

    Text: what it appended to the transcript after the completion (an observation, a
    refusal, the best-effort request). Chat: the messages after the reply, each ``{"role",
    "content"}`` (tool results, a note). None after the last call, or when the next request
    does not extend this one.
    """
    if following is None:
        return None
    if isinstance(asked, str):
        sent = asked + said.text
        return following[len(sent) :] if following.startswith(sent) else None
    if following[: len(asked)] != asked:
        return None
    added = following[len(asked) :]
    return [
        {"role": m["role"], "content": m.get("content")} for m in added if m["role"] != "assistant"
    ]


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
                    with Path(log).open("a+", encoding="utf-8") as fh:
                        torn = fh.tell() > 0 and not _ends_a_line(Path(log))
                        fh.write(
                            ("\n" if torn else "") + json.dumps(rec, ensure_ascii=False) + "\n"
                        )
            records.append(rec)
            if progress:
                p = rec["problems"]
                progress(
                    f"{'✓' if rec['correct'] else '✗'} {name:<19} {task.id:<18} "
                    f"{rec['stopped_by']:<9} {rec['seconds']:5.1f} s  "
                    f"unreadable {p['unreadable']} invalid {p['invalid']} undone {p['undone']}"
                )
    return records


def _ends_a_line(path: Path) -> bool:
    """True if the file's last byte ends a line (a run stopped mid-write leaves it torn)."""
    with path.open("rb") as fh:
        fh.seek(-1, 2)
        return fh.read(1) == b"\n"


def summarize(records: Sequence[dict]) -> dict[str, dict]:
    """Per arm: runs, right answers, how the runs ended, the three problems by step, call and run.

    ``{arm: {"runs", "correct", "stopped_by": {how: runs}, "steps" (model calls), "calls",
    "cut_off" (steps that hit max_tokens), and for each problem ``{"count", "of", "runs"}`` --
    its steps (``invalid``: refused calls) out of ``of`` steps (calls), and how many runs had it
    at least once}}``, arms in first-seen order.
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
        for name in PROBLEMS:
            s[name]["count"] += p[name]
            s[name]["of"] += p["calls"] if name == "invalid" else p["steps"]
            s[name]["runs"] += bool(p[name])
    return {arm: {**s, "stopped_by": dict(s["stopped_by"])} for arm, s in out.items()}


# --------------------------------------------------------------------------- the results file


def first_prompt(arm: Arm, task, tools: dict[str, Tool]) -> str:
    """What the model reads first in ``arm`` for ``task``, given ``tools``.

    The text prompt, or the rendered chat turns (with the tool schemas), as the reference
    loops build them.
    """
    from ..backends.chat import render_messages

    exemplars = exemplars_of(arm, task)
    if arm.protocol == "text":
        return build_prompt(task.question, tools.values(), exemplars)
    return render_messages(
        first_messages(task.question, tools, exemplars=exemplars), tool_schemas(tools)
    )


def agent_code() -> dict:
    """The reference agent's code the experiment runs: what ``run_loop`` and ``run_native`` reach
    in 06's guards loop, before the provenance guard (:data:`BEFORE`;
    :func:`react_lab.lab.experiments.agent_runs.reference_code`)."""
    return reference_code(("run_loop", "run_native"), without=BEFORE)


def fingerprint_inputs(config: dict):
    """The fingerprint inputs of a migration results file.

    See :data:`react_lab.lab.experiments.results.EXPERIMENTS`. ``config``: ``{"split",
    "per_category", "task_ids", "arms", "max_steps", "max_tokens"}``. The prompt part holds
    the reference agent's code the loops run (:func:`agent_code`), every first prompt of the
    run and the tool schemas, so a change to any of them makes the file stale.
    """
    from .results import Inputs
    from .tasks import SCORER_VERSION

    tasks = list(tasks_of(config).values())
    tools = default_tools()
    prompt = {
        "agent": agent_code(),
        "first_prompts": {
            a: [first_prompt(ARMS[a], t, tools) for t in tasks] for a in config["arms"]
        },
        "schemas": tool_schemas(tools),
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
    [--n N] [--arms A,B] [--log FILE]``.
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
    ap.add_argument(
        "--log",
        metavar="FILE",
        default=None,
        help="JSONL file of finished runs, reused when the command runs again "
        f"(default: {RESULTS_NAME}-code{CODE_VERSION}.jsonl in the cache's migration folder)",
    )
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
    log = args.log or cache_dir() / "migration" / f"{RESULTS_NAME}-code{CODE_VERSION}.jsonl"
    records = run_experiment(tasks, arms, log=log)
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

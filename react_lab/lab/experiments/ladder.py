"""The ladder: named configurations that take the embedded 135M model from failing to working.

What makes a small model a working agent, with numbers. Each rung is a
:class:`react_lab.lab.experiments.configs.Config` of the same text-protocol loop
(:func:`react_lab.lab.experiments.evals.run_task`: the real loop, tools and guards) on the same
embedded model; only one thing changes per rung:

============================  ================================================================
``baseline``                  today's prompt: one fixed exemplar, default tools, free decoding
``grammar_action``            rung 1: the Action line constrained by a grammar built from the tool
                              schemas (:mod:`react_lab.lab.backends.text_grammar`), the thought
                              left free
``grammar_grounded``          rung 1b: as rung 1, and id arguments only ids written in the
                              question or an observation
``tax_short``/``tax_none``    rung 1's controls: the *thought* constrained too (a fixed template,
                              or empty): does constraining the reasoning cost accuracy?
``pool_k1``..``pool_k3``      rung 3: 1-3 exemplars chosen per question from the dev pool
                              (:mod:`react_lab.lab.experiments.exemplars`), default decoding
``gpool_k1``                  rungs 1b + 3: the base the tool-design rungs change
``t_<variant>``               rung 2: ``gpool_k1`` with one tool-design change
                              (:mod:`react_lab.lab.experiments.tool_designs`)
``runs_k1``/``best_runs``     rung 3 with the *runs* pool: exemplars harvested from the model's own
                              successful dev runs
                              (:func:`react_lab.lab.experiments.exemplars.harvest`) instead of
                              the oracle-written pool, on ``gpool_k1`` and on ``t_oldest_first``
``v_values``                  rung 5a: ``t_oldest_first`` + the guard refusing an answer whose value
                              only the exemplar shows (:mod:`react_lab.lab.provenance`), and
                              exemplars whose answers no test task shares
``v_intent``                  rung 5b: + the exemplar chosen for what the question asks for
                              (:func:`react_lab.lab.experiments.exemplars.intent`)
``v_unsure``                  rung 5c: + no repeated call in the grammar, ids read as typed, and a
                              best-effort yes/no that cites nothing fetched says it does not know
``v_counted``                 rung 5d: + ``list_invoices`` also says how many invoices it listed
``v_search1``                 rung 5e: + ``search`` returns only the best-matching passage
``v_dollars``                 rung 5h: + ``get_charge`` shows the amount in cents and in dollars
``v_k2``/``v_k3``             rung 5i: + 2 or 3 exemplars per question instead of 1
``best``                      the working agent: the best combination on the DEV half (``v_k3``'s);
                              ``react-lab ask QUESTION --config best``
============================  ================================================================

Tune on ``split="dev"``; every figure the lab reports as a result comes from a held-out set:
``split="test"`` (the same templates as dev, other entities) and ``split="paraphrase"`` (the
test half's entities in the words people use, :mod:`react_lab.lab.experiments.tasks`).
:func:`run_ladder` runs one config over tasks (resumably, within a time budget),
:func:`save` writes a fingerprinted results file (:mod:`react_lab.lab.experiments.results`),
:func:`load_results` reads the shipped ones back as rows for notebook 09, and
``react-lab eval --config NAME`` is the command line
(:func:`react_lab.lab.cli.commands.cmd_ladder`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

from ...cost import count_tokens
from ...tools import ID_RE
from ..agent.checks import check_count
from ..backends.local import LocalModel
from .configs import (  # noqa: F401 -- GrammarModel, compiled, list_configs: the ladder's names too
    CONFIGS,
    Config,
    GrammarModel,
    base_model,
    compiled,
    exemplars_for,
    first_prompt,
    get_config,
    guards_for,
    list_configs,
    settings,
    tools_for,
)
from .evals import run_task
from .stats import Rate, pass_at_k, pass_hat_k, success_rate
from .tasks import TASK_FILES, Task, load_tasks, score

#: Bump when a change here changes what a run does; saved results then read as stale.
CODE_VERSION = 1


def default_log_dir() -> Path:
    """Return where :func:`run_ladder` keeps its resumable run logs.

    One JSON line per task and trial, in ``ladder/`` under
    :func:`react_lab.lab.experiments.results.cache_dir` (``$REACT_LAB_CACHE``, outside the
    repository).
    """
    from .results import cache_dir

    return cache_dir() / "ladder"


# --------------------------------------------------------------------------- one run


def run_one(
    cfg: Config,
    task: Task,
    *,
    model: LocalModel | None = None,
    temperature: float = 0.0,
    seed: int = 0,
    trial: int = 0,
    timeout: float = 120.0,
) -> dict:
    """Run ``task`` once under ``cfg``; return its record (JSON-ready).

    ``model`` defaults to :func:`base_model`. The record holds ``task_id``, ``category``,
    ``trial``, ``seed``, ``correct``, ``answer``, ``gold``, ``stopped_by``, ``n_steps``,
    ``prefix_tokens`` (the first prompt in cl100k tokens, notebook 05's unit),
    ``exemplar_tokens`` and ``exemplar_ids``, ``prompt_tokens``/``completion_tokens``
    (the model's own tokens, summed over steps: the prompt is re-sent each step),
    ``seconds`` (wall clock) and a short ``steps`` list (tool, args, error, answer).
    """
    tools = tools_for(cfg)
    exemplars = exemplars_for(cfg, task)
    runner, options = _runner(cfg, tools, exemplars, model, temperature=temperature, seed=seed)
    t0 = time.perf_counter()
    result = run_task(
        task,
        runner,
        tools,
        protocol=cfg.protocol,
        max_steps=cfg.max_steps,
        max_tokens=cfg.max_tokens,
        timeout=timeout,
        **options,
    )
    seconds = time.perf_counter() - t0
    steps = result.steps
    return {
        "config": cfg.name,
        "task_id": task.id,
        "category": task.category,
        "trial": trial,
        "seed": seed,
        "temperature": temperature,
        "correct": score(result.answer, task),
        "answer": result.answer,
        "gold": task.gold,
        "stopped_by": result.stopped_by,
        "n_steps": len(steps),
        "prefix_tokens": count_tokens(first_prompt(cfg, task)),
        "exemplar_tokens": sum(count_tokens(e.render()) for e in exemplars),
        "exemplar_ids": [getattr(e, "source", "default") for e in exemplars],
        "prompt_tokens": sum(s.prompt_tokens for s in steps),
        "completion_tokens": sum(s.completion_tokens for s in steps),
        "seconds": round(seconds, 2),
        "steps": [
            {
                "tool": (s.action or {}).get("tool"),
                "args": (s.action or {}).get("args"),
                "error": (s.error or "")[:200] or None,
                "guard": s.guard,
                "answer": s.answer,
                "thought": (s.thought or "")[:200],
            }
            for s in steps
        ],
    }


def ask_config(
    question: str,
    cfg: Config,
    *,
    model: LocalModel | None = None,
    max_steps: int | None = None,
    timeout: float = 120.0,
    progress: bool = False,
):
    """Run one question through ``cfg``'s loop (text or native) as it runs; return its result.

    The result is a :class:`react_lab.lab.agent.trace.RunResult`.

    The same tools, exemplars (chosen for this question), grammar and guards as
    :func:`run_one`, on ``model`` (default :func:`base_model`); ``max_steps`` defaults
    to the configuration's; ``progress`` shows a tqdm bar over the steps. What
    ``react-lab ask QUESTION --config NAME`` runs.
    """
    task = Task(id="ask", category="ask", question=question, gold="", kind="text")
    tools = tools_for(cfg)
    runner, options = _runner(cfg, tools, exemplars_for(cfg, task), model)
    return run_task(
        task,
        runner,
        tools,
        protocol=cfg.protocol,
        max_steps=max_steps or cfg.max_steps,
        max_tokens=cfg.max_tokens,
        timeout=timeout,
        progress=progress,
        **options,
    )


def _runner(cfg: Config, tools, exemplars, model, **sampling) -> tuple[Any, dict]:
    """The model ``cfg`` runs a task on, and the options its loop gets.

    The text protocol: the base model behind ``cfg``'s grammar, with the exemplars in the
    prompt and ``cfg``'s guards. The native protocol: the chat backend on the same weights,
    the exemplars as past messages (``sampling``, temperature and seed, is the text grammar's).
    """
    runner = GrammarModel(
        model or base_model(),
        tools,
        thought=cfg.grammar,
        grounded=cfg.grounded,
        no_repeat=cfg.no_repeat,
        **sampling,
    )
    if cfg.protocol == "native":
        from ..backends.chat import LocalChatModel

        return LocalChatModel(runner.base), {"loop_options": {"exemplars": exemplars}}
    return runner, {"exemplars": exemplars, "loop_options": {"guards": guards_for(cfg)}}


def check_no_leak(cfg: Config, tasks: Iterable[Task]) -> None:
    """Raise ``RuntimeError`` if a prompt of ``tasks`` under ``cfg`` shows a leaking exemplar.

    A test task as an exemplar, or an exemplar that shows an id the question names (in any
    case: ``inv-2041`` names ``INV-2041``).
    """
    from .exemplars import task_split

    for task in tasks:
        asked = {i.casefold() for i in ID_RE.findall(task.question)}
        for ex in exemplars_for(cfg, task):
            source = getattr(ex, "source", None)
            if source and task_split(source) != "dev":
                raise RuntimeError(
                    f"exemplar from {source} (not a dev task) in the prompt of {task.id}"
                )
            if source and asked & {i.casefold() for i in ID_RE.findall(ex.render())}:
                raise RuntimeError(
                    f"exemplar {source} in the prompt of {task.id} shows an id it asks about"
                )


# --------------------------------------------------------------------------- many runs


def choose_tasks(
    split: str,
    *,
    per_category: int | None = None,
    n: int | None = None,
    path: str | Path | None = None,
) -> list[Task]:
    """The tasks of ``split`` in file order.

    The first ``per_category`` of each category, then the first ``n``.

    ``per_category=4`` on either half gives 52 tasks (13 categories x 4): the fixed
    subset the shipped results use when the whole half does not fit the time budget.
    ``split`` is one of :data:`react_lab.lab.experiments.tasks.SPLITS`; with ``path``, every task
    of that task file (:func:`react_lab.lab.experiments.tasks.load_tasks` gives the format).
    """
    tasks = load_tasks(path, split="all") if path is not None else load_tasks(split=split)
    if per_category is not None:
        check_count("per_category", per_category)
        seen: dict[str, int] = {}
        chosen = []
        for t in tasks:
            if seen.get(t.category, 0) < per_category:
                chosen.append(t)
                seen[t.category] = seen.get(t.category, 0) + 1
        tasks = chosen
    return tasks[:n] if n else tasks


def _log_path(cfg: Config, split: str, temperature: float, seed: int, log_dir) -> Path:
    return Path(log_dir or default_log_dir()) / f"{cfg.name}-{split}-T{temperature:g}-s{seed}.jsonl"


def run_inputs(cfg: Config, task: Task) -> str:
    """A digest of what one run of ``task`` under ``cfg`` is made of: its first prompt, the
    configuration's settings, its tools' schemas and :data:`CODE_VERSION`.

    A logged run is reused only under the same digest, so changing what a configuration
    name stands for (the working agent's tools, say) runs its tasks again.
    """
    inputs = {**_prompt_inputs(cfg, [task]), "code": CODE_VERSION}
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, default=repr).encode()).hexdigest()[
        :16
    ]


def _prompt_inputs(cfg: Config, tasks: Sequence[Task]) -> dict:
    """What the model is shown for ``tasks`` under ``cfg``: every first prompt (instructions,
    tool descriptions, exemplars), the configuration's settings and its tools' schemas."""
    return {
        "first_prompts": [first_prompt(cfg, t) for t in tasks],
        "config": settings(cfg),
        "schemas": [t.openai_schema() for t in tools_for(cfg).values()],
    }


def read_log(path: Path) -> dict[tuple[str, int], dict]:
    """The records of a run log by ``(task_id, trial)``; a torn last line is skipped."""
    records = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                r = json.loads(line)
            except ValueError:
                continue
            records[(r["task_id"], r["trial"])] = r
    return records


def run_ladder(
    cfg: Config,
    tasks: Sequence[Task],
    *,
    split: str,
    trials: int = 1,
    temperature: float = 0.0,
    seed: int = 0,
    budget: float | None = None,
    log_dir: str | Path | None = None,
    model=None,
    progress=print,
) -> tuple[list[dict], bool]:
    """Run every task ``trials`` times under ``cfg``; return (records in task order, complete?).

    Trial ``i`` samples with seed ``seed + i`` at ``temperature`` (0: greedy, so more
    than one trial only makes sense above 0). Records go to a run log as they come
    (:func:`default_log_dir`), so an interrupted run resumes where it stopped (a logged run
    is reused only if its :func:`run_inputs` are the same today); no new
    run starts once ``budget`` seconds have passed; logged answers are scored again by
    :func:`react_lab.lab.experiments.tasks.score` as it is now. Raises ``RuntimeError`` before
    running anything if a prompt would show a non-dev exemplar (:func:`check_no_leak`).
    ``model`` defaults to :func:`base_model`; ``progress`` prints a line per run (None: silent).
    """
    check_count("trials", trials)
    check_no_leak(cfg, tasks)
    path = _log_path(cfg, split, temperature, seed, log_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    inputs = {task.id: run_inputs(cfg, task) for task in tasks}
    done = {
        key: r
        for key, r in read_log(path).items()
        if key[0] in inputs and r.pop("inputs", None) == inputs[key[0]]
    }
    t0 = time.perf_counter()
    for trial in range(trials):
        for task in tasks:
            if (task.id, trial) in done:
                continue
            if budget is not None and time.perf_counter() - t0 > budget:
                break
            rec = run_one(
                cfg, task, model=model, temperature=temperature, seed=seed + trial, trial=trial
            )
            with path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps({**rec, "inputs": inputs[task.id]}, ensure_ascii=False) + "\n")
            done[(task.id, trial)] = rec
            if progress:
                progress(
                    f"{'✓' if rec['correct'] else '✗'} {task.id:<20} trial {trial} "
                    f"{rec['stopped_by']:<10} {rec['n_steps']} steps {rec['seconds']:5.1f}s "
                    f"answer={str(rec['answer'])[:50]!r}"
                )
    records = [done[(t.id, i)] for i in range(trials) for t in tasks if (t.id, i) in done]
    by_id = {t.id: t for t in tasks}
    for r in records:  # a logged answer is judged by the scorer as it is now
        r["correct"] = score(r["answer"], by_id[r["task_id"]])
    return records, len(records) == trials * len(tasks)


# --------------------------------------------------------------------------- summaries


def summarize(records: Sequence[dict]) -> dict:
    """Summarize the records of one config: success (trial 0) with its Wilson 95% interval,
    mean steps, tokens per task, seconds, and pass@k / pass^k for k = 1..trials.

    Returns ``{"n", "trials", "successes", "success_rate", "ci95": [low, high],
    "mean_steps", "prefix_tokens", "prompt_tokens", "completion_tokens", "seconds",
    "pass_at_k": [...], "pass_hat_k": [...], "by_category": {category: [ok, n]}}``
    (token and second figures are means per task run).
    """
    first = [r for r in records if r["trial"] == 0]
    n = len(first)
    rate = success_rate(sum(r["correct"] for r in first), n)
    by_task: dict[str, list[bool]] = {}
    for r in records:
        by_task.setdefault(r["task_id"], []).append(bool(r["correct"]))
    trials = min((len(v) for v in by_task.values()), default=0)
    outcomes = [v[:trials] for v in by_task.values()]
    by_cat: dict[str, list[int]] = {}
    for r in first:
        cell = by_cat.setdefault(r["category"], [0, 0])
        cell[0] += bool(r["correct"])
        cell[1] += 1

    def mean(key):
        return round(sum(r[key] for r in records) / len(records), 2) if records else 0.0

    return {
        "n": n,
        "trials": trials,
        "successes": rate.successes,
        "success_rate": rate.rate,
        "ci95": [rate.low, rate.high],
        "mean_steps": mean("n_steps"),
        "prefix_tokens": mean("prefix_tokens"),
        "exemplar_tokens": mean("exemplar_tokens"),
        "prompt_tokens": mean("prompt_tokens"),
        "completion_tokens": mean("completion_tokens"),
        "seconds": mean("seconds"),
        "pass_at_k": [pass_at_k(outcomes, k) for k in range(1, trials + 1)] if n else [],
        "pass_hat_k": [pass_hat_k(outcomes, k) for k in range(1, trials + 1)] if n else [],
        "by_category": dict(sorted(by_cat.items())),
    }


def format_summary(name: str, s: dict) -> str:
    """One line per config: success with its interval, steps, tokens, seconds.

    And pass^k / pass@k if k > 1.
    """
    line = (
        f"{name:<18} {s['successes']:>3}/{s['n']:<3} = {s['success_rate']:6.1%} "
        f"(95% CI {s['ci95'][0]:.0%}-{s['ci95'][1]:.0%})  steps {s['mean_steps']:.2f}  "
        f"prompt tokens/task {s['prompt_tokens']:.0f} (first prompt {s['prefix_tokens']:.0f} "
        f"cl100k)  {s['seconds']:.1f} s/task"
    )
    if s["trials"] > 1:
        line += (
            "\n"
            + " " * 19
            + "pass^k "
            + " ".join(f"{v:.2f}" for v in s["pass_hat_k"])
            + "   pass@k "
            + " ".join(f"{v:.2f}" for v in s["pass_at_k"])
            + f"   (k = 1..{s['trials']})"
        )
    return line


def failure_modes(records: Sequence[dict]) -> dict[str, list[str]]:
    """Group the failed runs by how they failed; return ``{mode: [task_id, ...]}``.

    Modes, read from each record: ``wrong answer`` (the model answered, the scorer says
    no), ``best effort, wrong`` (a guard ended the run -- ``repeat``, ``max_steps``, ... --
    and the answer asked for then was wrong), ``no answer`` (no answer at all, e.g. a
    timeout). Each mode also lists the guard in brackets when one ended the run.
    """
    modes: dict[str, list[str]] = {}
    for r in records:
        if r["correct"]:
            continue
        if r["answer"] is None:
            mode = f"no answer ({r['stopped_by']})"
        elif r["stopped_by"] != "answer":
            mode = f"best effort, wrong ({r['stopped_by']})"
        else:
            mode = "wrong answer"
        modes.setdefault(mode, []).append(r["task_id"])
    return modes


# --------------------------------------------------------------------------- results files


def fingerprint_inputs(config: dict):
    """The fingerprint inputs of a ladder results file.

    See :data:`react_lab.lab.experiments.results.EXPERIMENTS`.

    ``config`` is the saved run's settings (``config``, ``split``, ``task_ids``, ...). The
    prompt part is every first prompt of the run (instructions, tool descriptions,
    exemplars) plus the grammar settings and the tools' schemas, so a change to any of
    them makes the file stale.
    """
    from .results import Inputs
    from .tasks import SCORER_VERSION  # read at call time, as the other parts are

    cfg = get_config(config["config"])
    tasks = tasks_of(config)
    chosen = [tasks[i] for i in config["task_ids"]]
    return Inputs(
        model="local",
        prompt=_prompt_inputs(cfg, chosen),
        tasks=[dataclasses.asdict(t) for t in chosen],
        code=CODE_VERSION,
        scorer=SCORER_VERSION,
    )


def tasks_of(config: dict) -> dict[str, Task]:
    """The tasks a results ``config`` ran, by id.

    From its ``tasks_file``, its phrasing split, or tasks.json.
    """
    if config.get("tasks_file"):
        return {t.id: t for t in load_tasks(config["tasks_file"], split="all")}
    split = config.get("split")
    return {t.id: t for t in load_tasks(split=split if split in TASK_FILES else "all")}


def results_config(
    cfg: Config,
    split: str,
    tasks: Sequence[Task],
    trials: int,
    temperature: float,
    seed: int,
    subset: str,
    tasks_file: str | None = None,
) -> dict:
    """The ``config`` a ladder results file is saved (and fingerprinted) with.

    ``tasks_file``: the task file run (``--tasks FILE``), when it is not a shipped split.
    """
    config = {
        "config": cfg.name,
        "split": split,
        "subset": subset,
        "trials": trials,
        "temperature": temperature,
        "seed": seed,
        "task_ids": [t.id for t in tasks],
        "max_steps": cfg.max_steps,
        "max_tokens": cfg.max_tokens,
    }
    if tasks_file:
        config["tasks_file"] = str(Path(tasks_file).resolve())
    return config


def save(
    name: str,
    records: Sequence[dict],
    settings: dict,
    *,
    command: str,
    directory: str | Path | None = None,
    overwrite: bool = False,
) -> Path:
    """Save a finished run as the fingerprinted results file ``name``; return its path.

    An existing file is refused (``ValueError``) unless ``overwrite``."""
    from . import results

    data = {"summary": summarize(records), "records": list(records)}
    seconds = sum(r["seconds"] for r in records)
    return results.save(
        name,
        data,
        experiment="ladder",
        config=settings,
        command=command,
        seconds=seconds,
        directory=directory,
        overwrite=overwrite,
    )


def load_results(
    names: Iterable[str] | None = None, *, directory: str | Path | None = None
) -> list[dict]:
    """Load the shipped ladder results as rows, one per results file; stale files raise.

    Each row: ``name``, ``config``, ``split``, ``subset``, ``trials``, ``temperature``,
    ``seed``, ``rate`` (a :class:`react_lab.lab.experiments.stats.Rate`: successes of n with its 95%
    Wilson interval, trial 0), ``mean_steps``, ``prompt_tokens`` / ``prefix_tokens`` /
    ``exemplar_tokens`` (means per task run; the model's tokens, and the first prompt in
    cl100k), ``seconds``, ``pass_hat_k`` / ``pass_at_k`` (k = 1..trials), ``by_category``,
    ``outcomes`` ({task_id: [correct per trial]}), ``records`` and ``describe`` (where
    the file came from). ``names`` defaults to every saved ladder file. Raises
    :class:`react_lab.lab.experiments.results.StaleResults` for a file the code no longer matches,
    including one whose saved answers the scorer
    (:func:`react_lab.lab.experiments.tasks.score`) would now judge differently.
    """
    from . import results

    if names is None:
        names = [n for n in results.saved(directory) if n.startswith("ladder-")]
    rows = []
    for name in names:
        res = results.load(name, directory)
        tasks = tasks_of(res.config)
        changed = [
            r["task_id"]
            for r in res.data["records"]
            if r["correct"] != score(r["answer"], tasks[r["task_id"]])
        ]
        if changed:
            raise results.StaleResults(
                f"{name}: the scorer now judges {len(changed)} saved answer(s) differently "
                f"({', '.join(changed[:5])}); bump SCORER_VERSION in "
                "react_lab/lab/experiments/tasks.py and re-score them (no model run): "
                f"{results.RESCORE_COMMAND} {name}"
            )
        s, c = res.data["summary"], res.config
        outcomes: dict[str, list[bool]] = {}
        for r in res.data["records"]:
            outcomes.setdefault(r["task_id"], []).append(bool(r["correct"]))
        rows.append(
            {
                "name": res.name,
                "config": c["config"],
                "split": c["split"],
                "subset": c.get("subset"),
                "trials": c["trials"],
                "temperature": c["temperature"],
                "seed": c["seed"],
                "rate": Rate(s["successes"], s["n"], *s["ci95"]),
                **{
                    k: s[k]
                    for k in (
                        "mean_steps",
                        "prompt_tokens",
                        "prefix_tokens",
                        "exemplar_tokens",
                        "completion_tokens",
                        "seconds",
                        "pass_hat_k",
                        "pass_at_k",
                        "by_category",
                    )
                },
                "outcomes": outcomes,
                "records": res.data["records"],
                "describe": res.describe(),
            }
        )
    return rows

"""Measure an agent: run it over the fixed task set with a cache, log every step, compute metrics.

"Read ten traces, then measure." This module is the measuring half, in the order
``08_evaluation.ipynb`` uses it (the task set and the scorer are
:mod:`react_lab.lab.experiments.tasks`):

1. the task set and 2. the scorer -- :func:`react_lab.lab.experiments.tasks.load_tasks` and
:func:`react_lab.lab.experiments.tasks.score`; 3. the runner -- :func:`evaluate` runs any backend
over the set with the text protocol (``react_lab.lab.agent.loop``) or native tool calls
(``react_lab.lab.agent.native``), one JSONL step-event log per evaluation run, and a cache so a
re-run only computes what changed; 4. the metrics -- :func:`metrics`: success rate, steps per task
(mean and 95th percentile), step-limit rate, tool error rate (overall and per tool), repeat-action
rate and tokens per task.

Before any real model is judged, two scripted models prove the harness:
:func:`oracle_model` issues each task's right tool calls and scores 100%;
:func:`dont_know_model` always answers "I don't know" and scores 0%.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

from ...billing import CALC, FIND_INVOICE, GET_CHARGE, GET_PAYMENTS, LIST_INVOICES, SEARCH
from ...messages import SYSTEM
from ...protocol import build_prompt
from ...tools import default_tools
from ..agent.checks import check_count
from ..agent.loop import run
from ..agent.native import run_native
from ..agent.tool_calls import conversation
from ..agent.trace import RunResult, Transcript
from ..backends.chat import ScriptedChatModel
from ..backends.llama_state import ContextWindowExceeded
from ..backends.scripted import ScriptedModel
from ..extras import tqdm
from ..guards import LabGuards
from ..parallel_calls import run_parallel_calls
from . import results
from .results import Inputs, cache_dir
from .steplogs import step_event, write_jsonl
from .tasks import Task, score

PROTOCOLS = ("text", "native")
#: The ``stopped_by`` of a run the step limit ended (a best-effort answer may follow).
STEP_LIMIT = "max_steps"

#: The evaluation's budget, smaller than the loops' defaults: 50 tasks on a 2-core laptop
#: must run in minutes, and every task's oracle needs at most 3 calls and an answer.
EVAL_MAX_STEPS, EVAL_MAX_TOKENS = 4, 128


# =========================================================================== scripted models


def _named_args(tool: str, args: Sequence[str]) -> dict:
    """Name positional oracle arguments by the tool's schema.

    ``("INV-2041",)`` -> ``{"invoice_id": ...}``.
    """
    schema = {
        "list_invoices": LIST_INVOICES,
        "get_charge": GET_CHARGE,
        "search": SEARCH,
        "find_invoice": FIND_INVOICE,
        "get_payments": GET_PAYMENTS,
        "calc": CALC,
    }[tool]
    return dict(zip(schema["properties"], args))


def oracle_model(task: Task, protocol: str = "text"):
    """Return a scripted model that makes ``task.oracle``'s calls in order, then answers.

    It answers the gold answer. Text protocol: a
    :class:`~react_lab.lab.backends.scripted.ScriptedModel` writing ``Action:`` lines; native: a
    :class:`~react_lab.lab.backends.chat.ScriptedChatModel` replying with tool calls. Either
    way it runs through the real loop, tools and scorer, so 100% on the set proves the
    harness (tools reachable, gold answers stated the way the scorer reads them).
    """
    if protocol == "native":
        replies = [
            {
                "thought": f"I should call {tool}.",
                "tool_calls": [{"name": tool, "arguments": _named_args(tool, args)}],
            }
            for tool, args in task.oracle
        ]
        replies.append({"thought": "I have what I need.", "answer": task.gold})
        return ScriptedChatModel(replies, name="oracle")
    script = [
        f" I should call {tool}.\nAction: {tool}[{', '.join(args)}]\n" for tool, args in task.oracle
    ]
    script.append(f" I have what I need.\nAnswer: {task.gold}")
    return ScriptedModel(script, repeat_last=False, name="oracle")


def dont_know_model(task: Task, protocol: str = "text"):
    """Return a scripted model (text or native) that answers "I don't know." at once.

    It must score 0%.
    """
    if protocol == "native":
        return ScriptedChatModel(
            [{"thought": "I cannot tell.", "answer": "I don't know."}], name="dont_know"
        )
    return ScriptedModel([" I cannot tell.\nAnswer: I don't know."], name="dont_know")


SCRIPTED = {"oracle": oracle_model, "dont_know": dont_know_model}


# =========================================================================== 3. the runner


def default_cache_dir() -> Path:
    """Return ``evals/`` under :func:`react_lab.lab.experiments.results.cache_dir`.

    That is ``$REACT_LAB_CACHE``, outside the repository.
    """
    return cache_dir() / "evals"


def _hash(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def _stable(value):
    """A JSON-ready, run-independent form of loop options.

    Dataclasses by field, functions by name.
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: _stable(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init
        }
    if isinstance(value, dict):
        return {str(k): _stable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_stable(v) for v in value]
    if callable(value):
        return getattr(value, "__qualname__", type(value).__name__)
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


def config_of(
    protocol: str,
    tools: dict,
    *,
    max_steps: int,
    max_tokens: int,
    exemplars=None,
    loop_options: dict | None = None,
) -> dict:
    """Return what a run depends on besides the model and the question (hashed into cache keys).

    For the text protocol that is the prompt prefix (instructions, tool descriptions,
    exemplars); for native calls, the system message and the tool schemas. Plus the
    step and token limits and any extra loop options (e.g. ``{"guards": LabGuards.off()}``).
    Changes to the code itself are not detected: delete the cache to start over.
    """
    if protocol == "text":
        surface = build_prompt("{question}", tools.values(), exemplars)
    elif protocol == "native":
        surface = SYSTEM + json.dumps(
            [tool.openai_schema() for tool in tools.values()], sort_keys=True
        )
    else:
        raise ValueError(f"unknown protocol {protocol!r}; use {' or '.join(PROTOCOLS)}")
    return {
        "protocol": protocol,
        "surface": surface,
        "max_steps": max_steps,
        "max_tokens": max_tokens,
        "options": _stable(loop_options or {}),
    }


def _read_cache(path: Path) -> dict[str, dict]:
    """Return cached records by key; a line cut short (an interrupted write) is skipped, not fatal.

    Such a line is also closed with a newline, so the next record starts a line of its own.
    """
    records = {}
    if path.is_file():
        text = path.read_text(encoding="utf-8")
        if text and not text.endswith("\n"):
            with path.open("a", encoding="utf-8") as fh:
                fh.write("\n")
        for line in text.splitlines():
            try:
                record = json.loads(line)
                records[record["key"]] = record
            except (ValueError, KeyError, TypeError):
                continue
    return records


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", name).strip("-")[:60] or "model"


@dataclass
class EvalRun:
    """The records of one evaluation run, how many were computed (not cached), and its log.

    ``seconds`` is the wall-clock time of the :func:`evaluate` call (small when cached);
    each record's ``seconds`` is the time its task took when it was computed.
    """

    run_id: str
    records: list[dict]
    computed: int
    seconds: float
    log_path: Path | None = None
    cache_path: Path | None = None

    @property
    def metrics(self) -> dict:
        return metrics(self.records)


def run_task(
    task: Task,
    model,
    tools: dict,
    *,
    protocol: str = "text",
    max_steps: int = EVAL_MAX_STEPS,
    max_tokens: int = EVAL_MAX_TOKENS,
    timeout: float = 60.0,
    exemplars=None,
    loop_options: dict | None = None,
    progress: bool = False,
) -> RunResult:
    """Run one task; return its :class:`react_lab.lab.agent.trace.RunResult`.

    ``progress``: a tqdm bar over the steps.

    Text protocol: :func:`react_lab.lab.agent.loop.run`; native:
    :func:`react_lab.lab.agent.native.run_native` (``loop_options`` are passed on as keyword
    arguments; without ``guards``, the run gets :class:`react_lab.lab.guards.LabGuards`, the lab's
    defaults). ``timeout`` is wall-clock seconds, checked after every step that did not answer (a
    step in progress finishes); when it has passed the run ends with ``stopped_by="timeout"`` and no
    answer. A prompt that outgrows the model's context window
    (:class:`react_lab.lab.backends.llama_state.ContextWindowExceeded`) ends the run with
    ``stopped_by="context_window"`` and no answer, the steps before it kept -- none when the first
    prompt (instructions, exemplars, question) is already too long. Otherwise ``stopped_by`` is
    ``"answer"``, or the guard named by the last step.
    """
    t0 = time.perf_counter()
    options = {"guards": LabGuards(), **(loop_options or {})}
    messages: list[dict] = []
    transcript = Transcript()
    if protocol == "native":  # a reply's read-only calls side by side, unless loop_options say
        options = {"run_calls": run_parallel_calls, **options}
        steps_iter = run_native(
            task.question,
            model,
            tools,
            max_steps=max_steps,
            max_tokens=max_tokens,
            messages=messages,
            **options,
        )
    else:
        steps_iter = run(
            task.question,
            model,
            tools,
            transcript=transcript,
            max_steps=max_steps,
            max_tokens=max_tokens,
            exemplars=exemplars,
            **options,
        )
    steps, stopped_by = [], None
    try:
        for step in tqdm(steps_iter, desc="steps", unit="step", leave=False, disable=not progress):
            steps.append(step)
            if step.answer is None and time.perf_counter() - t0 > timeout:
                stopped_by = "timeout"
                break
    except ContextWindowExceeded:  # the prompt outgrew the model's window: this run ends
        stopped_by = "context_window"
    if protocol == "native":
        transcript = conversation(messages)
    return RunResult.from_steps(task.question, steps, transcript, stopped_by=stopped_by)


def evaluate(
    tasks: Sequence[Task],
    model,
    *,
    protocol: str = "text",
    tools: dict | None = None,
    max_steps: int = EVAL_MAX_STEPS,
    max_tokens: int = EVAL_MAX_TOKENS,
    timeout: float = 60.0,
    exemplars=None,
    loop_options: dict | None = None,
    model_name: str | None = None,
    cache_dir: str | Path | None = None,
    use_cache: bool = True,
    progress: bool = True,
    concurrency: int = 1,
) -> EvalRun:
    """Run every task and score it; reuse cached records whose key has not changed.

    ``model`` is a backend (a completion model for ``protocol="text"``, a chat model
    for ``"native"``), or a function ``task -> backend`` (the scripted oracle is built
    per task; ``functools.partial(oracle_model, protocol="native")`` for native).

    Cache: the model's name (``model_name``, else ``model.name``), the protocol, the
    task id and question, and a hash of :func:`config_of` (prompt or tool schemas,
    limits, loop options) make a record's key. Records are appended to
    ``<cache_dir>/<run_id>.jsonl`` (default :func:`default_cache_dir`), but for a
    timed-out run's (it says more about the machine's load than about the model).
    Answers are re-scored on every call, so a scorer change needs no re-run. Every step
    of every task is logged to ``<cache_dir>/logs/<run_id>.steps.jsonl``, rewritten
    each call (:func:`.steplogs.read_jsonl` reads it). ``timeout`` is per task, in
    wall-clock seconds (:func:`run_task`); ``exemplars`` (text only) and ``loop_options``
    go to the loop.

    ``concurrency`` keeps up to that many runs in flight (threads) for a backend that
    serves requests in parallel (an endpoint; the embedded model gains nothing), each
    with its own database connection (the guards keep each run's state apart); records
    come back in task order, as a serial run's when the answer depends on the request
    alone (a llama.cpp server reusing the previous request's KV cache may differ). Raises
    ValueError for an unknown protocol or a ``concurrency`` below 1.
    """
    check_count("concurrency", concurrency)
    shared_tools = tools
    tools = default_tools() if tools is None else tools
    per_task = not (hasattr(model, "complete") or hasattr(model, "chat"))
    name = (
        model_name
        or getattr(model, "name", None)
        or getattr(getattr(model, "func", model), "__name__", "model")
    )
    config = config_of(
        protocol,
        tools,
        max_steps=max_steps,
        max_tokens=max_tokens,
        exemplars=exemplars,
        loop_options=loop_options,
    )
    run_id = f"{_slug(name)}-{protocol}-{_hash(config)[:10]}"
    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    cache_path, log_path = (
        cache_dir / f"{run_id}.jsonl",
        cache_dir / "logs" / f"{run_id}.steps.jsonl",
    )
    cached = _read_cache(cache_path) if use_cache else {}
    log_path.unlink(missing_ok=True)

    def compute(task: Task, key: str) -> dict:  # runs in flight: own connection each
        own_tools = default_tools() if shared_tools is None and concurrency > 1 else tools
        t1 = time.perf_counter()
        result = run_task(
            task,
            model(task) if per_task else model,
            own_tools,
            protocol=protocol,
            max_steps=max_steps,
            max_tokens=max_tokens,
            timeout=timeout,
            exemplars=exemplars,
            loop_options=loop_options,
        )
        return _record(
            result,
            run_id=run_id,
            key=key,
            task=task,
            model=name,
            protocol=protocol,
            tools=tools,
            seconds=time.perf_counter() - t1,
        )

    t0, records, computed = time.perf_counter(), [], 0
    keys = [_hash([name, protocol, task.id, task.question, config])[:16] for task in tasks]
    # Results are taken in task order: the records, cache and log are a serial run's.
    pool = ThreadPoolExecutor(max_workers=concurrency) if concurrency > 1 else None
    futures = [
        pool.submit(compute, task, key) if pool and key not in cached else None
        for task, key in zip(tasks, keys)
    ]
    bar = tqdm(total=len(tasks), desc=run_id, disable=not progress, unit="task")
    try:
        for task, key, future in zip(tasks, keys, futures):
            record = cached.get(key)
            if record is None:
                record = future.result() if future is not None else compute(task, key)
                if use_cache and record["stopped_by"] != "timeout":
                    write_jsonl(cache_path, [record])
                computed += 1
            records.append(_scored(record, task, cached=key in cached))
            write_jsonl(log_path, record["steps"])
            bar.update()
            bar.set_postfix(success=f"{sum(r['correct'] for r in records)}/{len(records)}")
    finally:
        bar.close()
        if pool is not None:  # an error (or Ctrl-C) cancels the runs not yet started
            pool.shutdown(wait=True, cancel_futures=True)
    return EvalRun(
        run_id,
        records,
        computed,
        time.perf_counter() - t0,
        log_path,
        cache_path if use_cache else None,
    )


def _record(
    result,
    *,
    run_id: str,
    key: str,
    task: Task,
    model: str,
    protocol: str,
    tools: dict,
    seconds: float,
) -> dict:
    """The cached record of one run: its answer, end, steps (step events) and transcript spans."""
    return {
        "run_id": run_id,
        "key": key,
        "task_id": task.id,
        "model": model,
        "protocol": protocol,
        "answer": result.answer,
        "stopped_by": result.stopped_by,
        "seconds": round(seconds, 3),
        "steps": [step_event(s, run_id=run_id, task_id=task.id, tools=tools) for s in result.steps],
        "transcript": [list(span) for span in result.transcript.spans],
    }


def _scored(record: dict, task: Task, *, cached: bool) -> dict:
    """``record`` with its task's category, question and gold, scored now (``correct``)."""
    return dict(
        record,
        category=task.category,
        question=task.question,
        gold=task.gold,
        correct=score(record["answer"], task),
        cached=cached,
    )


def transcript_of(record: dict) -> Transcript:
    """Rebuild the owner-marked transcript of a record (``tables.transcript_html`` shows it)."""
    return Transcript([tuple(span) for span in record["transcript"]])


# =========================================================================== 4. the metrics


def percentile(values: Sequence[float], q: float) -> float:
    """Return the ``q``-th percentile by the nearest-rank method (``q`` in 0..100; 0.0 if empty).

    Nearest rank: the smallest value with at least ``q`` percent of the values at or
    below it, so the result is always one of the values (p95 of 1..20 is 19).
    """
    if not values:
        return 0.0
    ordered = sorted(values)
    return float(ordered[max(1, math.ceil(q / 100 * len(ordered))) - 1])


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def metrics(records: Sequence[dict]) -> dict:
    """Compute the evaluation metrics of scored records (as :func:`evaluate` returns them).

    * ``success_rate``: share of tasks answered correctly (:func:`score`);
    * ``mean_steps``, ``p95_steps``: model calls per task (95th percentile by nearest rank);
    * ``step_limit_rate``: share of runs ended by the step limit (:data:`STEP_LIMIT`), with
      or without a best-effort answer after it;
    * ``tool_error_rate``: share of tool calls whose observation was an error (a failed
      call, or one a guard refused, e.g. a repeat), and ``tool_error_rate_by_tool`` with
      ``tool_calls_by_tool``; calls to a tool that does not exist never reach a tool and
      count in ``parse_error_rate`` (share of steps with no readable action or answer:
      a parse error, or a native reply cut off by ``max_tokens``) instead;
    * ``repeat_action_rate``: share of tool calls identical (tool and arguments) to an
      earlier call in the same run;
    * ``tokens_per_task``: mean of prompt + completion tokens summed over a task's steps,
      in the backend's own tokens (re-sent prompt tokens counted every time).

    Rates over no calls are 0.0. Extras: ``n``, ``answered_rate``, ``timeout_rate``,
    ``seconds_per_task`` (wall clock).
    """
    n = len(records)
    steps = [len(r["steps"]) for r in records]
    calls = [(r, e) for r in records for e in r["steps"] if e["tool"]]
    parse_errors = [
        e
        for r in records
        for e in r["steps"]
        if e["error"] and not e["tool"] and e["answer"] is None
    ]
    by_tool: dict[str, list[int]] = {}
    for _, e in calls:
        by_tool.setdefault(e["tool"], []).append(1 if e["error"] else 0)
    repeats = 0
    for r in records:
        seen = set()
        for e in r["steps"]:
            if e["tool"]:
                key = (e["tool"], json.dumps(e["args"], sort_keys=True, default=str))
                repeats += key in seen
                seen.add(key)
    return {
        "n": n,
        "success_rate": _mean([1.0 if r["correct"] else 0.0 for r in records]),
        "mean_steps": _mean(steps),
        "p95_steps": percentile(steps, 95),
        "step_limit_rate": _mean([1.0 if r["stopped_by"] == STEP_LIMIT else 0.0 for r in records]),
        "tool_error_rate": _mean([1.0 if e["error"] else 0.0 for _, e in calls]),
        "repeat_action_rate": repeats / len(calls) if calls else 0.0,
        "tokens_per_task": _mean(
            [sum(e["prompt_tokens"] + e["completion_tokens"] for e in r["steps"]) for r in records]
        ),
        "answered_rate": _mean([1.0 if r["answer"] is not None else 0.0 for r in records]),
        "timeout_rate": _mean([1.0 if r["stopped_by"] == "timeout" else 0.0 for r in records]),
        "parse_error_rate": len(parse_errors) / sum(steps) if sum(steps) else 0.0,
        "tool_calls_by_tool": {t: len(v) for t, v in sorted(by_tool.items())},
        "tool_error_rate_by_tool": {t: _mean(v) for t, v in sorted(by_tool.items())},
        "seconds_per_task": _mean([r["seconds"] for r in records]),
    }


METRIC_ROWS = (
    "success_rate",
    "mean_steps",
    "p95_steps",
    "step_limit_rate",
    "tool_error_rate",
    "repeat_action_rate",
    "parse_error_rate",
    "tokens_per_task",
    "seconds_per_task",
)


# --------------------------------------------------------------------------- results files


def fingerprint_inputs(config: dict) -> Inputs:
    """The fingerprint inputs of an evaluation results file.

    ``config``: ``{"protocol", "model", "n", "max_steps", "max_tokens"}``. ``n`` None is
    every task; an optional ``"exemplars": N`` (text protocol) puts the first N of
    :data:`react_lab.protocol.EXEMPLARS` in the prompt instead of its default. The prompt
    part is :func:`react_lab.lab.experiments.evals.config_of`'s surface (instructions, tool
    descriptions and exemplars; or the system message) and every tool schema.
    """
    from ...protocol import (
        EXEMPLARS,  # read at call time: the fingerprint sees what is current
    )
    from .tasks import SCORER_VERSION

    tools = default_tools()
    exemplars = None if config.get("exemplars") is None else EXEMPLARS[: config["exemplars"]]
    surface = config_of(
        config["protocol"],
        tools,
        max_steps=config["max_steps"],
        max_tokens=config["max_tokens"],
        exemplars=exemplars,
    )["surface"]
    return Inputs(
        model=config.get("model", "local"),
        prompt={"surface": surface, "schemas": [t.openai_schema() for t in tools.values()]},
        tasks=[asdict(t) for t in tasks_of(config).values()],
        scorer=SCORER_VERSION,
    )


def tasks_of(config: dict) -> dict[str, Task]:
    """The tasks an evaluation results ``config`` ran, by id, in order: the first ``n``."""
    from .tasks import load_tasks

    return {t.id: t for t in load_tasks(n=config.get("n"))}


def save_eval(
    name: str,
    run,
    *,
    protocol: str,
    model: str,
    n: int | None,
    exemplars: int | None = None,
    overwrite: bool = False,
) -> Path:
    """Save an :class:`react_lab.lab.experiments.evals.EvalRun` as results file ``name``.

    The file holds its metrics and records.

    What ``react-lab eval ... --save-results NAME`` calls; the config is the CLI's
    (``exemplars``: the CLI's ``--exemplars N``, None for the prompt's default;
    ``overwrite``: its ``--overwrite``, else an existing file is refused).
    """
    config = {
        "protocol": protocol,
        "model": model,
        "n": n,
        "max_steps": EVAL_MAX_STEPS,
        "max_tokens": EVAL_MAX_TOKENS,
    }
    if exemplars is not None:  # absent by default, so files saved before the option stay current
        config["exemplars"] = exemplars
    command = (
        f"react-lab eval --protocol {protocol} --model {model}"
        + (f" --n {n}" if n else "")
        + (f" --exemplars {exemplars}" if exemplars is not None else "")
        + f" --save-results {name}"
    )
    return results.save(
        name,
        {"metrics": run.metrics, "records": run.records},
        experiment="eval",
        config=config,
        command=command,
        seconds=run.seconds,
        overwrite=overwrite,
    )

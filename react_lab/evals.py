"""Measure an agent: a fixed task set with gold answers, a scorer, a cached runner, metrics.

"Read ten traces, then measure." This module is the measuring half, in four parts, in
the order ``08_evaluation.ipynb`` uses them:

1. the task set -- 206 questions over the billing database and the help articles, with
   gold answers computed by SQL (``react_lab/data/build_tasks.py`` writes ``tasks.json``),
   split into a ``dev`` half to tune on and a ``test`` half to report on;
2. the scorer -- :func:`score` compares an answer to the gold one after normalising
   numbers, dates, ids and yes/no (the rules are in its docstring);
3. the runner -- :func:`evaluate` runs any backend over the set with the text protocol
   (``react_lab.loop``) or native tool calls (``react_lab.native``), one JSONL step-event
   log per evaluation run, and a cache so a re-run only computes what changed;
4. the metrics -- :func:`metrics`: success rate, steps per task (mean and 95th
   percentile), step-limit rate, tool error rate (overall and per tool), repeat-action
   rate and tokens per task.

Before any real model is judged, two scripted models prove the harness:
:func:`oracle_model` issues each task's right tool calls and scores 100%;
:func:`dont_know_model` always answers "I don't know" and scores 0%.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import os
import re
import sys
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Iterable, Sequence

from . import native
from .protocol import build_prompt
from .trace import Step, Transcript, html_table, step_event, write_jsonl

TASKS_PATH = Path(__file__).resolve().parent / "data" / "tasks.json"
PROTOCOLS = ("text", "native")
#: The ``stopped_by`` of a run the step limit ended (a best-effort answer may follow).
STEP_LIMIT = "max_steps"


# =========================================================================== 1. the task set

@dataclass(frozen=True)
class Task:
    """One evaluation task: a question, its gold answer and how to compare, the oracle's calls.

    ``kind`` is ``number`` (``unit``: dollars, cents, count or days), ``date``, ``id``,
    ``yesno``, ``choice`` (one of ``choices``) or ``text``. ``oracle`` is a tuple of
    ``(tool, args)`` calls, in order. ``sql``/``params`` produced ``gold``.
    """

    id: str
    category: str
    question: str
    gold: str
    kind: str
    unit: str | None = None
    choices: tuple[str, ...] = ()
    oracle: tuple[tuple[str, tuple[str, ...]], ...] = ()
    sql: str = ""
    params: tuple = ()

    @classmethod
    def from_dict(cls, d: dict) -> "Task":
        return cls(id=d["id"], category=d["category"], question=d["question"], gold=d["gold"],
                   kind=d["kind"], unit=d.get("unit"), choices=tuple(d.get("choices", ())),
                   oracle=tuple((tool, tuple(args)) for tool, args in d.get("oracle", ())),
                   sql=d.get("sql", ""), params=tuple(d.get("params", ())))


def load_tasks(path: str | Path = TASKS_PATH, *, n: int | None = None,
               split: str | None = None) -> list[Task]:
    """Load the evaluation set: every task, or those of ``split`` (``"dev"`` or ``"test"``).

    Then the first ``n`` tasks if given. Tune on ``dev``; report results on ``test``.
    FileNotFoundError names the build command; ValueError for a bad ``n`` or ``split``.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no task set at {path}; build it: python -m react_lab.data.build_tasks")
    if split not in (None, "dev", "test"):
        raise ValueError(f"unknown split {split!r}; use dev or test (or None for all tasks)")
    tasks = [Task.from_dict(d) for d in json.loads(path.read_text(encoding="utf-8"))
             if split is None or d.get("split") == split]
    if n is not None and n < 1:
        raise ValueError(f"n must be at least 1, not {n}")
    return tasks[:n] if n else tasks


# =========================================================================== 2. the scorer

#: A longer answer is scored wrong: a dump of rows is not an answer, and any gold
#: value would be "somewhere in it".
MAX_ANSWER_CHARS = 300

_MONTHS = {m: i for i, m in enumerate(["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug",
                                        "sep", "oct", "nov", "dec"], 1)}
_MONTH = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_ISO = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_MDY = re.compile(rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)
_DMY = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+(\d{{4}})\b", re.I)
_IDS = re.compile(r"\b(?:INV|KB)-\d+|\b(?:cus|sup|ch|pay)_[A-Za-z0-9]+", re.I)
_NUMBER = re.compile(r"(?<![\w.])(-\s?)?(\$\s?)?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?"
                     r"(\s*(?:cents?\b|¢)|\s*(?:dollars?\b|usd\b))?", re.I)
#: Yes/no as the answer's first word, standing alone: "No." and "Yes, twice" count,
#: "no action was found" and "no more tool calls" do not.
_YESNO = re.compile(r"(yes|no|true|false)(?=[\s]*(?:[.,;:!)]|$))", re.I)
#: A leading tag in brackets, such as the loop's "[best effort]", is not part of the answer.
_TAG = re.compile(r"^\s*\[[^\]\n]{0,40}\]\s*")


def dates_in(text: str) -> list[str]:
    """Return the dates written in ``text`` as ISO strings, in order of appearance.

    Understands ``2026-07-14``, ``July 14, 2026`` / ``Jul 14 2026`` / ``July 14th, 2026``
    and ``14 July 2026`` / ``14th of July, 2026``. Impossible dates are skipped.
    """
    found = []
    for regex, order in ((_ISO, "ymd"), (_MDY, "mdy"), (_DMY, "dmy")):
        for m in regex.finditer(text):
            a, b, c = m.groups()
            y, mo, d = {"ymd": (a, b, c), "mdy": (c, a, b), "dmy": (c, b, a)}[order]
            mo = _MONTHS[mo[:3].lower()] if not mo.isdigit() else int(mo)
            try:
                found.append((m.start(), date(int(y), mo, int(d)).isoformat()))
            except ValueError:
                continue
    return [iso for _, iso in sorted(found)]


def numbers_in(text: str) -> list[tuple[float, str | None]]:
    """Return ``(value, unit)`` for every number in ``text``; unit is ``"cents"``, ``"dollars"`` or None.

    Dates and ids (``INV-2041``, ``cus_8812``, ``ch_1KZq8f``) are removed first, so
    their digits are not numbers. Thousands commas are read (``48,200.00``); a ``$`` or
    the word dollars/USD marks dollars, cents/¢ marks cents. Only digits count: number
    words are too common in text that is not an answer ("write one line").
    """
    for regex in (_ISO, _MDY, _DMY, _IDS):
        text = regex.sub(" ", text)
    found = []
    for m in _NUMBER.finditer(text):
        sign, dollar, whole, frac, unit = m.groups()
        value = float(whole.replace(",", "") + (frac or ""))
        value = -value if sign else value
        unit = (unit or "").strip().lower()
        kind = "cents" if unit.startswith(("cent", "¢")) else (
            "dollars" if dollar or unit else None)
        found.append((value, kind))
    return found


def _in_unit(value: float, said: str | None, wanted: str | None) -> float:
    """Convert a number said in ``said`` units to the gold's ``wanted`` unit (cents <-> dollars only)."""
    if wanted == "dollars" and said == "cents":
        return value / 100
    if wanted == "cents" and said == "dollars":
        return value * 100
    return value


def _words(text: str) -> str:
    """Casefold, turn everything but letters and digits into single spaces, pad with spaces."""
    return " " + " ".join(re.sub(r"[^0-9a-z]+", " ", text.casefold()).split()) + " "


def _compact(text: str) -> str:
    """Casefold and join a letter prefix to its digits: ``"INV - 2041"`` -> ``"inv2041"`` (for ids)."""
    return re.sub(r"([a-z])[\s_\-]+(?=\d)", r"\1", text.casefold())


def score(answer: str | None, task: Task) -> bool:
    """Return True when ``answer`` states ``task.gold``; the rules, by ``task.kind``:

    * any kind: no answer, or one longer than :data:`MAX_ANSWER_CHARS` characters, is
      wrong; a leading tag in brackets (the loop's ``[best effort]``) is ignored;
    * ``number``: some number in the answer equals the gold within 0.005 after unit
      conversion -- "129", "129.0", "$129.00", "129 dollars" and "12900 cents" all state
      129 dollars; a bare "12900" does not, nor does "one hundred" (see :func:`numbers_in`);
    * ``date``: some date in the answer is the gold date, in any format of :func:`dates_in`;
    * ``id``: the gold id appears as a whole word, ignoring case and the separator
      between prefix and digits (``inv 2041`` states ``INV-2041``; ``INV-20411`` does not);
    * ``yesno``: the answer *begins* with yes/no/true/false as a word of its own ("No.",
      "Yes, twice"); "no more tool calls" or "no action found" say neither;
    * ``choice``: exactly one of ``task.choices`` is named, and it is the gold one
      (longest match first, underscores read as spaces, so "partially paid" is not
      "paid"); an answer naming two options ("open, not past due") is a hedge;
    * ``text``: the gold's words appear in order (case and punctuation ignored).

    The strict yes/no and choice rules are there because a small model often echoes
    the loop's own messages as its answer, and those contain "no" and the labels.
    Never raises on model text.
    """
    if not isinstance(answer, str) or len(answer) > MAX_ANSWER_CHARS:
        return False
    answer = _TAG.sub("", answer)
    if not answer.strip():
        return False
    gold, kind = task.gold, task.kind
    if kind == "number":
        target = float(gold)
        return any(abs(_in_unit(v, unit, task.unit) - target) < 0.005
                   for v, unit in numbers_in(answer))
    if kind == "date":
        return gold in dates_in(answer)
    if kind == "id":
        return re.search(rf"(?<![0-9a-z]){re.escape(_compact(gold))}(?![0-9a-z])",
                         _compact(answer)) is not None
    if kind == "yesno":
        m = _YESNO.match(answer.strip(" \t\n*\"'"))
        said = m and {"yes": "yes", "true": "yes", "no": "no", "false": "no"}[m.group(1).lower()]
        return said == gold
    if kind == "choice":
        options = sorted({_words(c).strip() for c in task.choices}, key=len, reverse=True)
        named = set(re.findall(r"(?<= )(" + "|".join(map(re.escape, options)) + r")(?= )",
                               _words(answer)))
        return named == {_words(gold).strip()}
    if kind == "text":
        return _words(gold) in _words(answer)
    raise ValueError(f"unknown task kind {kind!r}; use number, date, id, yesno, choice or text")


# =========================================================================== scripted models

def _named_args(tool: str, args: Sequence[str]) -> dict:
    """Name positional oracle arguments by the tool's schema: ``("INV-2041",)`` -> ``{"invoice_id": ...}``."""
    from . import tools as t

    schema = {"list_invoices": t.LIST_INVOICES, "get_charge": t.GET_CHARGE, "search": t.SEARCH,
              "find_invoice": t.FIND_INVOICE, "get_payments": t.GET_PAYMENTS, "calc": t.CALC}[tool]
    return dict(zip(schema["properties"], args))


def oracle_model(task: Task, protocol: str = "text"):
    """Return a scripted model that makes ``task.oracle``'s calls in order, then answers the gold answer.

    Text protocol: a :class:`~react_lab.models.ScriptedModel` writing ``Action:`` lines;
    native: a ``react_lab.native.ScriptedChatModel`` replying with tool calls. Either
    way it runs through the real loop, tools and scorer, so 100% on the set proves the
    harness (tools reachable, gold answers stated the way the scorer reads them).
    """
    if protocol == "native":
        replies = [{"thought": f"I should call {tool}.",
                    "tool_calls": [{"name": tool, "arguments": _named_args(tool, args)}]}
                   for tool, args in task.oracle]
        replies.append({"thought": "I have what I need.", "answer": task.gold})
        return native.ScriptedChatModel(replies, name="oracle")
    from .models import ScriptedModel

    script = [f" I should call {tool}.\nAction: {tool}[{', '.join(args)}]\n"
              for tool, args in task.oracle]
    script.append(f" I have what I need.\nAnswer: {task.gold}")
    return ScriptedModel(script, repeat_last=False, name="oracle")


def dont_know_model(task: Task, protocol: str = "text"):
    """Return a scripted model (text or native) that answers "I don't know." at once; it must score 0%."""
    if protocol == "native":
        return native.ScriptedChatModel([{"thought": "I cannot tell.", "answer": "I don't know."}],
                                           name="dont_know")
    from .models import ScriptedModel

    return ScriptedModel([" I cannot tell.\nAnswer: I don't know."], name="dont_know")


SCRIPTED = {"oracle": oracle_model, "dont_know": dont_know_model}


# =========================================================================== 3. the runner

def default_cache_dir() -> Path:
    """Return ``$REACT_LAB_CACHE/evals`` or ``~/.cache/react_lab/evals`` (outside the repository)."""
    return Path(os.environ.get("REACT_LAB_CACHE") or "~/.cache/react_lab").expanduser() / "evals"


def _hash(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def _stable(value):
    """A JSON-ready, run-independent form of loop options (dataclasses by field, functions by name)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _stable(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
    if isinstance(value, dict):
        return {str(k): _stable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_stable(v) for v in value]
    if callable(value):
        return getattr(value, "__qualname__", type(value).__name__)
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


def config_of(protocol: str, tools: dict, *, max_steps: int, max_tokens: int,
              exemplars=None, loop_options: dict | None = None) -> dict:
    """Return what a run depends on besides the model and the question (hashed into cache keys).

    For the text protocol that is the prompt prefix (instructions, tool descriptions,
    exemplars); for native calls, the system message and the tool schemas. Plus the
    step and token limits and any extra loop options (e.g. ``{"guards": Guards.off()}``).
    Changes to the code itself are not detected: delete the cache to start over.
    """
    if protocol == "text":
        surface = build_prompt("{question}", tools.values(), exemplars)
    elif protocol == "native":
        surface = native.SYSTEM + json.dumps([t.openai_schema() for t in tools.values()],
                                                sort_keys=True)
    else:
        raise ValueError(f"unknown protocol {protocol!r}; use {' or '.join(PROTOCOLS)}")
    return {"protocol": protocol, "surface": surface, "max_steps": max_steps,
            "max_tokens": max_tokens, "options": _stable(loop_options or {})}


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


def run_task(task: Task, model, tools: dict, *, protocol: str = "text", max_steps: int = 4,
             max_tokens: int = 128, timeout: float = 60.0, exemplars=None,
             loop_options: dict | None = None):
    """Run one task; return ``(answer, stopped_by, steps, transcript)``.

    Text protocol: :func:`react_lab.loop.run`; native: ``react_lab.native.run_native``
    (``loop_options`` are passed on as keyword arguments). ``timeout`` is wall-clock
    seconds, checked after every step that did not answer (a step in progress
    finishes); when it has passed the run ends with ``stopped_by="timeout"``. Otherwise
    ``stopped_by`` follows :func:`react_lab.loop.ask`: ``"answer"``, or the guard named
    by the last step.
    """
    t0 = time.perf_counter()
    options = dict(loop_options or {})
    if protocol == "native":
        messages: list[dict] = []
        steps_iter = native.run_native(task.question, model, tools, max_steps=max_steps,
                                       max_tokens=max_tokens, messages=messages, **options)
        transcript = None
    else:
        from .loop import run

        transcript = Transcript()
        steps_iter = run(task.question, model, tools, transcript=transcript, max_steps=max_steps,
                         max_tokens=max_tokens, exemplars=exemplars, **options)
    steps, stopped_by = [], None
    for step in steps_iter:
        steps.append(step)
        if step.answer is None and time.perf_counter() - t0 > timeout:
            stopped_by = "timeout"
            break
    if transcript is None:
        transcript = native.conversation(messages)
    last = steps[-1] if steps else Step(step=0, guard="max_steps")
    if stopped_by is None:
        stopped_by = ("answer" if last.answer is not None and last.guard is None
                      else last.guard or "max_steps")
    return (None if stopped_by == "timeout" else last.answer), stopped_by, steps, transcript


def evaluate(tasks: Sequence[Task], model, *, protocol: str = "text", tools: dict | None = None,
             max_steps: int = 4, max_tokens: int = 128, timeout: float = 60.0, exemplars=None,
             loop_options: dict | None = None, model_name: str | None = None,
             cache_dir: str | Path | None = None, use_cache: bool = True,
             progress: bool = True) -> EvalRun:
    """Run every task and score it; reuse cached records whose key has not changed.

    ``model`` is a backend (a completion model for ``protocol="text"``, a chat model
    for ``"native"``), or a function ``task -> backend`` (the scripted oracle is built
    per task; ``functools.partial(oracle_model, protocol="native")`` for native).

    Cache: the model's name (``model_name``, else ``model.name``), the protocol, the
    task id and question, and a hash of :func:`config_of` (prompt or tool schemas,
    limits, loop options) make a record's key. Records are appended to
    ``<cache_dir>/<run_id>.jsonl`` (default :func:`default_cache_dir`); a timed-out run
    is not cached, since it says more about the machine's load than about the model.
    Answers are re-scored on every call, so a scorer change needs no re-run. Every step
    of every task is logged to ``<cache_dir>/logs/<run_id>.steps.jsonl``, rewritten
    each call (:func:`react_lab.trace.load_steps` reads it).

    ``timeout`` is per task, in wall-clock seconds (:func:`run_task`); ``exemplars``
    (text only) and ``loop_options`` go to the loop. Raises ValueError for an unknown
    protocol.
    """
    from tqdm.auto import tqdm

    from .tools import default_tools

    tools = default_tools() if tools is None else tools
    per_task = not (hasattr(model, "complete") or hasattr(model, "chat"))
    name = (model_name or getattr(model, "name", None)
            or getattr(getattr(model, "func", model), "__name__", "model"))
    config = config_of(protocol, tools, max_steps=max_steps, max_tokens=max_tokens,
                       exemplars=exemplars, loop_options=loop_options)
    run_id = f"{_slug(name)}-{protocol}-{_hash(config)[:10]}"
    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    cache_path = cache_dir / f"{run_id}.jsonl"
    log_path = cache_dir / "logs" / f"{run_id}.steps.jsonl"
    cached = _read_cache(cache_path) if use_cache else {}
    log_path.unlink(missing_ok=True)

    t0, records, computed = time.perf_counter(), [], 0
    bar = tqdm(tasks, desc=run_id, disable=not progress, unit="task")
    for task in bar:
        key = _hash([name, protocol, task.id, task.question, config])[:16]
        record = cached.get(key)
        if record is None:
            t1 = time.perf_counter()
            answer, stopped_by, steps, transcript = run_task(
                task, model(task) if per_task else model, tools, protocol=protocol,
                max_steps=max_steps, max_tokens=max_tokens, timeout=timeout, exemplars=exemplars,
                loop_options=loop_options)
            record = {"run_id": run_id, "key": key, "task_id": task.id, "model": name,
                      "protocol": protocol, "answer": answer, "stopped_by": stopped_by,
                      "seconds": round(time.perf_counter() - t1, 3),
                      "steps": [step_event(s, run_id=run_id, task_id=task.id, tools=tools)
                                for s in steps],
                      "transcript": [list(span) for span in transcript.spans]}
            if use_cache and stopped_by != "timeout":
                write_jsonl(cache_path, [record])
            computed += 1
        record = dict(record, category=task.category, question=task.question, gold=task.gold,
                      correct=score(record["answer"], task), cached=key in cached)
        records.append(record)
        write_jsonl(log_path, record["steps"])
        bar.set_postfix(success=f"{sum(r['correct'] for r in records)}/{len(records)}")
    return EvalRun(run_id, records, computed, time.perf_counter() - t0, log_path,
                   cache_path if use_cache else None)


def transcript_of(record: dict) -> Transcript:
    """Rebuild the owner-marked transcript of a record (``.render_html()`` to read it)."""
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
    parse_errors = [e for r in records for e in r["steps"] if e["error"] and not e["tool"]
                    and e["answer"] is None]
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
        "tokens_per_task": _mean([sum(e["prompt_tokens"] + e["completion_tokens"]
                                      for e in r["steps"]) for r in records]),
        "answered_rate": _mean([1.0 if r["answer"] is not None else 0.0 for r in records]),
        "timeout_rate": _mean([1.0 if r["stopped_by"] == "timeout" else 0.0 for r in records]),
        "parse_error_rate": len(parse_errors) / sum(steps) if sum(steps) else 0.0,
        "tool_calls_by_tool": {t: len(v) for t, v in sorted(by_tool.items())},
        "tool_error_rate_by_tool": {t: _mean(v) for t, v in sorted(by_tool.items())},
        "seconds_per_task": _mean([r["seconds"] for r in records]),
    }


METRIC_ROWS = ("success_rate", "mean_steps", "p95_steps", "step_limit_rate", "tool_error_rate",
               "repeat_action_rate", "parse_error_rate", "tokens_per_task", "seconds_per_task")


def metrics_table(named: dict[str, dict], rows: Iterable[str] = METRIC_ROWS) -> list[dict]:
    """Return one row per metric with a column per name (``{"text": metrics, ...}``)."""
    return [{"metric": m, **{name: values.get(m) for name, values in named.items()}}
            for m in rows]


def metrics_html(named: dict[str, dict]) -> str:
    """Render :func:`metrics_table` as an HTML table."""
    return html_table(metrics_table(named))


def success_by_category(records: Sequence[dict]) -> dict[str, float]:
    """Return the success rate of each task category, in first-seen order."""
    groups: dict[str, list[float]] = {}
    for r in records:
        groups.setdefault(r["category"], []).append(1.0 if r["correct"] else 0.0)
    return {c: _mean(v) for c, v in groups.items()}


def plot_metrics(named: dict[str, dict], by_category: dict[str, dict] | None = None):
    """Plot metrics side by side, one bar colour per name; returns the matplotlib Figure.

    Panels: the rates (0..1), steps per task (mean and p95), tokens per task, and, when
    ``by_category`` (name -> :func:`success_by_category`) is given, success per category.
    """
    import matplotlib.pyplot as plt

    rates = ["success_rate", "step_limit_rate", "tool_error_rate", "repeat_action_rate",
             "parse_error_rate"]
    panels = [("rates (share)", rates), ("steps per task", ["mean_steps", "p95_steps"]),
              ("tokens per task", ["tokens_per_task"])]
    ncols = len(panels) + (1 if by_category else 0)
    widths = [3, 1.3, 1] + ([3] if by_category else [])
    fig, axes = plt.subplots(1, ncols, figsize=(4 * ncols, 3.6),
                             gridspec_kw={"width_ratios": widths})
    width = 0.8 / max(1, len(named))
    for ax, (title, keys) in zip(axes, panels):
        for i, (name, values) in enumerate(named.items()):
            xs = [k + (i - (len(named) - 1) / 2) * width for k in range(len(keys))]
            ax.bar(xs, [values.get(k) or 0 for k in keys], width, label=name)
        ax.set_xticks(range(len(keys)))
        ax.set_xticklabels([k.replace("_rate", "").replace("_", " ") for k in keys],
                           rotation=30, ha="right")
        ax.set_title(title)
    axes[0].set_ylim(0, 1)
    axes[0].legend()
    if by_category:
        ax = axes[-1]
        cats = list(next(iter(by_category.values())))
        for i, (name, values) in enumerate(by_category.items()):
            ys = [k + (i - (len(by_category) - 1) / 2) * width for k in range(len(cats))]
            ax.barh(ys, [values.get(c, 0) for c in cats], width, label=name)
        ax.set_yticks(range(len(cats)))
        ax.set_yticklabels(cats)
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_title("success by category")
    fig.tight_layout()
    return fig


# =========================================================================== the CLI

def _model_for(spec: str, protocol: str):
    """Build the backend for ``--model``: oracle, dont_know, or a model spec for the protocol.

    Text: :func:`react_lab.models.load_model` specs; native: ``react_lab.native.load_chat_model``.
    """
    if spec in SCRIPTED:
        return functools.partial(SCRIPTED[spec], protocol=protocol)
    if protocol == "native":
        return native.load_chat_model(spec)
    from .models import load_model

    return load_model(spec)


def cli_eval(args) -> int:
    """``react-lab eval``: run the set, print per-task lines and metrics (or ``--json`` metrics).

    ``args``: ``n`` (first N tasks), ``protocol`` (text|native), ``model`` (local, oracle,
    dont_know, scripted:FILE.json, openai[:MODEL]), ``json``. Results are cached under
    :func:`default_cache_dir`. Returns the exit code.
    """
    tasks = load_tasks(n=args.n)
    try:
        model = _model_for(args.model, args.protocol)
        run = evaluate(tasks, model, protocol=args.protocol, progress=not args.json,
                       model_name=args.model if args.model in SCRIPTED else None)
    except RuntimeError as exc:
        print(f"react-lab eval: {exc}", file=sys.stderr)
        return 2
    m = run.metrics
    summary = {**m, "model": run.records[0]["model"] if run.records else args.model,
               "protocol": args.protocol, "run_id": run.run_id, "computed": run.computed,
               "seconds": round(run.seconds, 2), "log": str(run.log_path)}
    if args.json:
        print(json.dumps(summary, indent=2, ensure_ascii=False))
        return 0
    for r in run.records:
        answer = (r["answer"] or "").replace("\n", " ")
        print(f"{'✓' if r['correct'] else '✗'} {r['task_id']:<18} {r['stopped_by']:<10} "
              f"{len(r['steps'])} steps  gold={r['gold']!r}  answer={answer[:60]!r}")
    print()
    for key in METRIC_ROWS:
        print(f"{key:>20}: {m[key]:.3f}")
    print(f"{'tasks':>20}: {m['n']} ({run.computed} computed, the rest cached)")
    print(f"{'wall clock':>20}: {run.seconds:.1f} s   log: {run.log_path}")
    return 0

"""Step logs: one JSON line per step of a run, with what the evaluation reads from it.

:func:`step_event` flattens a :class:`react_lab.lab.agent.trace.Step` into a record
(:data:`EVENT_FIELDS`): the tool and its arguments named by the schema, whether they pass
it, the observation's size in characters and in cl100k_base tokens, the step's seconds,
tokens and guard. :func:`log_run` appends a run's records to a JSONL file;
:func:`read_jsonl` reads them back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from ...cost import count_tokens as cl100k_tokens
from ...schema import validate_call
from ..agent.trace import Step


def write_jsonl(path: str | Path, records: Iterable[dict[str, Any]]) -> Path:
    """Append one JSON object per line to ``path``; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False, default=str) + "\n")
    return path


def read_jsonl(path: str | Path) -> list[dict]:
    """Read a JSONL file back into a list of dicts (blank lines skipped)."""
    with Path(path).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


# --------------------------------------------------------------------------- step logs

#: The columns of one step's log record, in the order :func:`html_table` shows them.
EVENT_FIELDS = (
    "run_id",
    "task_id",
    "step",
    "thought",
    "tool",
    "args",
    "args_valid",
    "observation_tokens",
    "observation_chars",
    "seconds",
    "prompt_tokens",
    "completion_tokens",
    "error",
    "guard",
    "answer",
    "stop_mode",
    "forged_tokens",
    "leaked",
)


def step_event(
    step: Step, *, run_id: str, task_id: str | None = None, tools=None, count_tokens=None
) -> dict:
    """Flatten one :class:`Step` into a log record with the fields of :data:`EVENT_FIELDS`.

    ``args`` are the arguments as dispatched, named by the tool's schema when ``tools``
    (name -> :class:`react_lab.tools.Tool`) is given; ``args_valid`` says whether they
    pass that JSON Schema (:func:`react_lab.schema.validate_call`; None without ``tools``
    or without a call). Observation size
    is in characters and in tokens of ``count_tokens`` (default: cl100k_base through
    :func:`react_lab.cost.count_tokens`, the same count for every backend). ``seconds``
    is the step's wall-clock time.
    """
    count_tokens = count_tokens or cl100k_tokens
    tool = step.action["tool"] if step.action else None
    args, valid = (step.action or {}).get("args"), None
    spec = (tools or {}).get(tool)
    if spec is not None:
        names = list(spec.parameters["properties"])
        if isinstance(args, (list, tuple)) and len(args) <= len(names):
            args = dict(zip(names, args))
        valid = isinstance(args, dict) and not validate_call(spec, args)
    observation = step.observation or ""
    return {
        "run_id": run_id,
        "task_id": task_id,
        "step": step.number,
        "thought": step.thought,
        "tool": tool,
        "args": args,
        "args_valid": valid,
        "observation_tokens": count_tokens(observation) if observation else 0,
        "observation_chars": len(observation),
        "seconds": round(step.seconds, 4),
        "prompt_tokens": step.prompt_tokens,
        "completion_tokens": step.completion_tokens,
        "error": step.error,
        "guard": step.guard,
        "answer": step.answer,
        "stop_mode": step.stop_mode,
        "forged_tokens": step.forged_tokens,
        "leaked": step.leaked,
    }


def log_run(
    result, path: str | Path, run_id: str, *, task_id: str | None = None, tools=None
) -> Path:
    """Append one JSON line per step of ``result`` (a :class:`RunResult`) to ``path``.

    Each line is a :func:`step_event`; read them back with :func:`read_jsonl`.
    """
    return write_jsonl(
        path, (step_event(s, run_id=run_id, task_id=task_id, tools=tools) for s in result.steps)
    )

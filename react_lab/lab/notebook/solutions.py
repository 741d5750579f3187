"""Reference solutions to the bench notebooks' exercises: the one place they live.

Instructors: CI runs every notebook with these filled in (``REACT_LAB_SOLUTIONS=1``).
Learners: try the exercise first; each solution is a few lines. The core path's pieces are
the learner's agent, :mod:`react_lab.agent`.
"""

from __future__ import annotations

import json
import re

from ...protocol import ACTION_RE


def is_repeat(calls, name, args):
    """Bench notebook 06: True if the same tool already ran with the same arguments."""
    return (name, args) in calls


def parse_action(text: str):
    """Bench notebook 01: the anchored action line as (tool, [args]), or None."""
    match = ACTION_RE.search(text)
    if match is None:
        return None
    return match.group(1), [a.strip() for a in match.group(2).split(",")]


def dispatch(tools: dict, name: str, args: list) -> str:
    """Bench notebook 02: run the tool by name.

    Unknown tools and errors become text naming the tool.
    """
    if name not in tools:
        return f"Error: unknown tool {name!r}; available: {', '.join(tools)}"
    try:
        return json.dumps(tools[name].fn(*args), default=str)
    except Exception as exc:
        return f"Error: {name} failed: {type(exc).__name__}: {exc}"


def cut_forgery(text: str) -> str:
    """Bench notebook 03: cut at the first line starting with 'Observation'.

    Then trim a partial stop word at the end.
    """
    match = re.search(r"^Observation", text, re.MULTILINE)
    if match:
        text = text[: match.start()]
    head, newline, last = text.rpartition("\n")
    if newline and last and "Observation".startswith(last):
        text = head + newline
    return text


def missing_fields(schema: dict, args: dict) -> list:
    """Bench notebook 04: what JSON Schema's ``required`` keyword reports, by hand."""
    return [name for name in schema.get("required", []) if name not in args]


def truncate_observation(text: str, max_chars: int) -> str:
    """Bench notebook 07: cut to a budget and say so, so the model knows there was more."""
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]} ...[truncated {len(text) - max_chars} characters]"


def normalise_amount(text: str):
    """Notebook 08: the first number in the text, thousands separators dropped, as dollars."""
    match = re.search(r"\d[\d,]*(?:\.\d+)?", text)
    return float(match.group(0).replace(",", "")) if match else None

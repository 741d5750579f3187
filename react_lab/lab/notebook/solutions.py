"""Reference solutions to the notebook exercises: the one place they live.

Instructors: CI runs every notebook with these filled in (``REACT_LAB_SOLUTIONS=1``).
Learners: try the exercise first; each solution is a few lines.
"""
from __future__ import annotations

import json
import re

from ...protocol import ACTION_RE, STOP, build_prompt
from ...tools import call_tool

_ACTION = re.compile(r"^Action:\s*(\w+)\[(.*)\]\s*$", re.MULTILINE)


def run_loop(question, model, tools, exemplars=None, max_steps=6):
    """Notebook 02: the text-protocol loop; returns (answer or None, transcript)."""
    transcript = build_prompt(question, tools.values(), exemplars)
    for _ in range(max_steps):
        # 1. send the whole transcript; the stop sequence cuts the completion before an Observation
        text = model.complete(transcript, stop=STOP, max_tokens=128).text
        # 2. append what the model wrote
        transcript += text
        # 3. stop on an answer: the rest of its line
        if "Answer:" in text:
            return text.split("Answer:", 1)[1].split("\n", 1)[0].strip(), transcript
        # 4. parse the action: the anchored regex, arguments split on commas
        match = ACTION_RE.search(text)
        if match is None:
            observation = "Could not parse an action. Write one line: Action: tool_name[arguments]"
        else:
            name, raw = match.group(1), match.group(2)
            # 5. dispatch: call_tool never raises; an error comes back as text
            observation = call_tool(tools, name, [a.strip() for a in raw.split(",")]).text
        # 6. the loop, not the model, writes the Observation, then the next label
        transcript += f"\nObservation: {observation}\nThought:"
    return None, transcript


def parse_action(text: str):
    """Bench notebook 01: the anchored action line as (tool, [args]), or None."""
    match = _ACTION.search(text)
    if match is None:
        return None
    return match.group(1), [a.strip() for a in match.group(2).split(",")]


def dispatch(tools: dict, name: str, args: list) -> str:
    """Bench notebook 02: run the tool by name; unknown tools and errors become text naming the tool."""
    if name not in tools:
        return f"Error: unknown tool {name!r}; available: {', '.join(tools)}"
    try:
        return json.dumps(tools[name].fn(*args), default=str)
    except Exception as exc:
        return f"Error: {name} failed: {type(exc).__name__}: {exc}"


def cut_forgery(text: str) -> str:
    """Bench notebook 03: cut at the first line starting with 'Observation', trim a partial stop word."""
    match = re.search(r"^Observation", text, re.MULTILINE)
    if match:
        text = text[:match.start()]
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


def prompt_tokens_at_step(P: int, O: int, A: int, k: int) -> int:
    """Notebook 05: the prefix once, plus every earlier step's assistant text and observation."""
    return P + (k - 1) * (A + O)


def is_repeat(history: list, tool: str, args) -> bool:
    """Bench notebook 06: an exact repeat is the same tool with the same arguments."""
    return (tool, args) in history


def normalise_amount(text: str):
    """Notebook 08: the first number in the text, thousands separators dropped, as dollars."""
    match = re.search(r"\d[\d,]*(?:\.\d+)?", text)
    return float(match.group(0).replace(",", "")) if match else None

"""Notebook 07's helpers: the learner's two loops measured side by side, and what the cells show.

The counting is the migration experiment's (:mod:`react_lab.lab.experiments.migration`:
:func:`measured` runs a loop and counts its model calls' three problems, as the experiment
counts the reference agent's); here, the table of the learner's two loops beside the shipped
file's runs of the reference agent's (:func:`problems_table`), the code of a piece as
a diff reads it (:func:`source_of`), the ladder's files (:func:`ladder_table`), a scripted reply
with a call leaked into its text (:func:`leaked_reply`) and the calls a native run made
(:func:`calls_in`). The names notebook 07 imports in one line are here too (its facade).
"""

from __future__ import annotations

import ast
import inspect
import io
import textwrap
import tokenize
from collections import Counter
from typing import Callable

from ..lab.backends.load import load_chat_model, load_model  # noqa: F401
from ..lab.experiments.migration import measured  # noqa: F401
from ..lab.experiments.migration_runs import exemplar_for, saved_results, tasks_named  # noqa: F401
from ..messages import first_messages, reply_calls, tool_messages  # noqa: F401
from ..tools import default_tools, tool_schemas  # noqa: F401
from .agent_file import reference_source
from .minutes import show_minutes  # noqa: F401
from .quiz import quiz  # noqa: F401


def problems_table(text: list[dict], native: list[dict], saved=None) -> str:
    """The learner's two loops side by side, and the saved file's runs of the same two below.

    The loops are :func:`measured` runs.

    Columns: right answers of questions; ``unreadable`` and ``neither`` (undone) per model
    call; ``invalid`` per call made; seconds per question in this run. ``saved`` is the
    loaded ``migration-test`` results: its ``text`` and ``native`` arms, the reference
    agent's ``run_loop`` and ``run_native`` with one exemplar, counted the same way.
    """

    def row(label, right, runs, p, seconds=""):
        def cell(k, of):
            return f"{p[k]}/{p[of]}"

        return (
            f"{label:<24}{right:>3}/{runs:<3}{cell('unreadable', 'steps'):>12}"
            f"{cell('invalid', 'calls'):>9}{cell('undone', 'steps'):>9}{seconds:>12}"
        )

    lines = [
        f"{'':<24}{'right':>7}{'unreadable':>12}{'invalid':>9}{'neither':>9}{'s/question':>12}"
    ]
    for name, runs in (("run_loop", text), ("run_native", native)):
        whose = {r.get("loop", "your") for r in runs}  # a reference standing in says so
        label = f"{'your' if whose == {'your'} else 'reference'} {name}"
        p = Counter()
        for r in runs:
            p.update({k: r[k] for k in ("unreadable", "invalid", "undone", "calls", "steps")})
        seconds = f"{sum(r['seconds'] for r in runs) / max(len(runs), 1):.1f}"
        lines.append(row(label, sum(r["right"] for r in runs), len(runs), p, seconds))
    if saved is not None:
        when = saved.describe().split(" computed ")[1].split(" in ")[0]
        lines.append(
            f"file {saved.name}: the reference agent's two loops, "
            f"{saved.data['summary']['text']['runs']} questions (computed {when}):"
        )
        for arm, loop in (("text", "run_loop"), ("native", "run_native")):
            s = saved.data["summary"][arm]
            p = {
                "unreadable": s["unreadable"]["count"],
                "invalid": s["invalid"]["count"],
                "undone": s["undone"]["count"],
                "steps": s["steps"],
                "calls": s["calls"],
            }
            lines.append(row(f"  {loop}", s["correct"], s["runs"], p))
    return "\n".join(lines)


def source_of(fn: Callable) -> list[str]:
    """The code of a piece of the learner's agent, line by line.

    No docstring, comments or blank lines.

    Their own piece as ``my_agent.py`` holds it; for a reference standing in (a piece with a
    ``reference`` attribute, :func:`react_lab.workshop.agent_file.load_agent`), the
    reference's, named as the piece. Indentation is kept, so a diff shows the loop's shape.
    """
    exercise = getattr(fn, "reference", None)
    source = reference_source(exercise) if exercise else inspect.getsource(fn)
    source = textwrap.dedent(source)
    lines = source.splitlines()
    cut: dict[int, int] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            cut[tok.start[0]] = tok.start[1]
    body = ast.parse(source).body[0].body
    doc = set()
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(getattr(body[0], "value", None), ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        doc = set(range(body[0].lineno, body[0].end_lineno + 1))
    kept = [
        (line[: cut[n]] if n in cut else line).rstrip()
        for n, line in enumerate(lines, 1)
        if n not in doc
    ]
    return [line + "\n" for line in kept if line.strip()]


def ladder_table(*configs: str) -> str:
    """The ladder's files for ``configs`` on the test half, labelled.

    Each: right of n, seconds and prompt tokens per task.
    """
    from ..lab.experiments.ladder import load_results

    rows = load_results([f"ladder-test-{c}" for c in configs])
    lines = [f"{'file':<28}{'right':>9}{'s/task':>8}{'prompt tokens/task':>20}   computed"]
    for r in rows:
        when = r["describe"].split(" computed ")[1].split(" in ")[0]
        lines.append(
            f"{r['name']:<28}{r['rate'].successes:>5}/{r['rate'].n:<3}{r['seconds']:>8.2f}"
            f"{r['prompt_tokens']:>20,.0f}   {when}"
        )
    return "\n".join(lines)


def leaked_reply(text: str):
    """A scripted chat reply whose call is written into its text, with ``tool_calls`` empty.

    As a server whose chat template does not parse the model's call format returns it.
    """
    from ..lab.backends.chat import ChatReply

    return ChatReply(content=text, tool_calls=[], finish_reason="stop")


def system_example(tools) -> str:
    """The one example reply the embedded chat backend's system turn shows with ``tools``."""
    from ..lab.backends.chat import describe_tool_schemas

    lines = describe_tool_schemas(tool_schemas(tools)).splitlines()
    return lines[lines.index("Reply with one JSON object: a tool call such as") + 1]


def calls_in(messages: list[dict]) -> list[str]:
    """The calls a native run made, as ``tool(arguments)``: the exemplars' left out."""
    return [
        f"{c['function']['name']}({c['function']['arguments']})"
        for m in messages
        if m.get("role") == "assistant"
        for c in m.get("tool_calls") or []
        if not str(c.get("id", "")).startswith("example_")
    ]

"""The bench agent's loops as the lab runs them: with the lab's guards, and a progress bar if asked.

:func:`ask` and :func:`ask_native` are :func:`react_lab.lab.agent.loop.ask` and
:func:`react_lab.lab.agent.native.ask_native` with one difference: when no ``guards`` are given, a
run gets :class:`react_lab.lab.guards.LabGuards` (near repeats, paging with ``more``, tool timeouts,
...: what every experiment and bench notebook runs with), not the agent's own smaller set. A
native run starts a reply's read-only calls side by side
(:func:`react_lab.lab.parallel_calls.run_parallel_calls`) unless ``run_calls`` says otherwise.
``progress=True`` shows a tqdm bar over the steps, for a slow model.
"""

from __future__ import annotations

from ..tools import Tool
from .agent.loop import run
from .agent.native import run_native
from .agent.tool_calls import conversation
from .agent.trace import RunResult, Transcript
from .extras import tqdm
from .guards import LabGuards
from .parallel_calls import run_parallel_calls


def ask(
    question: str, model, tools: dict[str, Tool], *, progress=False, guards=None, **kwargs
) -> RunResult:
    """:func:`react_lab.lab.agent.loop.ask` with the lab's guards by default (same keyword
    arguments)."""
    transcript = Transcript()
    guards = guards if guards is not None else LabGuards()
    steps = run(question, model, tools, transcript=transcript, guards=guards, **kwargs)
    steps = tqdm(steps, desc="steps", unit="step", leave=False) if progress else steps
    return RunResult.from_steps(question, list(steps), transcript)


def ask_native(
    question: str, model, tools: dict[str, Tool], *, progress=False, guards=None, **kwargs
) -> RunResult:
    """:func:`react_lab.lab.agent.native.ask_native` with the lab's guards by default (same
    arguments)."""
    messages: list[dict] = []
    guards = guards if guards is not None else LabGuards()
    kwargs.setdefault("run_calls", run_parallel_calls)
    steps = run_native(question, model, tools, messages=messages, guards=guards, **kwargs)
    steps = tqdm(steps, desc="steps", unit="step", leave=False) if progress else steps
    return RunResult.from_steps(question, list(steps), conversation(messages))

"""Parallel tool calls: a reply's read-only calls run side by side, each on a connection of its own.

The lesson's native loop runs a reply's calls one at a time, in call order
(:func:`react_lab.lab.agent.native.run_calls`). The lab runs them as a provider's parallel tool
calls are meant to run: :func:`run_parallel_calls`, passed to the loop as ``run_native(...,
run_calls=run_parallel_calls)`` (the evaluation, the ladder's native rungs, the CLI and
:func:`react_lab.lab.loops.ask_native` do). Consecutive read-only calls start together, each in a
thread of its own on a database connection of its own (:func:`concurrent_tool`); a side-effecting
call (``Tool.side_effect``) and a call that cannot have a connection of its own run alone, in their
turn, so a read written after a write sees it. The guards then take the calls one by one in call
order, whatever finished first, so their counters, refusals and pages -- and the observations -- are
exactly a one-at-a-time run's. A read-only call the guards refuse (a repeat), or answer themselves
(the lab's ``more``), may already have run: it changed nothing, and its result is dropped. Each
side-effecting call passes the approval gate before it runs.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import replace

from ..tools import Observation, Tool, connection, open_db
from .agent.guards import Watch
from .agent.native import execute_call, run_call


def run_parallel_calls(
    watch: Watch, tools: dict[str, Tool], calls: Sequence[dict]
) -> list[Observation]:
    """Run one reply's calls through the run's ``watch``, read-only ones side by side.

    The observations come back in call order and are those of
    :func:`react_lab.lab.agent.native.run_calls` (module docstring).
    """
    observations: list[Observation] = []
    for group in call_groups(tools, calls):
        started = [start_call(tool, call) if len(group) > 1 else None for call, tool in group]
        for (call, _), future in zip(group, started):
            run = execute_call if future is None else functools.partial(_result, future)
            observations.append(run_call(watch, tools, call, run))
    return observations


def _result(future: Future, tools: dict[str, Tool], call: dict, **gate) -> Observation:
    """The observation of a call started already: the guards wait for it (their timeout applies)."""
    return future.result()


def call_groups(
    tools: dict[str, Tool], calls: Sequence[dict]
) -> list[list[tuple[dict, Tool | None]]]:
    """Split a reply's calls into groups that run together: runs of read-only calls, others alone.

    Each entry is ``(call, tool to run it with)``: the read-only tool on its own connection,
    None for a call that runs alone.
    """
    groups: list[list[tuple[dict, Tool | None]]] = []
    for call in calls:
        tool = concurrent_tool(tools, call)
        if tool is not None and groups and groups[-1][-1][1] is not None:
            groups[-1].append((call, tool))
        else:
            groups.append([(call, tool)])
    return groups


def concurrent_tool(tools: dict[str, Tool], call: dict) -> Tool | None:
    """The tool ``call`` names, able to run beside others; None if it must run alone.

    Read-only tools only (a call the guards answer themselves, as the lab's ``more``, may
    start too: its result is dropped). A tool bound to a sqlite3 connection gets a
    read-only connection of its own to the same file: one connection must not serve two
    threads at once (their statements, and the SQL record :func:`react_lab.tools.call_tool`
    keeps with a trace callback on the connection, would mix). A database with no file
    (``:memory:``) cannot be opened twice: None.
    """
    name = call.get("function", {}).get("name")
    tool = tools.get(name) if isinstance(name, str) else None
    if tool is None or tool.side_effect:
        return None
    conn = connection(tool)
    if conn is None:
        return tool
    path = conn.execute("PRAGMA database_list").fetchone()[2]
    if not path:
        return None
    fn = tool.fn
    return replace(tool, fn=functools.partial(fn.func, open_db(path), *fn.args[1:], **fn.keywords))


def start_call(tool: Tool, call: dict) -> Future:
    """Start ``call`` on ``tool`` in a daemon thread; the future holds its :class:`Observation`.

    The thread closes the tool's own connection when the call is done, before the future
    holds the result (sqlite3 crashes on a connection closed while another thread uses it).
    A call that hangs is cut off by the guards' timeout while they wait for its result.
    """
    future: Future = Future()

    def work() -> None:
        try:
            observation = execute_call({tool.name: tool}, call)
        except BaseException as exc:  # noqa: BLE001 -- a result at once, not a wait for the timeout
            observation = Observation.failure(
                f"{tool.name} failed with {type(exc).__name__}: {exc}"
            )
        finally:  # closed before the result is given: no other thread meets it half closed
            own = connection(tool)
            if own is not None:
                own.close()
        future.set_result(observation)

    threading.Thread(target=work, daemon=True, name=f"call-{tool.name}").start()
    return future

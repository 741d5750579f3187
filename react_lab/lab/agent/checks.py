"""A run's arguments, refused before anything runs, with a message that says what to pass.

Both loops call :func:`check_run_arguments` first (:func:`react_lab.lab.agent.loop.run`,
:func:`react_lab.lab.agent.native.run_native`) and read each reply of the model through
:func:`check_reply`; the backends check their counts with :func:`check_count`. What counts as
a blank question is :func:`react_lab.protocol.visible`'s.
"""

from __future__ import annotations

import inspect
import numbers
import re
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

from ...protocol import Exemplar, visible
from ...tools import Tool
from .guards import Guards


def check_count(name: str, value: Any) -> int:
    """Return ``value`` if it is a whole number >= 1, else raise ``ValueError`` naming ``name``.

    For counts such as ``max_tokens`` and ``max_steps``: ``0`` or ``-1`` would mean
    "unlimited" to llama.cpp and nothing useful to the loop, and ``"3"`` or ``2.5`` is a
    slip, so all of them are refused here rather than misread later. ``True`` is refused
    too (Python counts it as the integer 1).
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
    return int(value)


def check_run_arguments(
    model_method: str,
    question: Any,
    model,
    tools,
    max_steps,
    max_tokens,
    guards: Any = None,
    exemplars: Any = None,
    stop: Any = None,
) -> None:
    """Refuse arguments a loop cannot run with, before it does anything.

    ``model_method`` is the method the loop calls on ``model``: ``"complete"`` for the
    text loop, ``"chat"`` for the native one; the rest are the loop's own arguments. Raises
    ``TypeError`` when ``model`` has no such method, ``tools`` is not a dict of name ->
    :class:`react_lab.tools.Tool` (each one's function callable, its parameters a JSON
    Schema object with ``properties``), ``question`` is not a string, ``guards`` is not a
    :class:`react_lab.lab.agent.guards.Guards` or ``exemplars`` not a list of
    :class:`react_lab.protocol.Exemplar`; and ``ValueError`` when ``question`` is blank
    (empty, or only whitespace and invisible characters), a tool is filed under another
    name than its own (the model calls it by its own), or ``max_steps`` or ``max_tokens``
    is not a whole number >= 1.
    """
    if not isinstance(question, str):
        raise TypeError(
            f"question must be a string, got {type(question).__name__} {question!r:.60}"
        )
    if not visible(question):
        raise ValueError(f"question is blank ({question!r:.40}); ask a question with words in it")
    if not callable(getattr(model, model_method, None)):
        hint = (
            " (build one from a spec with react_lab.lab.backends.load_model(...))"
            if isinstance(model, str)
            else ""
        )
        raise TypeError(
            f"model must be a backend with a {model_method}(...) method, "
            f"got {type(model).__name__} {model!r:.60}{hint}"
        )
    if not isinstance(tools, Mapping):
        from_list = " (from a list: {t.name: t for t in tools})"
        raise TypeError(
            "tools must be a dict of tool name -> Tool, such as "
            f"react_lab.tools.default_tools(); got {type(tools).__name__}"
            + (from_list if isinstance(tools, (list, tuple)) else "")
        )
    for name, tool in tools.items():
        if not isinstance(tool, Tool):
            raise TypeError(
                f"tools[{name!r}] must be a react_lab.tools.Tool, got "
                f"{type(tool).__name__} {tool!r:.60}; build one with Tool(name, fn, "
                "description, parameters)"
            )
        check_tool(name, tool)
        if model_method == "complete" and not re.fullmatch(r"\w+", str(name)):
            raise ValueError(
                f"the tool {name!r} cannot be called in the text protocol: an Action line "
                "names a tool with letters, digits and _ (ACTION_RE); rename it"
            )
    if guards is not None and not isinstance(guards, Guards):
        raise TypeError(
            f"guards must be a react_lab.lab.agent.guards.Guards, got {type(guards).__name__} "
            f"{guards!r:.60}; Guards() for every limit, Guards.off() for none"
        )
    if guards is not None:
        check_guards(guards)
    check_exemplars(exemplars)
    if stop is not None and not isinstance(stop, bool):
        raise TypeError(
            f"stop must be True (send the protocol's stop sequence) or False, got {stop!r:.40}"
        )
    check_count("max_steps", max_steps)
    check_count("max_tokens", max_tokens)


def check_tool(name: str, tool: Tool) -> None:
    """Refuse a :class:`react_lab.tools.Tool` a loop cannot offer under ``name``, naming why."""
    if name != tool.name:
        raise ValueError(
            f"tools[{name!r}] is the tool {tool.name!r}: the model calls a tool by its own "
            "name, so file each one under it ({t.name: t for t in tools})"
        )
    if not callable(tool.fn):
        raise TypeError(f"tools[{name!r}].fn must be callable, got {type(tool.fn).__name__}")
    if not isinstance(name, str) or not name.strip():
        raise TypeError(f"a tool's name must be a non-empty string, got {name!r:.40}")
    parameters = tool.parameters
    if not isinstance(parameters, Mapping) or not isinstance(parameters.get("properties"), Mapping):
        raise TypeError(
            f"tools[{name!r}].parameters must be a JSON Schema object with 'properties' "
            f"(react_lab.schema.object_schema(...) builds one), got {parameters!r:.80}"
        )
    bad = [k for k, v in parameters["properties"].items() if not isinstance(v, Mapping)]
    if bad:
        raise TypeError(
            f"tools[{name!r}].parameters['properties'][{bad[0]!r}] must be a JSON Schema "
            f"object such as {{'type': 'string'}}, got {parameters['properties'][bad[0]]!r:.40}"
        )
    try:  # the function takes what the schema declares (a model's call is checked by it)
        inspect.signature(tool.fn).bind(**dict.fromkeys(parameters["properties"]))
    except TypeError:
        raise TypeError(
            f"tools[{name!r}].fn does not take the parameters its schema declares "
            f"({', '.join(parameters['properties'])}): no call the model makes could run"
        ) from None
    except ValueError:  # a builtin without a signature: nothing to check
        pass


def check_guards(guards: Guards) -> None:
    """Refuse guards whose settings a run cannot use, naming the setting, by its declared type:
    a count that is not a whole number, a limit that is not a number, a switch that is not
    ``True`` or ``False``, a hook that is not callable (``None`` where the type allows it). A
    limit that ``None`` switches off must be above 0 (``retry_cap=0`` would refuse every
    call; ``None`` is "no limit"); the others (prices, ``keep_last``) may be 0.
    ``token_budget="5"`` would otherwise fail mid-run, deep in the loop."""
    for setting in fields(guards):
        value, kind = getattr(guards, setting.name), str(setting.type)
        if value is None and "None" in kind:
            continue
        if kind.startswith("Callable"):
            ok, want = callable(value), "a function"
        elif kind.startswith("bool"):
            ok, want = isinstance(value, bool), "True or False"
        elif kind.startswith(("int", "float")):
            whole, off = kind.startswith("int"), "None" in kind  # off: 0 would stop everything
            number = numbers.Integral if whole else numbers.Real
            ok = isinstance(value, number) and not isinstance(value, bool)
            if whole:
                ok, want = ok and value >= off, f"a whole number >= {int(off)}"
            else:
                ok, want = (
                    ok and (value > 0 if off else value >= 0),
                    f"a number {'>' if off else '>='} 0",
                )
        else:
            continue
        if not ok:
            also = " or None" if "None" in kind else ""
            raise TypeError(f"guards.{setting.name} must be {want}{also}, got {value!r:.40}")


def check_exemplars(exemplars: Any) -> None:
    """Refuse ``exemplars`` that are not None or a list of :class:`react_lab.protocol.Exemplar`."""
    if exemplars is None:
        return
    if isinstance(exemplars, (str, bytes, Mapping)) or not hasattr(exemplars, "__iter__"):
        raise TypeError(
            f"exemplars must be a list of react_lab.protocol.Exemplar, got "
            f"{type(exemplars).__name__} {exemplars!r:.60}"
        )
    shown = exemplars if isinstance(exemplars, Sequence) else ()  # an iterator is read once
    for i, exemplar in enumerate(shown):
        if not isinstance(exemplar, Exemplar):
            raise TypeError(
                f"exemplars[{i}] must be a react_lab.protocol.Exemplar, got "
                f"{type(exemplar).__name__} {exemplar!r:.60}"
            )


#: What each loop reads of what the model's method returns, by the method's name.
#: (A step records the counts: :meth:`react_lab.lab.agent.trace.Step.of`.)
_COUNTS = ("finish_reason", "prompt_tokens", "completion_tokens", "evaluated_tokens", "seconds")
REPLY_FIELDS = {
    "complete": ("text", *_COUNTS),
    "chat": ("content", "tool_calls", "thought", "message", "text", *_COUNTS),
}


def check_reply(reply: Any, model, method: str) -> Any:
    """Return what ``model.<method>(...)`` returned, or raise ``TypeError`` if a loop cannot
    read it: a bare string, or an object without the fields of :data:`REPLY_FIELDS` (the
    lab's backends return ``Completion`` and ``ChatReply`` objects, which have them)."""
    missing = [name for name in REPLY_FIELDS[method] if not hasattr(reply, name)]
    if method == "complete" and not missing and not isinstance(reply.text, str):
        missing = ["text as a string"]
    if missing:
        kind = "Completion" if method == "complete" else "ChatReply"
        raise TypeError(
            f"{type(model).__name__}.{method}(...) returned {type(reply).__name__} "
            f"{reply!r:.60}, which has no {', '.join(missing)}: return a {kind} as the "
            "backends of react_lab.lab.backends do"
        )
    return reply

"""Tool calls that leaked into a native reply's text.

A native reply carries its calls in ``tool_calls``. When a server's chat template does
not know the model's call format, or a model writes the call its own way, the call
arrives as ordinary text in ``content`` with no ``tool_calls`` and ``finish_reason:
"stop"``: in the model's own markup -- Harmony's ``to=functions.NAME<|message|>{...}``,
DeepSeek's ``<｜tool▁call▁begin｜>``, Mistral's ``[TOOL_CALLS]NAME{...}``, Gemma's
``<|tool_call>call:NAME{...}``, a ``<tool_call>`` block (Hermes, Qwen, GLM), Qwen3-Coder's
``<function=NAME>`` elements, and more (:mod:`react_lab._parsing.formats` lists them) -- or
as a bare JSON call: ``{"name": ..., "arguments": {...}}`` (Llama 3), ``{"tool_name": ...,
"tool_input": {...}}``, a JSON list of calls, any of them in a fenced ``json`` block.
Taken as the final answer, such a reply ends the run on a tool call nobody ran.

:func:`find_leaks` finds them with the text parser's own readers (the markup readers of
:mod:`react_lab._parsing.formats`, the JSON-call reader
:func:`react_lab._parsing.calls.find_json_call`). What the native loop does with them is its policy
(:func:`react_lab.lab.agent.native.run_native`): a leaked call that names a declared tool with valid
arguments is run and the step is marked ``leaked``; otherwise nothing runs and the model is told to
put the call in the tool-call field. A reply's text is read for them after its reasoning is set
aside (:func:`react_lab.lab.agent.parser.read_reply`, the native loop's reading of a reply's text),
so a call drafted in reasoning is never one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..protocol import clip
from .calls import find_json_call, load_object, names_a_call
from .formats import find_calls, fitted
from .tokens import decode_markers

#: Most calls read from one reply: a list of calls is rarely longer, and it bounds the work.
MAX_CALLS = 8


@dataclass(frozen=True)
class Leak:
    """One leaked call: OpenAI-shaped ``call``, the ``format`` it was written in, its span."""

    call: dict
    format: str
    start: int
    end: int
    problem: str | None = None

    def describe(self, tools=None) -> str:
        """The call in words for a message to the model: ``"a Harmony tool call to get_weather"``.

        With ``tools`` (the declared names), a call to another tool says so ("..., a tool this
        agent does not have"), and a call with a problem says what it is ("... that is cut off
        inside its parameter 'city'").
        """
        name = self.call["function"]["name"]
        said = f"a {self.format} tool call to {clip(name, 60)}"
        if self.problem is not None:
            return f"{said} that {self.problem}"
        if tools is not None and name not in tools:
            return f"{said}, a tool this agent does not have"
        return said


def leaked_calls(text: str | None, tools=None) -> list[dict]:
    """Find tool calls written in a reply's text; return them OpenAI-shaped, or [] if none.

    Each call is ``{"id": "leaked_N", "type": "function", "function": {"name",
    "arguments": "<JSON string>"}}``, in the order written (every call of a list or a
    frame). The format each was written in is :func:`find_leaks`' ``format``; ``tools`` as
    there. Never raises.
    """
    return [leak.call for leak in find_leaks(text, tools)]


def find_leaks(text: str | None, tools=None) -> list[Leak]:
    """Every tool call written in ``text``, with its format, in order; [] if none. Never raises.

    Markup that names a tool counts even when its arguments cannot be read (they are then
    passed on as written, so the argument check refuses them with a reason). A bare JSON
    object counts only when it is unmistakably a call
    (:func:`react_lab._parsing.calls.names_a_call`: an input key such as
    ``arguments``/``tool_input``, or a name key other than ``name``),
    so ``{"name": "Acme Corp"}`` in an answer is not one. Text whose spaces are still
    tokenizer markers (``▁``) is decoded first. ``tools`` (the declared names, or each name
    mapped to its parameters) splits a GLM name run into its first key where a declared tool
    ends (:func:`react_lab._parsing.formats.split_glued`); a name no tool splits stays whole,
    refused.
    """
    if not text or not isinstance(text, str):
        return []
    try:
        text = decode_markers(text)[0]
        markup = find_calls(text, MAX_CALLS, tools)
        calls = [fitted(c, tools) for c in markup if c.name and c.answer is None]
        found = [(c.start, c.end, c.format, c.name, c.arguments, c.problem) for c in calls]
        found += _bare_json_calls(text, [(c[0], c[1]) for c in found])
        found.sort(key=lambda c: c[0])
        return [
            Leak(_openai_call(i, name, _arguments(args, problem)), fmt, start, end, problem)
            for i, (start, end, fmt, name, args, problem) in enumerate(found[:MAX_CALLS], 1)
        ]
    except Exception:  # noqa: BLE001 -- reading model text must never take the loop down
        return []


def _openai_call(number: int, name: str, arguments: str) -> dict:
    """A leaked call as the tool-call field holds one: ``{"id", "type", "function"}``."""
    return {
        "id": f"leaked_{number}",
        "type": "function",
        "function": {"name": name.strip(), "arguments": arguments},
    }


def _bare_json_calls(text: str, taken: list[tuple[int, int]]) -> list[tuple]:
    """JSON calls outside the markup spans ``taken``.

    Each as ``(start, end, "JSON", name, input, None)``.
    """
    found: list[tuple] = []
    pos = 0
    while len(found) + len(taken) < MAX_CALLS:
        hit = find_json_call(text, pos)
        if hit is None or hit[2].kind != "action":
            break
        start, end, result = hit
        inside = any(a <= start < b for a, b in taken)
        if not inside and names_a_call(load_object(text[start:end])):
            found.append((start, end, "JSON", result.tool, result.input, None))
        pos = end
    return found


def _arguments(args, problem: str | None) -> str:
    """A call's arguments as the JSON string the tool-call field holds.

    Text that looks like an object is passed on as written. A call with a problem (cut off,
    unreadable) is passed on as written too: its text, or what was read with the object left
    unclosed, so the argument check refuses it and nothing runs on half a call.
    """
    if isinstance(args, str) and (problem or args.strip().startswith("{")):
        return args
    if problem:
        return json.dumps(args, ensure_ascii=False)[:-1] if isinstance(args, dict) else '""'
    return json.dumps("" if args is None else args, ensure_ascii=False)

"""Tool calls that leaked into a native reply's text.

A native reply carries its calls in ``tool_calls``. When a server's chat template does
not know the model's call format, or a model writes the call its own way, the call
arrives as ordinary text in ``content`` with no ``tool_calls`` and ``finish_reason:
"stop"``: a ``<tool_call>{...}</tool_call>`` block (Hermes, Qwen), a bare
``{"name": ..., "arguments": {...}}`` object (Llama 3), ``{"tool_name": ...,
"tool_input": {...}}``, a JSON list of calls, any of them in a fenced ``json`` block.
Taken as the final answer, such a reply ends the run on a tool call nobody ran.

:func:`leaked_calls` finds them. What the native loop does with them is its policy
(:func:`react_lab.native.run_native`): a leaked call that names a declared tool with
valid arguments is run, and the step is marked ``leaked``; otherwise nothing runs and
the model is told to put the call in the tool-call field.
"""
from __future__ import annotations

import ast
import json
import re
from typing import Any

#: Keys that name the tool, then keys that hold its arguments, in the order tried.
NAME_KEYS = ("name", "tool_name", "tool", "function_name")
ARGUMENT_KEYS = ("arguments", "parameters", "args", "tool_input", "input")

_TOOL_CALL_BLOCK = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_JSON_START = re.compile(r"[\[{]")
#: Most JSON values tried in one text: enough for any real reply, and it keeps a text of
#: thousands of unclosed braces from costing a quadratic scan.
MAX_ATTEMPTS = 32


def _values(text: str) -> list[Any]:
    """The JSON values (objects and lists) written in ``text``, outermost first, in order."""
    found, decoder, pos, attempts = [], json.JSONDecoder(strict=False), 0, 0
    while attempts < MAX_ATTEMPTS and (m := _JSON_START.search(text, pos)) is not None:
        attempts += 1
        try:
            value, end = decoder.raw_decode(text, m.start())
        except (ValueError, RecursionError):
            pos = m.start() + 1
            continue
        found.append(value)
        pos = end
    for block in _TOOL_CALL_BLOCK.findall(text):  # a block whose body is a Python literal
        if block.startswith("{") and not _values_json_only(block):
            try:
                found.append(ast.literal_eval(block))
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                pass
    return found


def _values_json_only(text: str) -> list[Any]:
    try:
        return [json.JSONDecoder(strict=False).raw_decode(text)[0]]
    except (ValueError, RecursionError):
        return []


def _as_call(obj: Any) -> dict | None:
    """``{"name", "arguments"}`` when ``obj`` reads as one call in any of the known shapes."""
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict):  # the OpenAI shape, written out as text
        return _as_call(obj["function"])
    name = next((obj[k] for k in NAME_KEYS if isinstance(obj.get(k), str) and obj[k].strip()),
                None)
    key = next((k for k in ARGUMENT_KEYS if k in obj), None)
    if name is None or key is None:  # {"name": "Acme Corp"} in an answer is not a call
        return None
    args = obj[key]
    if isinstance(args, str) and args.strip().startswith("{"):
        try:
            args = json.loads(args)
        except ValueError:
            pass  # keep the string: the schema check says what is wrong with it
    return {"name": name.strip(), "arguments": args}


def _calls_in(value: Any) -> list[dict]:
    if isinstance(value, list):
        return [c for c in map(_as_call, value) if c is not None]
    if isinstance(value, dict) and isinstance(value.get("tool_calls"), list):
        return _calls_in(value["tool_calls"])  # the lab's own reply shape, without the grammar
    call = _as_call(value)
    return [call] if call else []


def leaked_calls(text: str | None) -> list[dict]:
    """Find tool calls written in a reply's text; return them OpenAI-shaped, or [] if none.

    Each call is ``{"id": "leaked_N", "type": "function", "function": {"name",
    "arguments": "<JSON string>"}}`` as :func:`react_lab.native.tool_call` builds them.
    Recognised: ``<tool_call>`` blocks, objects with both a name key (:data:`NAME_KEYS`)
    and an arguments key (:data:`ARGUMENT_KEYS`; a JSON string there is decoded), the OpenAI
    ``{"type": "function", "function": {...}}`` shape, ``{"tool_calls": [...]}``, JSON
    lists of these, fenced or not, with prose around them. The first value that holds
    calls wins. Never raises.
    """
    if not text or not isinstance(text, str):
        return []
    try:
        for value in _values(text):
            calls = _calls_in(value)
            if calls:
                return [{"id": f"leaked_{i}", "type": "function",
                         "function": {"name": c["name"],
                                      "arguments": c["arguments"] if isinstance(c["arguments"], str)
                                      else json.dumps(c["arguments"], ensure_ascii=False)}}
                        for i, c in enumerate(calls, 1)]
    except Exception:  # noqa: BLE001 -- reading model text must never take the loop down
        return []
    return []

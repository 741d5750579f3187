"""Tool calls that leaked into a native reply's text.

A native reply carries its calls in ``tool_calls``. When a server's chat template does
not know the model's call format, or a model writes the call its own way, the call
arrives as ordinary text in ``content`` with no ``tool_calls`` and ``finish_reason:
"stop"``: a ``<tool_call>{...}</tool_call>`` block (Hermes, Qwen), a bare
``{"name": ..., "arguments": {...}}`` object (Llama 3), ``{"tool_name": ...,
"tool_input": {...}}``, a JSON list of calls, any of them in a fenced ``json`` block.
Taken as the final answer, such a reply ends the run on a tool call nobody ran.

:func:`leaked_calls` finds them with the text parser's own JSON-call reader
(:func:`react_lab._calls.find_json_call`: the same key spellings, fences, tags and Python
literals). What the native loop does with them is its policy
(:func:`react_lab.native.run_native`): a leaked call that names a declared tool with
valid arguments is run and the step is marked ``leaked``; otherwise nothing runs and the
model is told to put the call in the tool-call field.
"""
from __future__ import annotations

import json

from ._calls import find_json_call, load_object, names_a_call

#: Most calls read from one reply: a list of calls is rarely longer, and it bounds the work.
MAX_CALLS = 8


def leaked_calls(text: str | None) -> list[dict]:
    """Find tool calls written in a reply's text; return them OpenAI-shaped, or [] if none.

    Each call is ``{"id": "leaked_N", "type": "function", "function": {"name",
    "arguments": "<JSON string>"}}``, in the order written (every call of a JSON list).
    Only objects that are unmistakably calls count (:func:`react_lab._calls.names_a_call`:
    an input key such as ``arguments``/``tool_input``, or a name key other than ``name``),
    so ``{"name": "Acme Corp"}`` in an answer is not one. Never raises.
    """
    if not text or not isinstance(text, str):
        return []
    found: list[dict] = []
    try:
        pos = 0
        while len(found) < MAX_CALLS:
            hit = find_json_call(text, pos)
            if hit is None or hit[2].kind != "action":
                break
            start, end, result = hit
            if names_a_call(load_object(text[start:end])):
                args = result.input
                found.append({"id": f"leaked_{len(found) + 1}", "type": "function",
                              "function": {"name": result.tool.strip(),
                                           "arguments": json.dumps(args, ensure_ascii=False)
                                           if not isinstance(args, str) or not args.strip()
                                           .startswith("{") else args}})
            pos = end
    except Exception:  # noqa: BLE001 -- reading model text must never take the loop down
        return []
    return found

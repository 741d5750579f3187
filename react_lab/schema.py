"""The schema check: a tool call's arguments against the tool's JSON Schema, errors that name the field.

Native tool calling checks every call before it runs (:func:`react_lab.native.execute_call`);
the step logs say whether each call's arguments were valid (:func:`react_lab.trace.step_event`);
notebook 04 holds the same check up against the classic regex. ``jsonschema``'s Draft
2020-12 validator does the checking, with its ``FormatChecker`` (so ``format: date`` counts).
"""
from __future__ import annotations

import json
from typing import Any

from .tools import Tool


def validate_call(tool: Tool, args: Any) -> list[str]:
    """Check ``args`` against ``tool.parameters``; return one message per error, [] if valid.

    Each message starts with the field it is about (``since: 'July 1st' is not a 'date' ...``;
    a missing or undeclared argument is named too). Uses ``jsonschema``'s Draft 2020-12
    validator with its ``FormatChecker``, so ``format: date`` is enforced too. Never
    raises: anything unexpected becomes a message.
    """
    try:
        import jsonschema  # slow to import (~0.2 s); only a checked call needs it

        if not isinstance(args, dict):
            return [f"arguments must be a JSON object like {_example_args(tool)}, "
                    f"not {type(args).__name__}"]
        validator = jsonschema.Draft202012Validator(
            tool.parameters, format_checker=jsonschema.FormatChecker())
        declared = list(tool.parameters.get("properties", {}))
        messages = []
        for error in validator.iter_errors(args):
            messages += _describe(error, declared)
        messages = sorted(set(messages), key=lambda m: (_field_rank(m, declared), m))
        return _with_hints(messages, tool.parameters.get("properties", {}))
    except Exception as exc:  # noqa: BLE001 -- a checker must never take the loop down
        return [f"could not validate the arguments ({type(exc).__name__}: {exc})"]


def _describe(error, declared: list[str]) -> list[str]:
    """Turn one jsonschema error into messages that start with a field name."""
    if error.validator == "required" and not error.path:
        missing = [p for p in error.validator_value if p not in error.instance]
        return [f"{name}: required argument is missing" for name in missing]
    if error.validator == "additionalProperties" and not error.path:
        extra = [k for k in error.instance if k not in declared]
        return [f"{k}: not a declared argument (declared: {', '.join(declared)})" for k in extra]
    where = "/".join(str(p) for p in error.absolute_path) or "arguments"
    return [f"{where}: {error.message}"]


def _with_hints(messages: list[str], properties: dict) -> list[str]:
    """Append the field's description to the last message about it (what to write instead)."""
    out, hinted = list(messages), set()
    for i in reversed(range(len(out))):
        name = out[i].split(":", 1)[0]
        spec = properties.get(name)
        if name not in hinted and isinstance(spec, dict) and spec.get("description"):
            out[i] += f" (expected {spec['description']})"
        hinted.add(name)
    return out


def _field_rank(message: str, declared: list[str]) -> int:
    """Sort key: declared fields in schema order first, then the rest."""
    name = message.split(":", 1)[0]
    return declared.index(name) if name in declared else len(declared)


def _example_args(tool: Tool) -> str:
    props = tool.parameters.get("properties", {})
    return json.dumps({k: p.get("examples", ["..."])[0] for k, p in props.items()})


def check_arguments(tool: Tool, arguments: str | dict) -> tuple[dict | None, list[str]]:
    """Decode a call's ``arguments`` (a JSON string, as providers send it) and validate them.

    Returns ``(args, [])`` when valid, else ``(args_or_None, errors)``; a JSON syntax error
    is reported with its position (``arguments are not valid JSON: Expecting ',' ...``).
    Never raises.
    """
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError) as exc:
            at = getattr(exc, "pos", None)  # json.JSONDecodeError knows where it stopped
            if at is None:
                return None, [f"arguments are not valid JSON: {exc}"]
            return None, [f"arguments are not valid JSON: {exc.msg} at character {at} "
                          f"(after {arguments[max(0, at - 20):at]!r})"]
    errors = validate_call(tool, arguments)
    return (arguments if isinstance(arguments, dict) else None), errors


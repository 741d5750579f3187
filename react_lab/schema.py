"""The schema check: a call's arguments against the tool's JSON Schema, errors naming the field.

Native tool calling checks every call before it runs (:func:`react_lab.native.execute_call`);
the lab's step logs say whether each call's arguments were valid;
notebook 04 holds the same check up against the classic regex. ``jsonschema``'s Draft
2020-12 validator does the checking, with its ``FormatChecker`` (so ``format: date`` counts).

The argument rule, one for every tool and both protocols: before validation and before a
tool runs, each string argument loses its surrounding whitespace, and a control character
left inside (a line break, a tab, NUL, U+2028 ...) is refused, naming the field
(:func:`clean_arguments`, which :func:`react_lab.tools.call_tool` applies on the text path
too). So ``"INV-2041\\n"`` is checked and run as ``"INV-2041"``, and an id pattern such as
``^INV-[0-9]{4}$`` -- which JSON Schema applies with Python's ``re.search``, where ``$``
also matches before a final newline -- only ever sees a value with no line break in it:
it holds as if written ``\\A...\\Z``. A free-text argument must hold something to work on
(:data:`HAS_WORD`, :data:`HAS_NUMBER`). Every message the check returns names the field it
is about and fits on one line; a decoding error says what happened (cut off, markup, extra
text) and shows the arguments the tool expects.
"""

from __future__ import annotations

import copy
import json
import math
import re
from typing import Any

from ._parsing.messages import describe_errors
from .protocol import clip, shown

#: A :class:`react_lab.tools.Tool` (not imported: tools.py imports this module).
Tool = Any


# --------------------------------------------------------------------------- the argument rule

#: What a string argument may not hold once its surrounding whitespace is stripped:
#: control characters (C0, DEL, C1) and the Unicode line and paragraph separators.
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")

#: What a free-text argument must hold: a query of spaces or punctuation passes ``minLength``
#: but gives the tool nothing to work with, and an empty result would read as "no such
#: article". Each pattern is anchored and reads "non-letters, a letter or digit, then
#: anything", so it means the same to JSON Schema (which matches anywhere, ``re.search``) and
#: to a provider's grammar engine (which matches the whole value); it runs in linear time.
#: :data:`NEEDS` words each one for a refusal.
HAS_WORD = r"^[\W_]*[^\W_][\s\S]*$"  # a letter or digit, any script: what search() looks for
HAS_NUMBER = r"^[^0-9]*[0-9][\s\S]*$"  # calc computes nothing without a number
NEEDS = {
    HAS_WORD: "has no letter or digit, so there is nothing to search for",
    HAS_NUMBER: "has no number, so there is nothing to compute",
}


def clean_arguments(tool: Tool, args: list | dict) -> tuple[list | dict, list[str]]:
    """Apply the argument rule (module docstring) to ``args``; return ``(cleaned args, errors)``.

    Each string value loses its surrounding whitespace (``"INV-2041\\n"`` is ``"INV-2041"``:
    a model's trailing newline is not part of an id); a control character still inside
    (``"INV-20\\n41"``) is an error naming the field, and so is a list or an object where
    the schema declares one value (``{"invoice_id": ["INV-2041"]}``), so that no tool (or
    its database driver) sees it. A list (the text protocol's positional arguments) is
    matched to the schema's properties in order. Other values pass unchanged. Never
    raises for a list or a dict.
    """
    properties = tool.parameters.get("properties", {})
    names = list(properties)
    items = args.items() if isinstance(args, dict) else enumerate(args)
    cleaned, errors = {}, []
    for key, value in items:
        field = (
            key
            if isinstance(args, dict)
            else (names[key] if key < len(names) else f"argument {key + 1}")
        )
        declared = (
            properties.get(field, {}).get("type")
            if isinstance(properties.get(field), dict)
            else None
        )
        declared = {declared} if isinstance(declared, str) else set(declared or ())
        if (
            isinstance(value, (list, tuple, dict))
            and declared
            and not declared & {"array", "object"}
        ):
            kind = "an object" if isinstance(value, dict) else "a list"
            errors.append(
                f"{field}: {shown(value)} is {kind}; give one {'/'.join(sorted(declared))} value"
            )
        elif isinstance(value, str):
            value = value.strip()
            bad = CONTROL.search(value)
            if bad:
                errors.append(
                    f"{field}: {shown(value)} holds the control character {bad.group()!r}; "
                    "write the value on one line, without control characters"
                )
        cleaned[key] = value
    return (cleaned if isinstance(args, dict) else list(cleaned.values())), errors


# --------------------------------------------------------------------------- the schema check


def validate_call(tool: Tool, args: Any) -> list[str]:
    """Check ``args`` against ``tool.parameters``; return one message per error, [] if valid.

    The argument rule comes first (:func:`clean_arguments`). Each message starts with the
    field it is about (``since: 'July 1st' is not a 'date' ...``; a missing or undeclared
    argument is named too) and is one line. Uses ``jsonschema``'s Draft 2020-12 validator
    with its ``FormatChecker``, so ``format: date`` is enforced too; the messages are worded
    by :func:`react_lab._parsing.messages.describe_errors`. Never raises: anything
    unexpected becomes a message.
    """
    try:
        if not isinstance(args, dict):
            return [_not_an_object(tool, args)]
        args, own = clean_arguments(tool, args)
        errors = schema_validator(tool.parameters).iter_errors(args)
        messages = describe_errors(errors, args, own, tool.parameters, NEEDS)
        return [_one_line(m) for m in messages]
    except Exception as exc:  # noqa: BLE001 -- a checker must never take the loop down
        return [_one_line(f"could not validate the arguments ({type(exc).__name__}: {exc})")]


#: Validators built so far, by the schema's canonical JSON (a lab has a handful of schemas).
_VALIDATORS: dict[str, Any] = {}


def schema_validator(schema: dict):
    """The Draft 2020-12 validator, with its ``FormatChecker``, for ``schema``; built once each.

    The first call in a process imports ``jsonschema``, which takes about 1.3 s where
    Jupyter is installed (``jupyter-events`` pulls in ``rfc3987-syntax``, which builds a
    parser at import); :func:`react_lab.lab.notebook.warm_up` pays that before a learner's
    first step.
    """
    key = json.dumps(schema, sort_keys=True, default=repr)
    if key not in _VALIDATORS:
        import jsonschema  # slow to import, see above

        if len(_VALIDATORS) >= 256:  # generated schemas (tests, fuzzing) must not pile up
            _VALIDATORS.clear()
        _VALIDATORS[key] = jsonschema.Draft202012Validator(
            copy.deepcopy(schema), format_checker=jsonschema.FormatChecker()
        )
    return _VALIDATORS[key]


def example_args(tool: Tool) -> str:
    """The tool's arguments built from its schema's ``examples``, as JSON text.

    The shape the messages show.
    """
    props = tool.parameters.get("properties", {})
    return json.dumps({k: p.get("examples", ["..."])[0] for k, p in props.items()})


# --------------------------------------------------------------------------- decoding


def decode_arguments(arguments: Any) -> Any:
    """A call's ``arguments`` decoded from JSON text (as providers send them).

    The raw value when it is not JSON.

    The same decoding :func:`check_arguments` applies; for a guard or a log that needs the
    value whether or not it is valid. Never raises.
    """
    return _decode(arguments)[0]


def _no_constant(name: str) -> float:
    """Refuse ``NaN``/``Infinity``: Python's json reads them, JSON (RFC 8259) has no such values."""
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    """Read a JSON number with a fraction or exponent; refuse one too large for a float.

    ``1e400`` is refused.
    """
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is too large to be a number")
    return value


def _decode(arguments: Any) -> tuple[Any, Exception | None]:
    """``(decoded value, None)``; ``(arguments, the decoder's error)`` for text that is not JSON."""
    if not isinstance(arguments, str):
        return arguments, None
    try:
        return json.loads(arguments, parse_constant=_no_constant, parse_float=_finite), None
    except (ValueError, RecursionError) as exc:
        return arguments, exc


def check_arguments(tool: Tool, arguments: str | dict) -> tuple[dict | None, list[str]]:
    """Decode a call's ``arguments`` (a JSON string, as providers send it) and validate them.

    Returns ``(args, [])`` when valid, ``args`` cleaned by the argument rule (what the tool
    will receive); else ``(args_or_None, errors)``. Text that does not decode gets one
    message saying what happened (cut off, markup, extra text after the object, single
    quotes, a code fence) and showing the arguments the tool expects. Never raises.
    """
    decoded, exc = _decode(arguments)
    if exc is not None:
        return None, [_not_json(tool, arguments, exc)]
    errors = validate_call(tool, decoded)
    if not isinstance(decoded, dict):
        return None, errors
    return clean_arguments(tool, decoded)[0], errors


# ---------------------------------------------------------------- messages the model can act on


def _one_line(message: str) -> str:
    """``message`` on one line (each run of line breaks a space), at most 600 characters."""
    return clip(message, 600, one_line=True)


def _not_json(tool: Tool, text: str, exc: Exception) -> str:
    """Say what is wrong with an ``arguments`` string that does not decode, and show the expected object."""
    body, at = text.strip(), getattr(exc, "pos", None)  # json.JSONDecodeError knows where it stopped
    msg = getattr(exc, "msg", str(exc))
    if not body:
        what = "arguments are empty, not a JSON object"
    elif body.startswith("```"):
        what = "arguments are wrapped in a ``` code fence; send the JSON object alone"
    elif body.startswith("<"):
        what = f"arguments are XML-like markup ({shown(body.split(chr(10))[0], 40)}), not a JSON object"
    elif isinstance(exc, RecursionError):
        what = "arguments are nested too deeply to be a JSON object of arguments"
    elif msg == "Extra data" and at is not None:
        what = (f"arguments have extra text after the JSON object ({shown(text[at:at + 20], 30)} "
                f"at character {at}); send the object alone")
    elif msg.startswith("Unterminated string") or (at is not None and at >= len(text.rstrip())):
        what = "arguments are cut off: the JSON object is never closed"
    elif body.startswith("{'") or msg.startswith("Expecting property name enclosed in double quotes"):
        what = "arguments are not valid JSON: names and strings need double quotes"
    elif at is not None:
        what = f"arguments are not valid JSON: {_broke_at(text, at, msg)} (after {text[max(0, at - 20):at]!r})"
    else:
        what = f"arguments are not valid JSON: {msg}"
    return _one_line(f"{what}; {tool.name} expects one JSON object such as {example_args(tool)}")


#: What the decoder wanted where it stopped, in words (json's messages, by their first words).
_EXPECTED = {"Expecting ',' delimiter": "a ',' or the closing bracket was expected",
             "Expecting ':' delimiter": "a ':' after the key was expected",
             "Expecting value": "a value was expected (a string, a number, an object, an array, true, false or null)",
             "Invalid control character": "a string holds a raw control character; write it as an escape such as \\n",
             "Invalid \\escape": "a backslash starts no JSON escape; write \\\\ for a backslash"}
_CLOSER = {"[": "]", "{": "}"}


def _broke_at(text: str, at: int, msg: str) -> str:
    """Where a JSON text broke and what was expected there, in words: ``at character 16 ('}') ...``.

    A bracket closed by the other kind (``[`` ... ``}``) is named with where it opened.
    """
    ch = text[at] if at < len(text) else None
    opened = _open_bracket(text, at)
    if opened is not None and ch in ("]", "}") and ch != _CLOSER[opened[0]]:
        return (f"the {opened[0]!r} at character {opened[1]} is closed by {ch!r} at character {at}; "
                f"a ',' or {_CLOSER[opened[0]]!r} was expected there")
    expected = next((v for k, v in _EXPECTED.items() if msg.startswith(k)), msg)
    if expected.startswith("a ',' or the closing") and opened is not None:
        expected = f"a ',' or {_CLOSER[opened[0]]!r} (closing the {opened[0]!r} at character {opened[1]}) was expected"
    return f"at character {at} ({shown(ch) if ch is not None else 'the end'}) {expected}"


def _open_bracket(text: str, at: int) -> tuple[str, int] | None:
    """The innermost ``[`` or ``{`` still open before ``text[at]`` (strings skipped), and where; None if none."""
    stack, quoted, escaped = [], False, False
    for i, ch in enumerate(text[:at]):
        if quoted:
            escaped, quoted = (False, True) if escaped else (ch == "\\", ch != '"')
        elif ch == '"':
            quoted = True
        elif ch in "[{":
            stack.append((ch, i))
        elif ch in "]}" and stack:
            stack.pop()
    return stack[-1] if stack else None


#: JSON's name for each kind of value a decoder returns: what the model wrote, in its words.
_JSON_KINDS = ((type(None), "null"), (list, "an array"), (str, "a string"), ((int, float), "a number"))


def _not_an_object(tool: Tool, args: Any) -> str:
    """The message for arguments that decode to something other than an object: named as JSON names it."""
    example = example_args(tool)
    if isinstance(args, str) and args.strip().startswith("{"):
        return _one_line(f"arguments are a JSON string holding an object (encoded twice); send the "
                         f"object itself, such as {example}")
    kind = json.dumps(args) if isinstance(args, bool) else next(
        (name for types, name in _JSON_KINDS if isinstance(args, types)), None)
    if kind is None:  # not a value JSON has (a Python object handed over directly)
        return _one_line(f"arguments must be a JSON object like {example}, not {shown(args, 40)}")
    value = "" if kind in ("null", "true", "false") else f" ({clip(json.dumps(args, ensure_ascii=False), 60)})"
    return _one_line(f"arguments must be a JSON object like {example}, not {kind}{value}")

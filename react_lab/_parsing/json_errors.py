"""A call's arguments read as JSON, and what is wrong when they are not a JSON object.

:func:`decode_json` reads an ``arguments`` string as strict JSON (RFC 8259: no ``NaN``, no
``Infinity``, no number too large for a float). :func:`react_lab.schema.check_arguments`
decodes a call's ``arguments`` string with it and
:func:`react_lab.schema.validate_call` wants an object; when either fails, :func:`not_json`
says what happened (cut off, markup, a code fence, extra text, single quotes, where the text
broke and what was expected there) and :func:`not_an_object` names what came instead (null, an
array, a string, a number, true or false). Each message ends with the object the tool expects;
the schema check puts it on one line.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ..protocol import clip, shown


def _no_constant(name: str) -> float:
    """Refuse ``NaN``/``Infinity``: Python's json reads them, JSON (RFC 8259) has no such values."""
    raise ValueError(f"{name} is not a JSON number")


class DuplicateKey(ValueError):
    """An object that gives one key twice: which of its values was meant is a guess."""

    def __init__(self, key: str):
        super().__init__(f"the key {key!r} is given twice")
        self.key = key


def unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    """An object's ``pairs`` as a dict; :class:`DuplicateKey` when a key comes twice.

    Python's json keeps the last value of a repeated key without a word (RFC 8259 leaves it
    open); a call whose ``invoice_id`` is given twice must not run on one of them.
    """
    obj: dict = {}
    for key, value in pairs:
        if key in obj:
            raise DuplicateKey(key)
        obj[key] = value
    return obj


def finite_number(text: str) -> float:
    """Read a JSON number with a fraction or exponent; refuse one too large for a float.

    ``1e400`` is refused.
    """
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is too large to be a number")
    return value


def decode_json(arguments: Any) -> tuple[Any, Exception | None]:
    """``(decoded value, None)``; ``(arguments, the decoder's error)`` for text that is not JSON.

    Strict JSON (RFC 8259): ``NaN``, ``Infinity``, a number too large for a float and a key
    given twice in one object are errors. A value that is not a string is returned as it
    is. Never raises.
    """
    if not isinstance(arguments, str):
        return arguments, None
    try:
        decoded = json.loads(
            arguments,
            parse_constant=_no_constant,
            parse_float=finite_number,
            object_pairs_hook=unique_keys,
        )
        return decoded, None
    except (ValueError, RecursionError) as exc:
        return arguments, exc


def not_json(name: str, text: str, exc: Exception, example: str) -> str:
    """Say what is wrong with an ``arguments`` string that does not decode, and show ``example``.

    ``name`` is the tool's; ``exc`` the decoder's error (a ``json.JSONDecodeError`` knows where
    the text broke).
    """
    body, msg = text.strip(), getattr(exc, "msg", str(exc))
    at = getattr(exc, "pos", None)  # json.JSONDecodeError knows where it stopped
    if not body:
        what = "arguments are empty, not a JSON object"
    elif body.startswith("```"):
        what = "arguments are wrapped in a ``` code fence; send the JSON object alone"
    elif body.startswith("<"):
        first_line = shown(body.split(chr(10))[0], 40)
        what = f"arguments are XML-like markup ({first_line}), not a JSON object"
    elif isinstance(exc, DuplicateKey):
        what = f"arguments give the key {shown(exc.key, 40)} twice; send each argument once"
    elif isinstance(exc, RecursionError):
        what = "arguments are nested too deeply to be a JSON object of arguments"
    elif body[0] not in '{["-0123456789' and not body.startswith(("true", "false", "null")):
        what = f"arguments are text ({shown(body, 40)}), not a JSON object"
    elif msg == "Extra data" and at is not None and body[0] not in "{[":
        what = f"arguments are text ({shown(body, 40)}), not a JSON object: only its start is JSON"
    elif msg == "Extra data" and at is not None:
        what = (
            f"arguments have extra text after the JSON object ({shown(text[at : at + 20], 30)} "
            f"at character {at}); send the object alone"
        )
    elif msg.startswith("Unterminated string") or (at is not None and at >= len(text.rstrip())):
        what = "arguments are cut off: the JSON object is never closed"
    elif body.startswith("{'") or msg.startswith(
        "Expecting property name enclosed in double quotes"
    ):
        what = "arguments are not valid JSON: names and strings need double quotes"
    elif at is not None:
        before = text[max(0, at - 20) : at]
        what = f"arguments are not valid JSON: {_broke_at(text, at, msg)} (after {before!r})"
    else:
        what = f"arguments are not valid JSON: {msg}"
    return f"{what}; {name} expects one JSON object such as {example}"


#: What the decoder wanted where it stopped, in words (json's messages, by their first words).
_EXPECTED = {
    "Expecting ',' delimiter": "a ',' or the closing bracket was expected",
    "Expecting ':' delimiter": "a ':' after the key was expected",
    "Expecting value": (
        "a value was expected (a string, a number, an object, an array, true, false or null)"
    ),
    "Invalid control character": (
        "a string holds a raw control character; write it as an escape such as \\n"
    ),
    "Invalid \\escape": "a backslash starts no JSON escape; write \\\\ for a backslash",
}
_CLOSER = {"[": "]", "{": "}"}


def _broke_at(text: str, at: int, msg: str) -> str:
    """Where a JSON text broke and what was expected there, in words: ``at character 16 ('}') ...``.

    A bracket closed by the other kind (``[`` ... ``}``) is named with where it opened.
    """
    ch = text[at] if at < len(text) else None
    opened = _open_bracket(text, at)
    if opened is not None and ch in ("]", "}") and ch != _CLOSER[opened[0]]:
        return (
            f"the {opened[0]!r} at character {opened[1]} is closed by {ch!r} at character {at}; "
            f"a ',' or {_CLOSER[opened[0]]!r} was expected there"
        )
    expected = next((v for k, v in _EXPECTED.items() if msg.startswith(k)), msg)
    if expected.startswith("a ',' or the closing") and opened is not None:
        bracket, where = opened
        expected = (
            f"a ',' or {_CLOSER[bracket]!r} (closing the {bracket!r} at character {where}) "
            "was expected"
        )
    return f"at character {at} ({shown(ch) if ch is not None else 'the end'}) {expected}"


def _open_bracket(text: str, at: int) -> tuple[str, int] | None:
    """The innermost ``[`` or ``{`` still open before ``text[at]``, and where; None if none.

    Brackets inside strings do not count.
    """
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


#: JSON's name for each kind of value a decoder returns: what the model wrote, in its words
#: (null, true and false are their own names).
_JSON_KINDS = (
    (list, "an array"),
    (str, "a string"),
    ((int, float), "a number"),
)


def not_an_object(args: Any, example: str) -> str:
    """The message for arguments that decode to something other than an object, in JSON's names.

    ``example`` is the object the tool expects, as JSON text.
    """
    if isinstance(args, str) and args.strip().startswith("{"):
        return (
            f"arguments are a JSON string holding an object (encoded twice); send the "
            f"object itself, such as {example}"
        )
    if args is None or isinstance(args, bool):
        return f"arguments must be a JSON object like {example}, not {json.dumps(args)}"
    kind = next((name for types, name in _JSON_KINDS if isinstance(args, types)), None)
    if kind is None:  # not a value JSON has (a Python object handed over directly)
        return f"arguments must be a JSON object like {example}, not {shown(args, 40)}"
    value = clip(json.dumps(args, ensure_ascii=False), 60)
    return f"arguments must be a JSON object like {example}, not {kind} ({value})"

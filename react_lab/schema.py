"""The schema check: a call's arguments against the tool's JSON Schema, errors naming the field.

Native tool calling checks every call before it runs
(:func:`react_lab.lab.agent.native.execute_call`); the lab's step logs say whether each call's
arguments were valid; notebook 04 holds the same check up against the classic regex.
``jsonschema``'s Draft 2020-12 validator does the checking, with its ``FormatChecker`` (so ``format:
date`` counts).

The argument rule, one for every tool and both protocols: before validation and before a
tool runs, each string argument loses its surrounding whitespace, and a control character
left inside (a line break, a tab, NUL, U+2028 ...) is refused, naming the field
(:func:`clean_arguments`, which :func:`react_lab.tools.call_tool` applies on the text path
too). So ``"INV-2041\\n"`` is checked and run as ``"INV-2041"``, and an id pattern such as
``^INV-[0-9]{4}$`` -- which JSON Schema applies with Python's ``re.search``, where ``$``
also matches before a final newline -- only ever sees a value with no line break in it:
it holds as if written ``\\A...\\Z``. A value (nested ones too) holding a lone surrogate
(``"\\ud800"``) or an HTML entity (``&amp;``) is refused, naming the field: neither is what
a model means, and neither is ever changed into something else. A free-text argument must
hold something to work on (:data:`HAS_WORD`, :data:`HAS_NUMBER`). Every message the check
returns names the field it is about and fits on one line; a decoding error says what
happened (cut off, markup, extra text) and shows the arguments the tool expects.

The tools' schemas (:mod:`react_lab.billing`) are built here: :func:`object_schema` and the
id fields they share (:data:`CUSTOMER_ID`, :data:`INVOICE_ID`, :data:`CHARGE_ID`).
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from ._parsing.json_errors import decode_json, not_an_object, not_json
from ._parsing.messages import describe_errors, unmeant
from .protocol import clip, shown, unquoted

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


def named_arguments(args: list | dict, names: list[str]) -> tuple[list | dict, str | None]:
    """Positional arguments of which some name a parameter, ``["cus_8812",
    "since=2026-01-01"]`` or all (``["customer_id=cus_8812", "since=2026-01-01"]``), as the
    keywords they are: the values before the first named one fill the parameters in order,
    then each ``name=value`` its own (quotes around a value dropped). Without this the tool
    would get ``"since=2026-01-01"`` as a date, and quietly find nothing. Arguments that name
    no parameter are returned as they are. Returns ``(arguments, what is wrong or None)``: a
    parameter given twice, or a value after a named one.
    """
    if isinstance(args, dict) or not args or not all(isinstance(a, str) for a in args):
        return args, None
    pairs = [[part.strip() for part in a.split("=", 1)] for a in args]
    named = [len(pair) == 2 and pair[0] in names for pair in pairs]
    if not any(named):
        return args, None
    first = named.index(True)
    if not all(named[first:]):
        late = args[named.index(False, first)]
        return args, f"{shown(late)} comes after a named argument; name it too, or put it first"
    keywords = dict(zip(names, args[:first]))
    for key, value in pairs[first:]:
        if key in keywords:
            return args, f"{key} is given twice, so which value is meant is a guess; give it once"
        keywords[key] = unquoted(value)
    return keywords, None


def clean_arguments(tool: Tool, args: list | dict) -> tuple[list | dict, list[str]]:
    """Apply the argument rule (module docstring) to ``args``; return ``(cleaned args, errors)``.

    Each string value loses its surrounding whitespace (``"INV-2041\\n"`` is ``"INV-2041"``:
    a model's trailing newline is not part of an id); a control character still inside
    (``"INV-20\\n41"``) is an error naming the field, and so is a list or an object where
    the schema declares one value (``{"invoice_id": ["INV-2041"]}``), so that no tool (or
    its database driver) sees it. A list (the text protocol's positional arguments) is
    matched to the schema's properties in order, unless its items name them
    (:func:`named_arguments`). Other values pass unchanged. Never raises for a list or a dict.
    """
    properties = tool.parameters.get("properties", {})
    names = list(properties)
    args, wrong = named_arguments(args, names)  # ["since=2026-01-01"]: a keyword, not a value
    if wrong is not None:
        return args, [wrong]
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
        errors += unmeant(field, value)  # a lone surrogate, an entity: refused, never changed
        cleaned[key] = value
    return (cleaned if isinstance(args, dict) else list(cleaned.values())), errors


# --------------------------------------------------------------------------- the tools' schemas


def object_schema(**properties: dict) -> dict:
    """Return an object schema requiring exactly these properties, in this order."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


CUSTOMER_ID = {
    "type": "string",
    "pattern": r"^cus_[0-9]{4}$",
    "description": "customer id, e.g. cus_8812",
    "examples": ["cus_0000"],
}
INVOICE_ID = {
    "type": "string",
    "pattern": r"^INV-[0-9]{4}$",
    "description": "invoice id, e.g. INV-2041",
    "examples": ["INV-0000"],
}
CHARGE_ID = {
    "type": "string",
    "pattern": r"^ch_[A-Za-z0-9]+$",
    "description": "card charge id, e.g. ch_1KZq8f",
    "examples": ["ch_0000"],
}


# --------------------------------------------------------------------------- the schema check


def validate_call(tool: Tool, args: Any) -> list[str]:
    """Check ``args`` against ``tool.parameters``; return one message per error, [] if valid.

    The argument rule comes first (:func:`clean_arguments`). Each message starts with the
    field it is about (``since: 'July 1st' is not a 'date' ...``; a missing or undeclared
    argument is named too) and is one line. Uses ``jsonschema``'s Draft 2020-12 validator
    with its ``FormatChecker``, so ``format: date`` is enforced too; the messages are worded
    by :func:`react_lab._parsing.messages.describe_errors`, and each is cut to 600 characters.
    Never raises: anything unexpected becomes a message.
    """
    try:
        if not isinstance(args, dict):
            messages = [not_an_object(args, example_args(tool))]
        else:
            args, own = clean_arguments(tool, args)
            errors = schema_validator(tool.parameters).iter_errors(args)
            messages = describe_errors(errors, args, own, tool.parameters, NEEDS)
    except Exception as exc:  # noqa: BLE001 -- a checker must never take the loop down
        messages = [f"could not validate the arguments ({type(exc).__name__}: {exc})"]
    return [clip(m, 600, one_line=True) for m in messages]


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

    The same decoding :func:`check_arguments` applies (strict JSON:
    :func:`react_lab._parsing.json_errors.decode_json`); for a guard or a log that needs the
    value whether or not it is valid. Never raises.
    """
    return decode_json(arguments)[0]


def check_arguments(tool: Tool, arguments: str | dict) -> tuple[dict | None, list[str]]:
    """Decode a call's ``arguments`` (a JSON string, as providers send it) and validate them.

    Returns ``(args, [])`` when valid, ``args`` cleaned by the argument rule (what the tool
    will receive); else ``(args_or_None, errors)``. Text that does not decode gets one
    message saying what happened (cut off, markup, extra text after the object, single
    quotes, a code fence) and showing the arguments the tool expects. Never raises.
    """
    decoded, exc = decode_json(arguments)
    if exc is not None:
        message = not_json(tool.name, arguments, exc, example_args(tool))
        return None, [clip(message, 600, one_line=True)]
    errors = validate_call(tool, decoded)
    if not isinstance(decoded, dict):
        return None, errors
    return clean_arguments(tool, decoded)[0], errors

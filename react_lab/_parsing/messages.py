"""The argument check's messages: what is wrong with a call's arguments, said so a model can act.

:func:`react_lab.schema.validate_call` runs the JSON Schema check and calls
:func:`describe_errors`, which words what it found: one message per problem, each
starting with the field it is about, in the schema's field order, with the field's
description appended to the last message about it (what to write instead). Call markup of
another model's format leaked into a value, and the argument rule's own refusals, come
first; jsonschema's messages about a field they already name are dropped; the errors a
model makes most are said more plainly than jsonschema says them.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any, Iterable

from ..protocol import clip, shown


def describe_errors(
    errors: Iterable, args: dict, own: list[str], schema: dict, needs: dict[str, str]
) -> list[str]:
    """The messages for ``args``: ``own`` (the argument rule's), then jsonschema's ``errors``.

    ``schema`` is the tool's JSON Schema; ``needs`` words the free-text patterns
    (:data:`react_lab.schema.NEEDS`). Messages may still hold line breaks.
    """
    own = _after_own(_leaked_markup(args), own)  # leaked markup explains a line break too
    declared = list(schema.get("properties", {}))
    messages = []
    for error in errors:
        messages += _describe(error, declared, needs)
    messages = _after_own(own, messages)
    messages = sorted(set(messages), key=lambda m: (_field_rank(m, declared), m))
    return _with_hints(messages, schema.get("properties", {}))


#: An HTML or XML character reference: ``&amp;``, ``&quot;``, ``&#39;``, ``&#x27;``, ``&lt;``.
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
#: A UTF-16 surrogate: alone in a string (JSON's ``"\\ud800"``) it is no character.
_SURROGATE = re.compile("[\ud800-\udfff]")


def unmeant(field: str, value: Any, depth: int = 0) -> list[str]:
    """What no model means in an argument's value, nested ones too: one message each.

    A lone surrogate (JSON's ``"\\ud800"`` decodes to one) is no character: the value
    cannot be encoded as UTF-8, so a tool, a log or a database would fail on it later. An
    HTML or XML entity (``&amp;``, ``&quot;``, ``&#39;``) is a character escaped for markup,
    which JSON arguments never are: the tool would get ``&amp;&amp;`` for ``&&``. Formats
    whose values are XML-escaped decode theirs before this check
    (:attr:`react_lab._parsing.formats.Format.entities`). Each message names the field and
    fits on one line.
    """
    if isinstance(value, dict) and depth < 32:
        return [m for k, v in value.items() for m in unmeant(f"{field}/{k}", v, depth + 1)]
    if isinstance(value, list) and depth < 32:
        return [m for i, v in enumerate(value) for m in unmeant(f"{field}/{i}", v, depth + 1)]
    if not isinstance(value, str):
        return []
    lone = _SURROGATE.search(value)
    if lone is not None:
        return [
            f"{field}: holds the lone surrogate {lone.group()!r}, which is no character and "
            "cannot be encoded as UTF-8; write the character itself, or leave it out"
        ]
    entity = next(
        (e for e in _ENTITY.finditer(value) if html.unescape(e.group()) != e.group()), None
    )
    if entity is None:
        return []
    meant = html.unescape(value)
    return [
        f"{field}: {shown(value, 60)} holds the HTML entity {entity.group()!r} (for "
        f"{html.unescape(entity.group())!r}); arguments are never entity-escaped: write "
        f"{shown(meant, 60)}"
    ]


#: Call markup of other models' formats, leaked into a value (a tag, or a special token).
_MARKUP = re.compile(
    r"</?(?:arg_key|arg_value|parameter|function|tool_call|invoke)\b[^>]{0,40}>"
    r"|<\|[a-z_]{1,30}\|>",
    re.IGNORECASE,
)


def _describe(error, declared: list[str], needs: dict[str, str]) -> list[str]:
    """Turn one jsonschema error into messages that start with a field name."""
    if error.validator == "required" and not error.path:
        missing = [p for p in error.validator_value if p not in error.instance]
        return [f"{name}: required argument is missing" for name in missing]
    if error.validator == "additionalProperties" and not error.path:
        extra = [k for k in error.instance if k not in declared]
        return [_undeclared(k, error.instance[k], declared) for k in extra]
    if (
        error.validator == "minLength"
        and error.instance == ""
        and isinstance(error.schema, dict)
        and error.schema.get("pattern") in needs
    ):
        return []  # the pattern's message says it better: "'' has no letter or digit ..."
    where = "/".join(str(p) for p in error.absolute_path) or "arguments"
    better = _plainer(error, where, needs)
    return [better] if better is not None else [f"{where}: {clip(error.message, 200)}"]


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


def _leaked_markup(args: dict) -> list[str]:
    """One message per value holding another model format's call markup (``</arg_value>``)."""
    out = []
    for key, value in args.items():
        tag = _MARKUP.search(value) if isinstance(value, str) else None
        if tag:
            out.append(
                f"{key}: {shown(value, 90)} holds call markup ({tag.group()!r}): another "
                "argument leaked into this value; send each argument under its own key"
            )
    return out


def _after_own(own: list[str], messages: list[str]) -> list[str]:
    """``own`` messages, then ``messages`` -- except those about a field ``own`` already names."""
    named = {m.split(":", 1)[0] for m in own}
    return own + [m for m in messages if m.split(":", 1)[0] not in named]


def _undeclared(key: str, value: Any, declared: list[str]) -> str:
    """The message for an undeclared argument; a wrapper around the real ones is named as such.

    A name that is empty, blank at either end or holds a control character is shown quoted
    with its escapes (``'\\r'``), so two such names never read the same on one line."""
    plain = isinstance(key, str) and key and key.strip() == key and key.isprintable()
    name = key if plain else repr(key)
    if isinstance(value, dict) and set(value) & set(declared):
        inner = json.dumps({k: v for k, v in value.items() if k in declared}, ensure_ascii=False)
        return (
            f"{name}: not a declared argument; the arguments are wrapped in {key!r}: send them "
            f"at the top level, such as {clip(inner, 120)}"
        )
    return f"{name}: not a declared argument (declared: {', '.join(declared)})"


def _plainer(error, where: str, needs: dict[str, str]) -> str | None:
    """A plainer message than jsonschema's for the errors a model makes most; None keeps its own."""
    value = error.instance
    if (
        error.validator == "type"
        and isinstance(value, str)
        and error.validator_value in ("number", "integer")
    ):
        try:
            float(value)
        except ValueError:
            return None
        return (
            f"{where}: {shown(value)} is a string, not a number; "
            f"write it without quotes: {clip(value.strip(), 30)}"
        )
    if error.validator == "pattern" and error.validator_value in needs:
        return f"{where}: {shown(value)} {needs[error.validator_value]}"
    return None

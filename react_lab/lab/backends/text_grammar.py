"""The text-protocol reply grammar.

Constrained decoding of the ``Action:`` line, built from the tool schemas.
:mod:`react_lab.lab.backends.grammar` constrains a *native* reply (one JSON object). This
module does the same for the text protocol of notebooks 01-03: the loop's prompt ends with
``Thought:``, so a completion is ``<thought>\\nAction: tool[args]`` or
``<thought>\\nAnswer: ...``. :func:`protocol_grammar` writes a GBNF grammar (llama.cpp's
grammar format, passed as ``create_completion(grammar=...)``) over that completion:

* the tool name is one of the declared tools, and each argument follows its JSON
  Schema property -- an id its ``pattern`` (``^INV-[0-9]{4}$``), a date an ISO date,
  anything else one line of free text without ``]``;
* with ``context`` (the live question and the observations so far,
  :func:`grounding_context`) an id argument may only be an id *written there*: the model
  cannot call ``find_invoice`` on an id it made up or copied from the exemplar ("grounded"
  ids);
* the thought is free (``thought="free"``: one line, the ladder's rung 1), empty
  (``"none"``), or a fixed template (``"short"``: "I call find_invoice." / "I know the
  answer.") -- the two controls ask whether constraining the *reasoning* costs
  accuracy, the "format tax" of Tam et al., 2024, "Let Me Speak Freely? A Study on the
  Impact of Format Restrictions on Performance of Large Language Models" (arXiv:2408.02442).

Nothing here runs the model; :class:`react_lab.lab.experiments.ladder.GrammarModel` passes
the grammar to llama.cpp, which masks every token that would leave it.
"""

from __future__ import annotations

import re
from typing import Iterable

__all__ = [
    "regex_to_gbnf",
    "schema_rule",
    "grounded_values",
    "call_rules",
    "protocol_grammar",
    "answer_only_grammar",
    "grounding_context",
    "ISO_DATE",
    "THOUGHT_MODES",
]

#: The thought modes of :func:`protocol_grammar`.
THOUGHT_MODES = ("free", "none", "short")

#: A calendar date YYYY-MM-DD (month 01-12, day 01-31), as GBNF.
ISO_DATE = '[0-9]{4} "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | [12] [0-9] | "3" [01])'

#: One line of free text after ``Answer: `` (at most 160 characters).
FREE_ANSWER = "[^\\n]{1,160}"

_SHORTHAND = {r"\d": "[0-9]", r"\w": "[A-Za-z0-9_]"}
_ID_PREFIX = re.compile(r"\^([A-Za-z]+[_-])")


def _lit(text: str) -> str:
    """``text`` as a GBNF string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def regex_to_gbnf(pattern: str) -> str:
    """Translate an anchored id pattern such as ``^INV-[0-9]{4}$`` to a GBNF expression.

    Understands literals, character classes ``[...]``, ``\\d``, ``\\w`` and the
    quantifiers ``{n}``, ``{m,n}``, ``+``, ``*``, ``?`` -- what the tools' id and date
    patterns use. Raises ``ValueError`` on groups, alternation or ``.``.
    """
    body = pattern.removeprefix("^").removesuffix("$")
    items: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch in "()|.":
            raise ValueError(f"only literals, classes and quantifiers are supported: {pattern!r}")
        if ch == "[":
            end = body.index("]", i + 1)
            items.append(body[i : end + 1])
            i = end + 1
        elif ch == "\\":
            items.append(_SHORTHAND.get(body[i : i + 2]) or _lit(body[i + 1]))
            i += 2
        elif ch == "{":
            end = body.index("}", i)
            items[-1] += body[i : end + 1]  # GBNF has {n} and {m,n} too
            i = end + 1
        elif ch in "+*?":
            items[-1] += ch
            i += 1
        else:
            if items and re.fullmatch(r'"[^"\\]*"', items[-1]):
                items[-1] = items[-1][:-1] + _lit(ch)[1:]  # "I" "N" "V" -> "INV"
            else:
                items.append(_lit(ch))
            i += 1
    return " ".join(items)


def _id_prefix(prop: dict) -> str | None:
    """The literal prefix of an id-typed property's pattern, or None.

    Such as ``cus_``, ``INV-``, ``ch_``.
    """
    m = _ID_PREFIX.match(prop.get("pattern", ""))
    return m.group(1) if m and prop.get("type") == "string" else None


def grounded_values(prop: dict, context: str) -> list[str] | None:
    """Return the ids matching an id-typed property's pattern written in ``context``, in order.

    None when the property is not an id (no literal prefix in its pattern).
    """
    if _id_prefix(prop) is None:
        return None
    regex = re.compile(prop["pattern"].removeprefix("^").removesuffix("$"))
    found: list[str] = []
    for m in re.finditer(r"[A-Za-z]+[_-][A-Za-z0-9]+", context):
        if regex.fullmatch(m.group()) and m.group() not in found:
            found.append(m.group())
    return found


def schema_rule(prop: dict, context: str | None = None) -> str | None:
    """Return a GBNF expression for one argument, from its JSON Schema property.

    A ``format: date`` is an ISO date; an id pattern is translated (:func:`regex_to_gbnf`);
    a number is digits with at most two decimals; any other string is 1..maxLength
    (at most 120) characters without ``]`` or a newline. With ``context``, an id
    argument is one of the ids written there, and None when there is none.
    """
    if context is not None:
        values = grounded_values(prop, context)
        if values is not None:
            return " | ".join(_lit(v) for v in values) if values else None
    if prop.get("format") == "date":
        return ISO_DATE
    if _id_prefix(prop) is not None:
        return regex_to_gbnf(prop["pattern"])
    if prop.get("type") in ("number", "integer"):
        return '[0-9]{1,9} ("." [0-9]{1,2})?'
    low, high = max(prop.get("minLength", 1), 1), min(prop.get("maxLength", 120), 120)
    return f"[^\\]\\n]{{{low},{high}}}"


def _rule_name(name: str) -> str:
    return name.replace("_", "-")  # GBNF rule names: letters, digits, dashes


def call_rules(tools: Iterable, context: str | None = None) -> tuple[list[str], list[str]]:
    """Return (the call alternatives, the rules behind them) for calls ``tool[a, b]``.

    ``tools`` are :class:`react_lab.tools.Tool` (their ``parameters`` schemas, properties
    in call order). With ``context``, a tool whose required id argument has no value
    written there is left out: it cannot be called yet.
    """
    rules, alternatives = [], []
    for tool in tools:
        props = tool.parameters["properties"]
        required = set(tool.parameters.get("required", props))
        exprs = {name: schema_rule(prop, context) for name, prop in props.items()}
        if any(exprs[name] is None for name in required):
            continue
        body = []
        for position, name in enumerate(props):
            if exprs[name] is None:
                continue
            rule = f"a-{_rule_name(tool.name)}-{_rule_name(name)}"
            rules.append(f"{rule} ::= {exprs[name]}")
            part = rule if position == 0 else f'", " {rule}'
            body.append(part if name in required else f"({part})?")
        call = f"c-{_rule_name(tool.name)}"
        rules.append(f'{call} ::= {_lit(tool.name + "[")} {" ".join(body)} "]"')
        alternatives.append(call)
    return alternatives, rules


def protocol_grammar(
    tools: Iterable,
    *,
    thought: str = "free",
    context: str | None = None,
    answer: str | None = None,
    thought_chars: int = 200,
) -> str:
    """Return the GBNF grammar of one text-protocol completion (after the prompt's ``Thought:``).

    ``thought``: one of :data:`THOUGHT_MODES` (see the module docstring; at most
    ``thought_chars`` characters when free). ``context`` grounds id arguments
    (:func:`schema_rule`). ``answer`` is a GBNF expression for the text after
    ``Answer: `` (default: one line of at most 160 characters). When no tool can be
    called the grammar allows only an answer. Raises ``ValueError`` for an unknown mode.
    """
    tools = list(tools)
    alternatives, rules = call_rules(tools, context)
    step = ['"Answer: " ans']
    if alternatives:
        step.insert(0, '"Action: " call')
        rules.insert(0, "call ::= " + " | ".join(alternatives))
    if thought == "free":
        head = f'" "? [^\\n]{{1,{thought_chars}}} "\\n"'
    elif thought == "none":
        head = '"\\n"'
    elif thought == "short":
        head = '" I " ("call " tname "." | "know the answer.") "\\n"'
        rules.append("tname ::= " + " | ".join(_lit(t.name) for t in tools))
    else:
        raise ValueError(f"unknown thought mode {thought!r}; use one of {', '.join(THOUGHT_MODES)}")
    return (
        "\n".join(
            [
                f"root ::= {head} step",
                "step ::= " + " | ".join(step),
                f"ans ::= {answer or FREE_ANSWER}",
                *rules,
            ]
        )
        + "\n"
    )


def answer_only_grammar(answer: str | None = None) -> str:
    """Return the grammar of the loop's best-effort step.

    Its prompt already ends in ``Answer:``.
    """
    return 'root ::= " "? ' + (answer or FREE_ANSWER) + "\n"


def grounding_context(prompt: str) -> str:
    """Return the text a grounded id argument may come from: the live question and its observations.

    That is the last ``Question:`` line of ``prompt`` and the ``Observation:`` lines
    after it -- not the exemplars above the question, not the model's own thoughts, and
    not the loop's error observations (they echo the model's arguments back).
    """
    live = prompt[prompt.rfind("\nQuestion: ") + 1 :]
    lines = live.splitlines()
    kept = lines[:1] + [
        line
        for line in lines[1:]
        if line.startswith("Observation: ") and not line.startswith("Observation: Error")
    ]
    return "\n".join(kept)

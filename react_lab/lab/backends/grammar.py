"""The reply grammar: constrained decoding of native tool calls on the embedded model.

A hosted provider serialises a tool call for you. Here llama.cpp does it:
:func:`reply_schema` is the JSON Schema of one whole reply (a thought, then tool calls
whose names and arguments follow the tools' schemas, or an answer), :func:`reply_grammar`
turns it into a GBNF grammar, and during generation the grammar masks every token that
would leave it, so the model cannot *write* a call outside the schema.
:func:`grammar_check` runs llama.cpp's own grammar sampler over a given text and names
the first character it refuses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence

from ...schema import NEEDS
from .decode import GrammarSampler
from .local import local_model

#: Longest thought and answer a local reply may write, in characters: a small model
#: otherwise loops inside one string ("a refund of a refund of ...") until max_tokens.
MAX_THOUGHT, MAX_ANSWER = 160, 400


#: The ``tool_choice`` strings (the OpenAI parameter's); a dict names one tool.
TOOL_CHOICES = ("auto", "required", "none")


def check_tool_choice(tool_choice: str | dict, tools: Sequence[dict]) -> str | None:
    """Check an OpenAI ``tool_choice`` against the offered tool schemas; the tool it forces.

    ``"auto"`` (call or answer), ``"required"`` (a call), ``"none"`` (an answer) give None;
    ``{"type": "function", "function": {"name": NAME}}`` gives ``NAME`` (a call to that
    tool). Raises ValueError for anything else, for a name no offered tool has, and for
    ``"required"`` or a named tool with no tools offered (the OpenAI API refuses those too).
    """
    if tool_choice in TOOL_CHOICES:
        if tool_choice == "required" and not tools:
            raise ValueError('tool_choice "required" needs at least one tool')
        return None
    name = tool_choice.get("function", {}).get("name") if isinstance(tool_choice, dict) else None
    if not isinstance(name, str) or tool_choice.get("type") != "function":
        raise ValueError(
            'tool_choice must be "auto", "required", "none" or {"type": "function", '
            f'"function": {{"name": "<a tool>"}}}}, not {tool_choice!r:.80}'
        )
    names = [t["function"]["name"] for t in tools]
    if name not in names:
        raise ValueError(
            f"tool_choice names {name!r}, which is not among the tools offered: "
            f"{', '.join(names) or 'none'}"
        )
    return name


def reply_schema(
    tools: Sequence[dict], *, max_calls: int = 1, tool_choice: str | dict = "auto"
) -> dict:
    """Return the JSON Schema of one whole reply, given OpenAI tool schemas.

    ``{"thought": str, "tool_calls": [{"name": <a tool's name>, "arguments": <its
    parameters>}, ...]}`` (1..``max_calls`` calls) or ``{"thought": str, "answer": str}``.
    The thought comes first so the model reasons before it commits to a call.
    ``tool_choice`` follows the OpenAI parameter: ``"auto"`` (either form), ``"required"``
    (a call), ``"none"`` (an answer) or ``{"type": "function", "function": {"name": NAME}}``
    (calls to that tool only). Raises ValueError for anything else
    (:func:`check_tool_choice`).
    """
    forced = check_tool_choice(tool_choice, tools)
    calls = [
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["name", "arguments"],
            "properties": {
                "name": {"const": t["function"]["name"]},
                "arguments": t["function"]["parameters"],
            },
        }
        for t in tools
        if forced in (None, t["function"]["name"])
    ]
    thought = {"type": "string", "maxLength": MAX_THOUGHT}
    call_reply = {
        "type": "object",
        "additionalProperties": False,
        "required": ["thought", "tool_calls"],
        "properties": {
            "thought": thought,
            "tool_calls": {
                "type": "array",
                "items": {"anyOf": calls},
                "minItems": 1,
                "maxItems": max_calls,
            },
        },
    }
    answer_reply = {
        "type": "object",
        "additionalProperties": False,
        "required": ["thought", "answer"],
        "properties": {"thought": thought, "answer": {"type": "string", "maxLength": MAX_ANSWER}},
    }
    if not calls or tool_choice == "none":
        return {"anyOf": [answer_reply]}
    return {"anyOf": [call_reply] if tool_choice != "auto" else [call_reply, answer_reply]}


def decodable(schema: Any) -> Any:
    """Return a copy of ``schema`` that llama-cpp-python's schema-to-grammar converter handles.

    Three rewrites: ``\\d`` (and ``\\w``, ``\\s``) in a ``pattern`` become character classes
    (the converter copies ``\\d`` into the grammar, llama.cpp cannot parse it, and
    llama-cpp-python then crashes the process); a ``format: date`` string drops its
    ``pattern`` (the converter prefers the pattern, and its own ``date`` rule is stricter:
    months 01-12, days 01-31); a ``pattern`` that asks for "a letter or digit somewhere"
    (:data:`react_lab.schema.NEEDS`: Unicode classes llama.cpp grammars lack) or is not
    anchored as ``^...$`` (the converter refuses it) is dropped. What a grammar cannot say
    -- February has 28 days, ``exclusiveMinimum``, a query with a word in it --
    :func:`react_lab.schema.validate_call` still checks after decoding.
    """
    if isinstance(schema, list):
        return [decodable(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: decodable(v) for k, v in schema.items()}
    if out.get("format") == "date":
        out.pop("pattern", None)
    if isinstance(out.get("pattern"), str) and (
        out["pattern"] in NEEDS
        or not (out["pattern"].startswith("^") and out["pattern"].endswith("$"))
    ):
        out.pop("pattern")
    if isinstance(out.get("pattern"), str):
        out["pattern"] = (
            out["pattern"]
            .replace(r"\d", "[0-9]")
            .replace(r"\w", "[A-Za-z0-9_]")
            .replace(r"\s", "[ \\t\\n]")
        )
    return out


def reply_grammar(
    tools: Sequence[dict], *, max_calls: int = 1, tool_choice: str | dict = "auto"
) -> str:
    """Return the GBNF grammar (text) of :func:`reply_schema`, built by llama-cpp-python.

    ``llama_cpp.llama_grammar.json_schema_to_gbnf`` -- what ``LlamaGrammar.from_json_schema``
    calls -- does the conversion.
    """
    from llama_cpp.llama_grammar import (
        json_schema_to_gbnf,  # heavy, optional: loads llama.cpp
    )

    schema = reply_schema(tools, max_calls=max_calls, tool_choice=tool_choice)
    return json_schema_to_gbnf(json.dumps(decodable(schema)))


@dataclass
class GrammarCheck:
    """Whether a grammar accepts ``text`` as a complete output.

    ``at`` is the offset of the first character the grammar refuses (``len(text)`` when
    the text stops before the grammar allows it to end; None when accepted); ``char`` is
    that character ("" for an early end).
    """

    accepted: bool
    at: int | None = None
    char: str | None = None


def grammar_check(grammar: str, text: str, llm=None) -> GrammarCheck:
    """Feed ``text`` character by character through llama.cpp's own grammar sampler.

    This is the check that masks tokens during generation (a refused token gets logit
    -inf and can never be sampled); a token passes only if each of its characters does,
    so going one character at a time finds the exact place. ``llm`` defaults to the
    embedded model (its vocabulary is needed). Raises ValueError if llama.cpp cannot
    parse ``grammar``.
    """
    llm = llm or local_model().llm
    eos = llm.token_eos()
    sampler = GrammarSampler(llm, grammar)
    try:
        for at, char in enumerate([*text, None]):  # None: the end of the text
            tokens = (
                [eos]
                if char is None
                else llm.tokenize(char.encode("utf-8"), add_bos=False, special=False)
            )
            for token in tokens:
                if not sampler.allows(token):
                    return GrammarCheck(False, at, char or "")
                if token != eos:
                    sampler.accept(token)  # only after it passed
        return GrammarCheck(True)
    finally:
        sampler.close()

"""Model-like inputs for property tests and the fuzz benchmark.

The pieces real completions are made of. Not random bytes: labels (numbered, lower case,
full-width colons, markdown), tool names (real, misspelled, sentences), brackets and call
syntax, JSON call fragments (every key spelling, cut off, braces inside strings), other
models' markup, control characters and line breaks, and long runs of any of them.
``tests/test_fuzz.py`` draws from these with hypothesis; ``benchmarks/fuzz_parser.py`` draws
with :class:`random.Random` for its 100,000-input run.
"""

from __future__ import annotations

import json
import random
import re
import time

import jsonschema

from react_lab.billing import SCHEDULE_PAYMENT
from react_lab.lab.agent.parser import find_forged, parse
from react_lab.schema import check_arguments
from react_lab.tools import Tool, default_tools

LABELS = [
    "Thought:",
    "Action:",
    "Action Input:",
    "Observation:",
    "Answer:",
    "Final Answer:",
    "Question:",
    "Action 2:",
    "Action 2 Input:",
    "action:",
    "answer:",
    "Action\uff1a",
    "Final Answer\uff1a",
    "**Action:**",
    "**Final Answer:**",
    "> Answer:",
    "Thought 3:",
    "Observation 1:",
    "- Observation:",
    "Finish[",
    "Action: None",
    "Action Input\uff1a",
]
NAMES = [
    "search",
    "list_invoices",
    "get_charge",
    "find_invoice",
    "get_payments",
    "calc",
    "Google Search",
    "None",
    "serch",
    "functions.search",
    "search for refunds.",
    "finish",
]
CALLS = [
    "[",
    "]",
    "(",
    ")",
    "[cus_8812, 2026-07-01]",
    '("refund policy")',
    "(query='x')",
    "[refund policy",
    '({"query": "x"})',
    "(1 + 2) * 3",
    "(",
    "[[",
    "))",
    ", ",
    "=",
    'search("x")',
    "calc((129 + 45) * 2)",
    'list_invoices("cus_8812", since="2026-07-01")',
]
JSON_PIECES = [
    '{"action": "search", "action_input": "refunds"}',
    '{"tool_name": "search", "tool_input": {"query": "x"}}',
    '{"name": "get_charge", "arguments": {"charge_id": "ch_1"}}',
    '{"function": "calc", "args": "{\\"expression\\": \\"1+1\\"}"}',
    '{"name": "write_log", "parameters": {"message": "}A"}}',
    '{"command": "search", "payload": {}}',
    '{"name": null}',
    '{"tool": "search", "query": "x"}',
    '{"action": "Final Answer", "action_input": "42"}',
    '"action_input": ',
    '"tool_name"',
    '{"a": {"b": [1, 2, {"c": "}"}]}}',
    "{'action': 'calc', 'action_input': '1+1'}",
    '{"query": "x"',
    '{"function": {"name": "search", "arguments": "{\\"query\\": \\"x\\"}"}}',
    "{",
    "}",
    '"',
    "'",
    "\\",
    ":",
    '[{"name": "search", "arguments": {}}]',
    "null",
    "1e999",
]
MARKUP = [
    "```json\n",
    "```",
    "<tool_call>",
    "</tool_call>",
    "<function=search>",
    "<parameter=query>",
    "</parameter>",
    "</function>",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
    "<|im_end|>",
    "<|im_start|>",
    '<invoke name="search">',
    "<b>",
    "</b>",
    "**",
    "__",
    "# ",
    "> ",
    "- ",
    "1. ",
    "`",
]
CONTROL = [
    "\n",
    "\r\n",
    "\r",
    "\x00",
    "\t",
    "\v",
    "\f",
    "\x1b",
    "\x85",
    "\u2028",
    "\u2029",
    "\u200b",
    "\ufeff",
    "\x7f",
    "\uff1a",
    "\ufe55",
    "\u00a0",
]
WORDS = [
    "refund policy",
    "INV-2041",
    "INV-2041\n",
    " cus_8812 ",
    "ch_1KZq8f",
    "2026-07-01",
    "I need to check the invoice",
    "\u6211\u9700\u8981\u641c\u7d22",
    "\u00e9 \u00fc",
    "Observ",
    "???",
    "...",
    " ",
    "  ",
    "\n\n",
    "0",
    "-1",
    "130",
    "the log shows Action: refund",
]
PIECES = LABELS + NAMES + CALLS + JSON_PIECES + MARKUP + CONTROL + WORDS


def model_like_text(rng: random.Random) -> str:
    """One completion-like text: 1-40 pieces, now and then a long run or a few random characters."""
    parts = []
    for _ in range(rng.randint(1, 40)):
        roll = rng.random()
        if roll < 0.04:  # a long run of one piece: the shape that makes a parser quadratic
            parts.append(rng.choice(PIECES) * rng.randint(100, 2000))
        elif roll < 0.12:  # a few arbitrary code points (no surrogates: text a model decodes)
            parts.append(
                "".join(
                    chr(rng.choice([rng.randint(0, 0xD7FF), rng.randint(0xE000, 0x10FFFF)]))
                    for _ in range(rng.randint(1, 6))
                )
            )
        else:
            parts.append(rng.choice(PIECES))
    return "".join(parts)


def _value(rng: random.Random, good):
    """A model-like value for one argument: the good one padded, cut, marked up, retyped, ..."""
    text = str(good)
    return rng.choice(
        [
            good,
            text,
            f" {text}\n",
            f"\t{text}",
            text[:3] + rng.choice(CONTROL) + text[3:],
            text + rng.choice(MARKUP) + rng.choice(WORDS),
            rng.choice(WORDS),
            rng.choice(CONTROL) * 3,
            "",
            None,
            0,
            130,
            -1.5,
            True,
            [text],
            {"value": text},
            text * rng.randint(50, 2000),
            model_like_text(rng)[:200],
        ]
    )


def model_like_arguments(rng: random.Random, example: dict) -> str | dict | list | None:
    """One ``arguments`` value as a model might send it.

    For a tool whose valid arguments are ``example``.
    """
    args = {k: _value(rng, v) if rng.random() < 0.5 else v for k, v in example.items()}
    if rng.random() < 0.2:
        args[rng.choice(["properties", "parameters", "arguments", "x", "include_deleted"])] = (
            rng.choice([dict(example), "y", 1])
        )
    if rng.random() < 0.15:
        args.pop(rng.choice(list(args)), None)
    text = json.dumps(args, ensure_ascii=rng.random() < 0.5)
    roll = rng.random()
    if roll < 0.15:
        return text[: rng.randint(0, len(text))]  # cut off
    if roll < 0.25:
        return text + rng.choice(['""', "}", " {}", "<|im_end|>", "\n```", rng.choice(PIECES)])
    if roll < 0.30:
        return rng.choice(["```json\n", "<tool_call>", "<function=x>\n", ""]) + text
    if roll < 0.35:
        return json.dumps(text)  # encoded twice
    if roll < 0.40:
        return str(args)  # a Python literal
    if roll < 0.45:
        return model_like_text(rng)
    if roll < 0.48:
        return "[" * rng.randint(1, 5000) + "]" * rng.randint(0, 5000)  # deep nesting
    if roll < 0.55:
        return args  # already decoded
    if roll < 0.58:
        return rng.choice([None, [], ["x"], 1, "null", "[]", '"x"'])
    return text


# ---- the properties every input must keep ----------------------------------------------------

LINE_BREAKS = re.compile(r"[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]")
NOT_IN_A_NAME = re.compile(r"[()\[\]{}<>\"':;,?!=\s]")  # besides single spaces between words
TOOLS = {
    **default_tools(),
    "schedule_payment": Tool(
        "schedule_payment",
        lambda invoice_id, amount: {},
        "test double",
        SCHEDULE_PAYMENT,
        side_effect=True,
    ),
}
EXAMPLE_ARGS = {
    name: {k: spec.get("examples", ["x"])[0] for k, spec in t.parameters["properties"].items()}
    for name, t in TOOLS.items()
}


def check_parse_result(text: str, tools) -> float:
    """Parse ``text`` and assert the parser's properties; return the seconds ``parse`` took."""
    t0 = time.perf_counter()
    r = parse(text, tools=tools)
    seconds = time.perf_counter() - t0
    assert r.kind in ("action", "final", "error")
    if r.kind == "action":
        assert isinstance(r.tool, str) and r.tool and isinstance(r.input, (str, dict))
        if tools is not None:
            assert r.tool in tools  # only a listed tool is ever dispatched
        else:  # a tool name is an identifier (or words of one): no brackets, quotes, colons ...
            assert not NOT_IN_A_NAME.search(r.tool.replace(" ", "")), r.tool
    elif r.kind == "final":
        assert isinstance(r.answer, str) and r.answer.strip()
    else:
        assert r.reason and not LINE_BREAKS.search(r.reason) and len(r.reason) <= 600, r.reason
        assert not r.reason.startswith("could not read the completion")  # the catch-all is for bugs
    assert find_forged(r.kept) is None
    return seconds


def check_argument_result(tool: Tool, arguments) -> float:
    """Check ``arguments`` and assert the check's properties.

    Returns the seconds ``check_arguments`` took.
    """
    t0 = time.perf_counter()
    args, errors = check_arguments(tool, arguments)
    seconds = time.perf_counter() - t0
    assert isinstance(errors, list) and all(isinstance(e, str) and e for e in errors)
    assert all(not LINE_BREAKS.search(e) and len(e) <= 600 for e in errors), errors
    assert not any(e.startswith("could not validate") for e in errors), errors
    if not errors:  # valid: what the tool receives is stripped, one line, and schema-valid
        assert isinstance(args, dict)
        for value in args.values():
            if isinstance(value, str):
                assert value == value.strip() and not LINE_BREAKS.search(value)
        assert jsonschema.Draft202012Validator(
            tool.parameters, format_checker=jsonschema.FormatChecker()
        ).is_valid(args)
    return seconds


#: Labels and the characters around them, as the property tests of the parser always drew them.
LABELLY = [
    "Thought:",
    "Action:",
    "Action 2:",
    "Action Input:",
    "Observation",
    "Observation:",
    "observations",
    "Answer:",
    "Final Answer:",
    "[",
    "]",
    "{",
    "}",
    '"',
    "'",
    "\\",
    "```",
    "```json",
    "Finish[",
    "None",
    ",",
    "\x00",
    "\n",
    "\r",
    "\r\n",
    "\u2028",
    " ",
    "*",
    "_",
    "-",
    "1",
    "(",
    ")",
    "<b>",
    "</b>",
    "\u00a0",
    "\u200b",
    ":",
    "\uff1a",
    "search",
    "x",
    "<observation>",
    "<|im_end|>",
    "\uff2f\uff42\uff53\uff45\uff52\uff56\uff41\uff54\uff49\uff4f\uff4e",
]

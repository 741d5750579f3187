"""Property tests: on model-like text the parser and the argument check never raise, and stay linear.

The inputs are built from the pieces real completions are made of (``tests/model_like.py``).
This file is the CI profile: 1,000 examples each (set ``REACT_LAB_FUZZ_EXAMPLES``
for more). ``benchmarks/fuzz_parser.py`` runs the full 100,000-input count and reports the
slowest input.
"""
import json
import os
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from model_like import (
    EXAMPLE_ARGS,
    PIECES,
    TOOLS,
    check_argument_result,
    check_parse_result,
    model_like_arguments,
)

from react_lab.schema import validate_call

EXAMPLES = int(os.environ.get("REACT_LAB_FUZZ_EXAMPLES", "1000"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

piece = st.sampled_from(PIECES)
run = st.tuples(piece, st.integers(50, 2000)).map(lambda t: t[0] * t[1])  # a long run of one piece
model_text = st.lists(st.one_of(piece, piece, piece, run, st.text(max_size=6)), max_size=40).map("".join)


@FUZZ
@given(model_text, st.booleans())
def test_parser_on_model_like_text(text, with_tools):
    check_parse_result(text, list(TOOLS) if with_tools else None)


@FUZZ
@given(st.sampled_from(sorted(TOOLS)), st.randoms(use_true_random=False))
def test_argument_check_on_model_like_arguments(name, rng):
    check_argument_result(TOOLS[name], model_like_arguments(rng, EXAMPLE_ARGS[name]))


@FUZZ
@given(st.sampled_from(sorted(TOOLS)), model_text)
def test_argument_check_on_model_like_text(name, text):
    check_argument_result(TOOLS[name], text)
    check_argument_result(TOOLS[name], {k: text for k in EXAMPLE_ARGS[name]})
    errors = validate_call(TOOLS[name], text)  # text where an object belongs: one message, one line
    assert len(errors) == 1 and errors[0].startswith("arguments ") and "object" in errors[0]
    assert "\n" not in errors[0]


# ---- linear time on the shapes the new code reads ----------------------------------------------

SIZE, BOUND = 200_000, 2.0  # characters; seconds (a linear reader needs hundredths, a quadratic one minutes)


def _run(piece: str, prefix: str = "", suffix: str = "") -> str:
    return prefix + (piece * (SIZE // len(piece) + 1))[:SIZE] + suffix


TEXT_SHAPES = {
    "call syntax, unclosed": _run("(", prefix="Action: search("),
    "call syntax per line": _run('Action: a(\n'),
    "call syntax with quotes": _run("'\"(", prefix="Action: search("),
    "call syntax, JSON never closed": _run('{"a": ', prefix="Action: search("),
    "answer then JSON": _run("Answer: {\n"),
    "answer, fence, JSON": _run("```json\n", prefix="Final Answer: ", suffix="{"),
    "answer then brackets": _run("[", prefix="Answer: ", suffix="{"),
    "name keys": _run('{"tool_name": '),
    "unknown keys": _run('{"command": "x"} '),
    "name key, no input": _run('{"tool": "x", "q": 1} '),
    "markup": _run("<function=search>"),
    "markup without a name": _run("<function="),
    "full-width colons": _run("Action\uff1a\uff1a"),
    "cut-off call and a name": _run('"action": "search", ', prefix="{"),
    "action input never closed": _run("{", prefix="Action: search\nAction Input: "),
    "a long name": _run("a ", prefix="Action: "),
    "words with dots": _run("a.", prefix="Action: "),
}


@pytest.mark.parametrize("text", TEXT_SHAPES.values(), ids=TEXT_SHAPES.keys())
def test_parser_is_linear_on_new_shapes(text):
    t0 = time.perf_counter()
    check_parse_result(text, list(TOOLS))
    check_parse_result(text, None)
    assert time.perf_counter() - t0 < 2 * BOUND


ARG_SHAPES = {
    "cut off": _run('{"query": "', prefix="{"),
    "markup": _run("<function=search>"),
    "extra data": _run('""', prefix="{}"),
    "a long value": json.dumps({"query": _run("a ")}),
    "a long value with markup": json.dumps({"query": _run("</arg_value>")}),
    "control characters": json.dumps({"query": _run("\n\x00")}),
    "deep nesting": _run("["),
    "a long wrapper": json.dumps({"properties": {"query": _run("x")}}),
}


@pytest.mark.parametrize("arguments", ARG_SHAPES.values(), ids=ARG_SHAPES.keys())
def test_argument_check_is_linear_on_long_arguments(arguments):
    t0 = time.perf_counter()
    check_argument_result(TOOLS["search"], arguments)
    assert time.perf_counter() - t0 < BOUND

"""Property tests: on model-like text the parser, the leak reader and the argument check never
raise and keep their properties, and each stays linear in the length of its input.

The inputs are built from the pieces real completions are made of (``tests/helpers/model_like.py``,
with the labels, brackets and other models' native call markup below). This file is the CI
profile: 1,000 examples each (set ``REACT_LAB_FUZZ_EXAMPLES`` for more).
``benchmarks/fuzz_parser.py`` runs the full 100,000-input count and reports the slowest input.

One table of adversarial shapes and one time bound: each shape is read at n and at 10n
characters in the same run, and the second must take at most :data:`RATIO` times as long
(a linear reader takes about 10 times as long; a quadratic one 100 times).
"""

import json
import os
import time

import pytest
from helpers.model_like import (
    EXAMPLE_ARGS,
    LABELLY,
    LINE_BREAKS,
    PIECES,
    TOOLS,
    check_argument_result,
    check_parse_result,
    model_like_arguments,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from react_lab._parsing.leaks import leaked_calls
from react_lab.lab.agent.parser import find_forged, parse, trim_partial_stop
from react_lab.lab.experiments.abuses import strict_parse
from react_lab.lab.experiments.arms import settled_forgery
from react_lab.schema import validate_call

EXAMPLES = int(os.environ.get("REACT_LAB_FUZZ_EXAMPLES", "1000"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: Other models' native call markup, in pieces (see react_lab/_parsing/formats.py for the formats).
NATIVE = [
    "<|channel|>analysis",
    "<|channel|>commentary",
    "<|channel|>final",
    "<|message|>",
    " to=functions.search",
    " to=browser.open",
    "<|constrain|>json",
    "<|end|>",
    "<|call|>",
    "<|start|>assistant",
    "<\uff5ctool\u2581calls\u2581begin\uff5c>",
    "<\uff5ctool\u2581call\u2581begin\uff5c>",
    "function",
    "<\uff5ctool\u2581sep\uff5c>",
    "<\uff5ctool\u2581call\u2581end\uff5c>",
    "<|tool_call_begin|>",
    "functions.search:0",
    "<|tool_call_argument_begin|>",
    "<|tool_calls_section_begin|>",
    "[TOOL_CALLS]",
    "[ARGS]",
    "[CALL_ID]",
    "<|tool_call>",
    "call:search",
    '<|"|>',
    "<tool_call|>",
    "<start_function_call>",
    "<escape>",
    "<|python_tag|>",
    ".call(",
    "<function=search>",
    "</function>",
    "<parameter=query>",
    "</parameter>",
    '<invoke name="search">',
    "</invoke>",
    '<parameter name="query">',
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
    "<|tool_call|>",
    "<TOOLCALL>",
    "functools",
    "<|START_ACTION|>",
    "<|tools_prefix|>",
    "[TOOL_REQUEST]",
    "<|tool_call_start|>",
    "```tool_code\n",
    "<function_calls>",
    ">>>search\n",
    '<\uff5cDSML\uff5cinvoke name="search">',
    '<steptml:invoke name="x">',
    "properties=",
    "{city:",
    "search{",
    "[search(",
    "true",
    "null",
    "\u2581",
    "\u0120",
    "\u010a",
    "<0x0A>",
    "<think>",
    "</think>",
    "<|im_end|>",
]

piece = st.sampled_from(PIECES + NATIVE + LABELLY)
run = st.tuples(piece, st.integers(50, 2000)).map(lambda t: t[0] * t[1])  # a long run of one piece
model_text = st.lists(st.one_of(piece, piece, piece, run, st.text(max_size=8)), max_size=40).map(
    "".join
)
any_text = st.one_of(
    model_text, st.binary(max_size=300).map(lambda b: b.decode("utf-8", errors="replace"))
)


# ---- never raises, whatever the text ---------------------------------------------------------


@FUZZ
@given(any_text, st.booleans(), st.sampled_from([None, "stop", "length"]))
def test_parser_and_leak_reader_keep_their_properties_on_any_text(text, with_tools, finish_reason):
    # check_parse_result: a known kind; an action names a listed tool (or an identifier) with a
    # str or dict input; an answer is not blank; an error is one short line and never the
    # catch-all; no model-written Observation line is kept.
    tools = list(TOOLS) if with_tools else None
    check_parse_result(text, tools)
    r = parse(text, tools=tools, finish_reason=finish_reason, max_tokens=64)
    assert (r.reason is not None) == (r.kind == "error")  # only an error carries a reason
    assert find_forged(r.kept) is None
    if r.kind == "error":
        assert r.reason and not LINE_BREAKS.search(r.reason), r.reason
        assert finish_reason != "length" or "token limit (64 tokens)" in r.reason
    else:  # the finish reason changes what an error says, never what is read
        assert (r.kind, r.tool, r.input, r.answer) == (
            lambda p: (p.kind, p.tool, p.input, p.answer)
        )(parse(text, tools=tools))
    strict = strict_parse(text)
    assert (strict.kind == "final") == ("Answer:" in text)  # the classic loop's order
    assert (strict.reason is not None) == (strict.kind == "error")
    for call in leaked_calls(text):
        assert call["type"] == "function" and call["id"].startswith("leaked_")
        assert call["function"]["name"] and isinstance(call["function"]["arguments"], str)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(LABELLY), st.text(max_size=8)), max_size=40))
def test_find_forged_is_a_line_start_and_line_breaks_do_not_matter(parts):
    text = "".join(parts)
    at = find_forged(text)
    line_start = at is None or at == 0 or text[at - 1] in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
    # or an Observation label after the call on an Action line: the action before it is kept
    assert line_start or text[at : at + 40].translate(FULL_WIDTH).lstrip("*_").lower().startswith(
        "observation"
    ), (text, at)
    assert find_forged(text.replace("\n", "\u2028")) == at


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


# ---- linear time: one table of shapes, one bound ----------------------------------------------

N = 20_000  # characters; each shape is read at N and at 10 * N
RATIO = 25  # time(10N) / time(N): about 10 when linear, about 100 when quadratic
FLOOR = 2e-3  # seconds: below this the clock's noise is the measurement, so time(N) counts as this


def _run(piece: str, prefix: str = "", suffix: str = ""):
    return lambda n: prefix + (piece * (n // len(piece) + 1))[:n] + suffix


TEXT = {  # completions read by the parser, the forgery finders and the leak reader
    "bare Action lines": _run("Action:\n"),
    "bare Action then brace": _run("Action:\n{\n"),
    "Action with brace": _run("Action: {\n"),
    "Action with bracket": _run("Action: x[\n"),
    "one unclosed call": _run("[", prefix="Action: a["),
    "brackets": _run("["),
    "open braces": _run("{"),
    "open braces, one close": _run("{", suffix="}"),
    "braces never balancing": _run("{{}"),
    "braces and quotes": _run("{'"),
    "double quotes": _run('"'),
    "single quotes": _run("'"),
    "backslashes in an object": _run("\\", prefix='Action:\n{"a": "'),
    "Action Input braces": _run("{", prefix="Action: x\nAction Input: "),
    "Action Input blank lines": _run("\n", prefix="Action: x\nAction Input:"),
    "Action Input fences": _run("```\n", prefix="Action: x\nAction Input:\n"),
    "Action Input spaces": _run(" ", prefix="Action: x\nAction Input:", suffix="x"),
    "many labels": _run("Thought: a\nAction:\nAction Input:\nQuestion:\nAnswer:\nObservation\n"),
    "spaces after Observation": _run(" ", prefix="Observation", suffix="x"),
    "spaces after Action": _run(" ", prefix="Action", suffix="x"),
    "spaces after Answer": _run(" ", prefix="Answer", suffix="x"),
    "spaces after a label in an answer": _run(" ", prefix="Answer: y\nThought", suffix="x"),
    "spaces inside a tool name": _run(" ", prefix="Action: a", suffix="b"),
    "markdown before a label": _run("*", suffix="x"),
    "Observation without colon": _run("Observation x\n"),
    "Observation words": _run("- Observation shows that\n"),
    "Observation then non-letters": _run("Observation (1) *_ ", suffix="x"),
    "HTML tags": _run("<b>Observation</b>"),
    "carriage returns": _run("Action:\r{\r"),
    "unicode line separators": _run("Action:\u2028{\u2029"),
    "nested Python literals": _run("1,", prefix="Action:\n" + "{" * 16, suffix="1" + "}" * 16),
    "many small Python literals": _run("{'a': [1, 2, 3]} "),
    "many JSON non-actions": _run('{"a": 1} ', prefix="Action:\n"),
    "call syntax, unclosed": _run("(", prefix="Action: search("),
    "call syntax per line": _run("Action: a(\n"),
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
    # other models' markup: frames never closed, frames repeated, separators with nothing between
    "Harmony messages": _run("<|channel|>analysis<|message|>a<|end|>"),
    "Harmony headers, no message": _run("<|start|>assistant<|channel|>commentary to=functions.x "),
    "Harmony JSON never closed": _run(
        '{"a": ', prefix="<|channel|>commentary to=functions.search<|message|>"
    ),
    "DeepSeek begins": _run(
        "<\uff5ctool\u2581call\u2581begin\uff5c>function<\uff5ctool\u2581sep\uff5c>x\n"
    ),
    "DeepSeek section tokens": _run("<\uff5ctool\u2581calls\u2581begin\uff5c>"),
    "Kimi begins": _run("<|tool_call_begin|>functions.x:0"),
    "Mistral markers": _run("[TOOL_CALLS]x"),
    "Mistral JSON never closed": _run("{", prefix="[TOOL_CALLS]search"),
    "Gemma strings never closed": _run('<|"|>', prefix="<|tool_call>call:search{a:"),
    "Gemma nesting": _run("{a:", prefix="<|tool_call>call:search"),
    "Gemma calls": _run("<|tool_call>call:x{"),
    "parameters never closed": _run("<parameter=a>", prefix="<function=search>"),
    "invokes": _run('<invoke name="x">'),
    "GLM keys": _run("<arg_key>a</arg_key>", prefix="<tool_call>search\n"),
    "GLM values never closed": _run(
        "<arg_value>", prefix="<tool_call>search\n<arg_key>a</arg_key>"
    ),
    "wrappers": _run("<tool_call>"),
    "wrappers with a name": _run("<tool_call>x\n"),
    "python tags": _run("<|python_tag|>x.call("),
    "tool_code fences": _run("```tool_code\nx(\n"),
    "Python-style lists": _run("[a(", prefix="[search(query="),
    "glued names": _run("a{"),
    "glued bare keys": _run("a: 1, ", prefix="search{"),
    "bare call lines": _run("search(x\n"),
    "SentencePiece markers": _run("\u2581{"),
    "byte-level markers": _run("\u0120{\u010a"),
    "byte tokens": _run("<0xE2>", prefix="\u2581Action:\u2581"),
    "answer labels repeated": _run("Answer: "),
    "answer label, then a label": _run("Answer: Action: "),
    "an invisible answer": _run("\u200b\ufeff", prefix="Answer: "),
    "Observation labels on an Action line": _run("] Observation x ", prefix="Action: a["),
    "brackets then Observation labels": _run("[[ Observation: ", prefix="Action: a"),
    "full-width Observation words": _run(
        "\uff2f\uff42\uff53\uff45\uff52\uff56\uff41\uff54\uff49\uff4f\uff4e "
    ),
    "observation tags": _run("<observation", suffix=">"),
    "special tokens": _run("<|im_end|>", suffix="Observation"),
    # answers searched for a call written in them (react_lab/_parsing/answer_calls.py)
    "answer, glued calls never closed": _run("a(", prefix="Answer: "),
    "answer, glued calls with code": _run('a("x", ', prefix="Answer: "),
    "answer, labels before calls": _run("Note: a[", prefix="Answer: "),
    "answer, sentences before labels": _run(". a b:", prefix="Answer: "),
    "answer, assignments": _run("= a(", prefix="Answer: "),
    "answer, code spans": _run("`a(` ", prefix="Answer: "),
    "answer, bare keys": _run("{a: ", prefix="Answer: "),
    "answer, equals objects": _run("{name=a, ", prefix="Answer: "),
    "answer, call tags": _run("<call>a(", prefix="Answer: "),
    "answer, fences": _run("```\n", prefix="Answer: "),
    "answer, tool names": _run("search ", prefix="Answer: "),
    "answer, tool names then colons": _run("search: ", prefix="Answer: "),
    "answer, dotted tool names": _run("x.search", prefix="Answer: "),
    "answer, tool commands": _run("/search x\n", prefix="Answer: "),
}
FULL_WIDTH = {c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)}
ARGUMENTS = {  # arguments read by the argument check
    "cut off": _run('{"query": "', prefix="{"),
    "markup in arguments": _run("<function=search>"),
    "extra data": _run('""', prefix="{}"),
    "a long value": lambda n: json.dumps({"query": _run("a ")(n)}),
    "a long value with markup": lambda n: json.dumps({"query": _run("</arg_value>")(n)}),
    "control characters": lambda n: json.dumps({"query": _run("\n\x00")(n)}),
    "deep nesting": _run("["),
    "a long wrapper": lambda n: json.dumps({"properties": {"query": _run("x")(n)}}),
}
SHAPES = {
    **{k: ("text", v) for k, v in TEXT.items()},
    **{k: ("arguments", v) for k, v in ARGUMENTS.items()},
}


def _read_all(kind: str, value) -> None:
    if kind == "arguments":
        check_argument_result(TOOLS["search"], value)
        return
    check_parse_result(value, list(TOOLS))
    check_parse_result(value, None)
    find_forged(value), settled_forgery(value), trim_partial_stop(value), leaked_calls(value)


def _seconds(kind: str, value, repeats: int) -> float:
    """The least CPU time of this thread over ``repeats`` reads: waiting for a core that other
    processes hold is not counted (wall-clock time on a loaded 2-core machine was)."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.thread_time()
        _read_all(kind, value)
        best = min(best, time.thread_time() - t0)
    return best


@pytest.mark.parametrize("shape", SHAPES)
def test_every_reader_is_linear_on_adversarial_text(shape):
    kind, build = SHAPES[shape]
    small, large = build(N), build(10 * N)
    _read_all(kind, small)  # warm up: compiled patterns, caches
    # CPU time, so a busy machine seldom stalls a measurement; if one does, the next attempt
    # reads again (a quadratic reader fails all three)
    for attempt in range(3):
        t_small = max(_seconds(kind, small, 2), FLOOR)
        t_large = _seconds(kind, large, 1)
        if t_large <= RATIO * t_small:
            break
    assert t_large <= RATIO * t_small, (
        f"{shape}: {t_large:.3f}s at 10x vs {t_small:.3f}s (x{t_large / t_small:.0f})"
    )

"""The tolerant parser under attack: adversarial sizes and odd spellings of a forged Observation.

Two kinds of bug report: text that made ``parse`` take quadratic time (or hang), and
model-written ``Observation`` lines that :func:`find_forged` did not see, so the forged
observation (and an answer drawn from it) entered the transcript.
"""
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from react_lab.parser import find_forged, parse, settled_forgery, trim_partial_stop

# ---- adversarial sizes: every shape parses in linear time ---------------------------------

SIZE = 200_000  # characters, about 50x a long real completion
BOUND = 2.0     # seconds; a linear parser needs a few hundredths, a quadratic one minutes


def _repeat(piece: str, prefix: str = "", suffix: str = "") -> str:
    body = piece * (SIZE // len(piece) + 1)
    return prefix + body[:SIZE] + suffix


SHAPES = {
    "bare Action lines": _repeat("Action:\n"),
    "bare Action then brace": _repeat("Action:\n{\n"),
    "Action with brace": _repeat("Action: {\n"),
    "Action with bracket": _repeat("Action: x[\n"),
    "one unclosed call": _repeat("[", prefix="Action: a["),
    "brackets": _repeat("["),
    "open braces": _repeat("{"),
    "open braces, one close": _repeat("{", suffix="}"),
    "braces never balancing": _repeat("{{}"),
    "braces and quotes": _repeat("{'"),
    "double quotes": _repeat('"'),
    "single quotes": _repeat("'"),
    "backslashes in an object": _repeat("\\", prefix='Action:\n{"a": "'),
    "Action Input braces": _repeat("{", prefix="Action: x\nAction Input: "),
    "Action Input blank lines": _repeat("\n", prefix="Action: x\nAction Input:"),
    "Action Input fences": _repeat("```\n", prefix="Action: x\nAction Input:\n"),
    "Action Input spaces": _repeat(" ", prefix="Action: x\nAction Input:", suffix="x"),
    "many labels": _repeat("Thought: a\nAction:\nAction Input:\nQuestion:\nAnswer:\nObservation\n"),
    "spaces after Observation": _repeat(" ", prefix="Observation", suffix="x"),
    "spaces after Action": _repeat(" ", prefix="Action", suffix="x"),
    "spaces after Answer": _repeat(" ", prefix="Answer", suffix="x"),
    "spaces after a label in an answer": _repeat(" ", prefix="Answer: y\nThought", suffix="x"),
    "spaces inside a tool name": _repeat(" ", prefix="Action: a", suffix="b"),
    "markdown before a label": _repeat("*", suffix="x"),
    "Observation without colon": _repeat("Observation x\n"),
    "Observation words": _repeat("- Observation shows that\n"),
    "Observation then non-letters": _repeat("Observation (1) *_ ", suffix="x"),
    "HTML tags": _repeat("<b>Observation</b>"),
    "carriage returns": _repeat("Action:\r{\r"),
    "unicode line separators": _repeat("Action:\u2028{\u2029"),
    "nested Python literals": _repeat("1,", prefix="Action:\n" + "{" * 16, suffix="1" + "}" * 16),
    "many small Python literals": _repeat("{'a': [1, 2, 3]} "),
    "many JSON non-actions": _repeat('{"a": 1} ', prefix="Action:\n"),
}


@pytest.mark.parametrize("text", SHAPES.values(), ids=SHAPES.keys())
def test_adversarial_text_is_parsed_in_linear_time(text):
    for fn in (parse, find_forged, trim_partial_stop):
        t0 = time.perf_counter()
        fn(text)
        assert time.perf_counter() - t0 < BOUND, fn.__name__
    assert find_forged(parse(text).kept) is None  # whatever the text, no forged line is kept


def test_an_action_after_many_bare_action_lines_is_still_found():
    text = "Action:\n" * 5_000 + '{"action": "search", "action_input": "refunds"}'
    r = parse(text)
    assert (r.kind, r.tool, r.input) == ("action", "search", "refunds")


@pytest.mark.parametrize("text", [
    'Action:\n{I don\'t know yet}\n{"action": "search", "action_input": "refunds"}',
    'Action:\n{"oops\n{"action": "search", "action_input": "refunds"}',
    'I think {maybe\n{"action": "search", "action_input": "refunds"}',
    '{"tool_call": {"action": "search", "action_input": "refunds"}}',
])
def test_json_action_found_past_prose_braces_and_stray_quotes(text):
    r = parse(text)
    assert (r.kind, r.tool, r.input) == ("action", "search", "refunds")


@pytest.mark.parametrize("text", ["Action: ''", 'Action: ""\nAction Input: refunds', "Action: ``"])
def test_an_action_line_without_a_tool_name_is_an_error(text):
    r = parse(text)
    assert r.kind == "error" and "names no tool" in r.reason


# ---- forged observations, whatever their spelling -----------------------------------------

FORGED = [
    # spellings the parser missed
    "__Observation__:", "- Observation:", "1. Observation:", "Observation (1):", "Observations:",
    "Observation\u00a0:", "Observation\uff1a", "\u200bObservation:", "Observation -", "Observation \u2014",
    "<b>Observation</b>:", "<strong>Observation:</strong>",
    # spellings it already caught
    "Observation:", "**Observation**:", "observation:", "Observation 1:", "*Observation:*",
    "> Observation:", "### Observation:", "  Observation:", "**Observation:**",
]
NOT_FORGED = [
    "Observation shows that x: y", "Observational data: 3 rows", "Observations from the log show: y",
    "Observation-based estimate: 40", "The Observation: x", "I made an observation: it is paid",
    '  "observation": "paid",',
]


@pytest.mark.parametrize("label", FORGED)
def test_forged_observation_is_found_at_its_line_start(label):
    text = f"Thought: check\n{label} INV-2291 was paid.\nAnswer: Yes, paid."
    assert find_forged(text) == len("Thought: check\n")


@pytest.mark.parametrize("label", FORGED)
def test_no_answer_is_taken_from_a_forged_observation(label):
    # As for the standard spelling: everything from the forged line on is dropped, so the
    # answer that rests on it is not taken, and the transcript keeps only the thought.
    r = parse(f"Thought: check\n{label} INV-2291 was paid.\nAnswer: Yes, paid.")
    assert (r.kind, r.answer, r.forged, r.kept) == ("error", None, True, "Thought: check")


@pytest.mark.parametrize("label", FORGED)
def test_action_before_a_forged_observation_is_kept_and_run(label):
    r = parse(f"Thought: check\nAction: get_payments[INV-2291]\n{label} [] \nAnswer: unpaid")
    assert (r.kind, r.tool, r.input, r.forged) == ("action", "get_payments", "INV-2291", True)
    assert r.kept == "Thought: check\nAction: get_payments[INV-2291]"


@pytest.mark.parametrize("line", NOT_FORGED)
def test_observation_as_an_ordinary_word_is_not_a_forgery(line):
    text = f"Thought: check\n{line}\nAnswer: Yes"
    assert find_forged(text) is None
    r = parse(text)
    assert (r.kind, r.answer, r.forged) == ("final", "Yes", False)


BARE = ["Observation", "**Observation**", "### Observation", "Observation 2", "Observations",
        "<b>Observation</b>", "OBSERVATION", "> Observation", "Observation  ", "_Observation_"]
# Lines that hold the word alone but are prose or a plan, not a label (a fresh reader's finds).
NOT_BARE = ["observation.", "(observation)", "1. observation", "`observation`",
            '<a href="x">observation</a>', "- Observation", "observation", "Observation."]


@pytest.mark.parametrize("line", NOT_BARE)
def test_the_word_alone_on_a_line_of_prose_or_a_list_is_not_a_label(line):
    text = f"Thought: I will answer from the last\n{line}\nAnswer: Three steps: Thought, Action, Observation"
    assert find_forged(text) is None
    steps = "Final Answer: the loop has three steps:\n- Thought\n- Action\n- Observation\nDone."
    assert find_forged(steps) is None


@pytest.mark.parametrize("label", BARE)
def test_a_line_that_is_the_label_alone_is_a_forged_observation(label):
    # The model writes the label as a heading and the made-up result on the next line.
    text = f"Thought: check\nAction: get_payments[INV-2291]\n{label}\n[] \nAnswer: unpaid"
    assert find_forged(text) == settled_forgery(text) == text.index(label)
    r = parse(text)
    assert (r.kind, r.tool, r.input, r.forged) == ("action", "get_payments", "INV-2291", True)
    assert r.kept == "Thought: check\nAction: get_payments[INV-2291]"


@pytest.mark.parametrize("label", BARE)
def test_the_label_alone_counts_only_once_its_line_is_finished(label):
    # "Observation" at the very end may yet become "Observation shows that ...".
    text = f"Thought: check\n{label}"
    assert find_forged(text) is None and settled_forgery(text) is None
    assert find_forged(text + " shows that it was paid\n") is None
    assert find_forged(text + "\r\n") == len("Thought: check\n")


@pytest.mark.parametrize("sep", ["\n", "\r\n", "\r", "\u2028", "\u2029", "\x85", "\v", "\f"],
                         ids=["LF", "CRLF", "CR", "LS", "PS", "NEL", "VT", "FF"])
def test_any_line_break_separates_labels(sep):
    text = f"Thought: a{sep}Action: search[x]{sep}Observation: y{sep}Answer: y"
    r = parse(text)
    assert (r.kind, r.tool, r.input, r.forged) == ("action", "search", "x", True)
    assert r.kept == "Thought: a\nAction: search[x]"
    assert r.thought == "a"
    at = find_forged(text)  # an index into the text as given
    assert text[at:].startswith("Observation")


@pytest.mark.parametrize("tail", ["\n**Obs", "\n- Observ", "\r\nObserv", "\rObs", "\n<b>Obs",
                                  "\u2028O", "\n__Observ__", "\n1. Obs"])
def test_partial_stop_word_is_trimmed_in_any_spelling(tail):
    assert trim_partial_stop(f"Action Input: x{tail}").rstrip() == "Action Input: x"
    r = parse(f"Action: search\nAction Input: refunds{tail}")
    assert (r.kind, r.tool, r.input) == ("action", "search", "refunds")


@pytest.mark.parametrize("tail", ["\nObservational", "\n}", "\n- Obviously", "\nok"])
def test_a_last_line_that_is_not_a_stop_word_stays(tail):
    assert trim_partial_stop(f"Action Input: x{tail}") == f"Action Input: x{tail}"


# ---- properties ------------------------------------------------------------------------------

PIECES = st.sampled_from(["Thought:", "Action:", "Action Input:", "Observation", "Observation:",
                          "observations", "Answer:", "[", "]", "{", "}", "\"", "'", "\\", "```",
                          "\n", "\r", "\r\n", "\u2028", " ", "*", "_", "-", "1", "(", ")", "<b>",
                          "</b>", "\u00a0", "\u200b", ":", "\uff1a", "search", "x"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(PIECES, st.text(max_size=8)), max_size=40))
def test_find_forged_is_a_line_start_and_line_breaks_do_not_matter(parts):
    text = "".join(parts)
    at = find_forged(text)
    breaks = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
    assert at is None or at == 0 or text[at - 1] in breaks
    assert find_forged(text.replace("\n", "\u2028")) == at


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(PIECES, st.text(max_size=8)), max_size=40), st.booleans())
def test_kept_text_never_holds_a_forged_observation(parts, with_tools):
    r = parse("".join(parts), tools=["search"] if with_tools else None)
    assert find_forged(r.kept) is None
    # the catch-all in parse() is for bugs only; model text never reaches it
    assert not (r.reason or "").startswith("could not read the completion")

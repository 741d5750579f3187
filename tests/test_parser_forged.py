"""Forged observations: every spelling of a model-written ``Observation`` line, found and dropped.

The loop writes every observation; the parser drops everything from the first line the model
wrote as one (:func:`react_lab.lab.agent.parser.find_forged`), keeps the action before it, and never
takes an answer written after it; a cut-off stop word is trimmed (``trim_partial_stop``). When
a streamed completion's forgery is certain is the lab's (``tests/lab/experiments/test_arms.py``).
"""

import pytest
from helpers.parsing_checks import BARE, INLINE, TOOLS

from react_lab.lab.agent.parser import find_forged, parse, trim_partial_stop

# ---- forged observations, whatever their spelling -----------------------------------------

FORGED = [
    # spellings the parser missed
    "__Observation__:",
    "- Observation:",
    "1. Observation:",
    "Observation (1):",
    "Observations:",
    "Observation\u00a0:",
    "Observation\uff1a",
    "\u200bObservation:",
    "Observation -",
    "Observation \u2014",
    "<b>Observation</b>:",
    "<strong>Observation:</strong>",
    # spellings it already caught
    "Observation:",
    "**Observation**:",
    "observation:",
    "Observation 1:",
    "*Observation:*",
    "> Observation:",
    "### Observation:",
    "  Observation:",
    "**Observation:**",
    # full-width letters, a tag, a special token before the label
    "\uff2f\uff42\uff53\uff45\uff52\uff56\uff41\uff54\uff49\uff4f\uff4e:",
    "\uff2f\uff42\uff53\uff45\uff52\uff56\uff41\uff54\uff49\uff4f\uff4e\uff1a",
    "<observation>",
    '<Observation>{"rows": []}</Observation>',
    '<observation step="1">',
    "<|im_end|>Observation:",
    "<|im_end|><|im_start|>Observation:",
    "<|eot_id|>observation:",
    "<\uff5cend\u2581of\u2581sentence\uff5c>Observation:",
]
NOT_FORGED = [
    "Observation shows that x: y",
    "Observational data: 3 rows",
    "Observations from the log show: y",
    "Observation-based estimate: 40",
    "The Observation: x",
    "I made an observation: it is paid",
    '  "observation": "paid",',
    "Thought: the Observation: line is written by the loop",
    "<observational>",
    "I saw <observation> tags",
    "<|im_end|>Observational data: 3 rows",
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


# Lines that hold the word alone but are prose or a plan, not a label (a fresh reader's finds).
NOT_BARE = [
    "observation.",
    "(observation)",
    "1. observation",
    "`observation`",
    '<a href="x">observation</a>',
    "- Observation",
    "observation",
    "Observation.",
]


@pytest.mark.parametrize("line", NOT_BARE)
def test_the_word_alone_on_a_line_of_prose_or_a_list_is_not_a_label(line):
    text = (
        f"Thought: I will answer from the last\n{line}\n"
        "Answer: Three steps: Thought, Action, Observation"
    )
    assert find_forged(text) is None
    steps = "Final Answer: the loop has three steps:\n- Thought\n- Action\n- Observation\nDone."
    assert find_forged(steps) is None


@pytest.mark.parametrize("label", BARE)
def test_a_line_that_is_the_label_alone_is_a_forged_observation(label):
    # The model writes the label as a heading and the made-up result on the next line.
    text = f"Thought: check\nAction: get_payments[INV-2291]\n{label}\n[] \nAnswer: unpaid"
    assert find_forged(text) == text.index(label)
    r = parse(text)
    assert (r.kind, r.tool, r.input, r.forged) == ("action", "get_payments", "INV-2291", True)
    assert r.kept == "Thought: check\nAction: get_payments[INV-2291]"


@pytest.mark.parametrize("label", BARE)
def test_the_label_alone_counts_only_once_its_line_is_finished(label):
    # "Observation" at the very end may yet become "Observation shows that ...".
    text = f"Thought: check\n{label}"
    assert find_forged(text) is None
    assert find_forged(text + " shows that it was paid\n") is None
    assert find_forged(text + "\r\n") == len("Thought: check\n")


@pytest.mark.parametrize(
    "sep",
    ["\n", "\r\n", "\r", "\u2028", "\u2029", "\x85", "\v", "\f"],
    ids=["LF", "CRLF", "CR", "LS", "PS", "NEL", "VT", "FF"],
)
def test_any_line_break_separates_labels(sep):
    text = f"Thought: a{sep}Action: search[x]{sep}Observation: y{sep}Answer: y"
    r = parse(text)
    assert (r.kind, r.tool, r.input, r.forged) == ("action", "search", "x", True)
    assert r.kept == "Thought: a\nAction: search[x]"
    assert r.thought == "a"
    at = find_forged(text)  # an index into the text as given
    assert text[at:].startswith("Observation")


@pytest.mark.parametrize(
    "tail",
    [
        "\n**Obs",
        "\n- Observ",
        "\r\nObserv",
        "\rObs",
        "\n<b>Obs",
        "\u2028O",
        "\n__Observ__",
        "\n1. Obs",
    ],
)
def test_partial_stop_word_is_trimmed_in_any_spelling(tail):
    assert trim_partial_stop(f"Action Input: x{tail}").rstrip() == "Action Input: x"
    r = parse(f"Action: search\nAction Input: refunds{tail}")
    assert (r.kind, r.tool, r.input) == ("action", "search", "refunds")


@pytest.mark.parametrize("tail", ["\nObservational", "\n}", "\n- Obviously", "\nok"])
def test_a_last_line_that_is_not_a_stop_word_stays(tail):
    assert trim_partial_stop(f"Action Input: x{tail}") == f"Action Input: x{tail}"


# ---- an Observation written on the action's own line -------------------------------------------


@pytest.mark.parametrize("line", INLINE)
def test_an_observation_after_the_call_on_its_line_is_forged_and_the_action_kept(line):
    text = f"Thought: look\n{line}\nAnswer: 3 refunds"
    at = find_forged(text)
    assert at is not None and text[at:].translate(_FOLD).lower().startswith(
        ("observation", "**observation")
    )
    r = parse(text, tools=TOOLS)
    assert (r.kind, r.tool, r.input, r.forged, r.answer) == (
        "action",
        "search",
        "refunds",
        True,
        None,
    )
    assert find_forged(r.kept) is None and "3" not in r.kept.split("search", 1)[1].replace(
        "refunds", ""
    )
    from react_lab.lab.agent.parser import truncate_forged

    assert truncate_forged(text).endswith(
        ("search[refunds]", 'search("refunds")', "search[refunds]<|im_end|>")
    )


_FOLD = {c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)}


@pytest.mark.parametrize(
    "line",
    [
        "Action: search[Observation: x]",
        'Action: search["Observation: x"]',
        "Action: search[my observation: x]",
        "Action: search(query='x Observation: y')",
        "Action: search[x] (observation: none yet)",
    ],
)
def test_the_word_inside_a_call_or_in_prose_after_it_is_not_forged(line):
    assert find_forged(f"Thought: t\n{line}\n") is None
    assert parse(f"Thought: t\n{line}").kind == "action"


def test_an_action_named_observation_still_says_so():
    r = parse("Action: Observation: the invoice is paid")
    assert r.forged and "holds an Observation, not a tool name" in r.reason

"""Where an answer's values came from.

The exemplar-values guard and the unsure best effort, in the real loop.
"""

import pytest

from react_lab.lab.agent.loop import ask
from react_lab.lab.backends.scripted import ScriptedModel
from react_lab.lab.experiments.configs import LadderGuards
from react_lab.lab.guards import GUARD_NAMES
from react_lab.lab.provenance import UNSURE, copied_values, is_guess, values_in
from react_lab.protocol import EXEMPLARS, Exemplar

#: An exemplar whose answer is 58.00 dollars, and a 12900-cent charge in its observation.
SUM = Exemplar(
    question="What is the combined total of invoices INV-1111 and INV-2222, in dollars?",
    steps=(("I look up INV-1111.", "find_invoice[INV-1111]", '{"total": 29.0}'),),
    final_thought="calc gives 58.0.",
    answer="58.00 dollars",
)


def test_values_are_dates_ids_and_amounts_not_counts_or_the_digits_of_a_date():
    assert values_in(
        "INV-2041 of cus_8812: $1,290.50 on 2026-07-14T08:10:47, 3 invoices, 12900 cents, inv-2088"
    ) == [
        "id:INV-2041",
        "id:cus_8812",
        "amount:1290.50",
        "date:2026-07-14",
        "amount:12900.00",
        "id:INV-2088",
    ]


@pytest.mark.parametrize(
    "answer, sources, copied",
    [
        ("58.00 dollars", ['{"total": 129.0}'], ["58.00"]),  # the exemplar's sum, not this run's
        ("129.00 dollars", ['{"amount": 12900}'], []),  # 12900 cents read as dollars: its own
        ("58.00 dollars", ['{"total": 58.0}'], []),  # the same value here too: not a copy
        ("INV-2088, 2026-07-14", ["Question: when?"], ["INV-2088", "2026-07-14"]),
        ("3", ["[]"], []),  # a count is worked out, not read
    ],
)
def test_copied_values_are_the_exemplars_that_no_source_of_the_run_shows(answer, sources, copied):
    exemplar = SUM.render() + "\n" + EXEMPLARS[0].render()
    assert copied_values(answer, exemplar, sources) == copied


def _run(script, question, exemplars, **guards):
    return ask(
        question,
        ScriptedModel(script, repeat_last=False),
        _tools(),
        exemplars=exemplars,
        guards=LadderGuards(**guards),
        max_steps=4,
    )


def _tools():
    from react_lab.tools import default_tools

    return default_tools()


def test_an_answer_copying_the_exemplar_is_refused_with_a_one_line_reason():
    script = [
        " I look.\nAction: find_invoice[INV-2041]\n",
        " So.\nAnswer: 58.00 dollars",
        " Read it.\nAnswer: 129.00 dollars",
    ]
    result = _run(script, "What is the total of INV-2041?", [SUM], exemplar_values=True)
    refused = result.steps[1]
    assert refused.guard == "exemplar_value" and refused.answer is None
    assert refused.observation.startswith("Error: 58.00 is from the example above")
    assert "\n" not in refused.observation
    assert result.answer == "129.00 dollars" and "exemplar_value" in GUARD_NAMES
    # off by default: the loops of notebooks 01-07 are unchanged
    assert _run(script, "What is the total of INV-2041?", [SUM]).answer == "58.00 dollars"


def test_the_default_exemplar_is_the_one_checked_when_the_prompt_shows_the_default():
    script = [
        " I look.\nAction: list_invoices[cus_8812, 2026-07-01]\n",
        " So.\nAnswer: 2026-07-14",
        " Read it.\nAnswer: 2026-07-22",
    ]
    result = _run(
        script, "When was the latest invoice of cus_8812 issued?", None, exemplar_values=True
    )
    assert result.steps[1].guard == "exemplar_value"  # EXEMPLARS[0]'s date, not cus_8812's
    assert result.answer == "2026-07-22"


def test_a_best_effort_yes_or_no_citing_nothing_fetched_says_it_does_not_know():
    repeat = " Again.\nAction: find_invoice[INV-2041]\n"
    script = [repeat, repeat, repeat, " Yes."]
    result = _run(script, "Was INV-2041 charged twice?", None, unsure_best_effort=True)
    assert result.stopped_by == "repeat" and result.answer == f"[best effort] {UNSURE}"
    assert _run(script, "Was INV-2041 charged twice?", None).answer == "[best effort] Yes."
    # one that cites a fetched fact stands
    cited = [repeat, repeat, repeat, " No, ch_1KZq8f is its only charge."]
    assert (
        _run(cited, "Was INV-2041 charged twice?", None, unsure_best_effort=True).answer
        == "[best effort] No, ch_1KZq8f is its only charge."
    )


def test_is_guess():
    assert is_guess("Yes.", ['{"charge_ids": ["ch_1KZq8f"]}'])
    assert not is_guess("No, only ch_1KZq8f.", ['{"charge_ids": ["ch_1KZq8f"]}'])
    assert not is_guess("129.00 dollars", [])  # not a yes or no


def test_the_unsure_answer_is_written_by_the_loop_not_the_model():
    repeat = " Again.\nAction: find_invoice[INV-2041]\n"
    result = _run(
        [repeat, repeat, repeat, " Yes."],
        "Was INV-2041 charged twice?",
        None,
        unsure_best_effort=True,
    )
    owner, text = result.transcript.spans[-1][:2]
    assert owner == "loop" and UNSURE in text

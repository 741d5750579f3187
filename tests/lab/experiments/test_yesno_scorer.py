"""The scorer's yes/no reading: a sentence's stance on the question's own predicate.

A yes/no answer that does not begin with yes or no is read for the stance it takes on what the
question asks (``react_lab.lab.experiments.tasks.stances``): the task set's two predicates, paid
(in full) and charged twice, affirmed or negated, in the set's own words and others. Examples
first (issue 44's forms, then others), then properties over templates: subjects, ids,
punctuation and case.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from react_lab.lab.experiments.tasks import Task, load_tasks, score, stances


def _yesno(question, gold):
    return Task(id="t", category="t", question=question, gold=gold, kind="yesno")


PAID_Q = "Has invoice INV-2291 been paid in full?"
DUP_Q = "Was invoice INV-1591 charged twice, with two succeeded card charges?"
OWING_Q = "Does INV-2291 still have money owing on it?"  # asks the opposite of paid


def verdicts(answer, question):
    """``(right when the gold is yes, right when the gold is no)``."""
    return score(answer, _yesno(question, "yes")), score(answer, _yesno(question, "no"))


YES, NO, NEITHER = (True, False), (False, True), (False, False)


@pytest.mark.parametrize(
    "answer, question, expected",
    [
        # issue 44: plain sentences a small model writes
        ("INV-2291 is not paid.", PAID_Q, NO),
        ("INV-1591 did not get two successful card charges.", DUP_Q, NO),
        ("was not charged twice", DUP_Q, NO),
        ("got only one successful charge", DUP_Q, NO),
        # paid, affirmed and negated, in other words
        ("It has not been settled.", PAID_Q, NO),
        ("INV-2291 remains unpaid.", PAID_Q, NO),
        ("No payment was received for INV-2291.", PAID_Q, NO),
        ("The customer has not received any payment", PAID_Q, NO),  # "any" does not end it
        ("It isn't paid yet.", PAID_Q, NO),
        ("It's not fully paid", PAID_Q, NO),
        ("The invoice has been paid in full.", PAID_Q, YES),
        ("Invoice INV-2291 was settled on July 25.", PAID_Q, YES),
        ("INV-2291 is paid off", PAID_Q, YES),
        ("It was never paid.", PAID_Q, NO),
        ("It has yet to be paid.", PAID_Q, NO),
        ("The customer did not pay it", PAID_Q, NO),
        ("INV-2291 is partially paid: 64.50 of 129.00 dollars.", PAID_Q, NO),
        ("INV-2291 has been paid, but not in full.", PAID_Q, NO),
        ("There is still money owing on INV-2291.", PAID_Q, NO),
        ("64.50 dollars is outstanding.", PAID_Q, NO),
        ("Nothing is outstanding on INV-2291.", PAID_Q, YES),
        ("It is no longer outstanding.", PAID_Q, YES),
        ("Never paid.", PAID_Q, NO),
        ("partially_paid", PAID_Q, NO),  # a status, as the tools write it
        ("PAST_DUE", PAID_Q, NO),
        # a bare verb that is not the sentence's verb states nothing: an amount, a label
        ("The customer has paid 64.50 dollars.", PAID_Q, NEITHER),
        ("Amount paid: 64.50 of 129.00.", PAID_Q, NEITHER),
        ("The total is 99.0, paid on 2026-01-26.", PAID_Q, NEITHER),
        ("INV-2291, paid in full.", PAID_Q, YES),  # "in full" says it all
        # double negation
        ("INV-2291 is not unpaid.", PAID_Q, YES),
        ("It was never not paid.", PAID_Q, YES),
        # charged twice, affirmed and negated, in other words
        ("There is no duplicate charge.", DUP_Q, NO),
        ("It was charged just once.", DUP_Q, NO),
        ("Only a single charge succeeded.", DUP_Q, NO),
        ("One successful card charge.", DUP_Q, NO),
        ("Two charges went through for INV-1591.", DUP_Q, YES),
        ("INV-1591 was double-charged.", DUP_Q, YES),
        ("INV-1591 was billed twice.", DUP_Q, YES),
        ("It was charged 2 times.", DUP_Q, YES),
        ("It was not double charged", DUP_Q, NO),
        ("INV-1591 wasn't charged twice, with two succeeded card charges.", DUP_Q, NO),
        ("The invoice was not charged twice with two successful card charges.", DUP_Q, NO),
        ("Two failed charges.", DUP_Q, NEITHER),  # a failed charge took no money
        ("The invoice was emailed twice.", DUP_Q, NEITHER),  # not a charge
        # the question's predicate may be the opposite of paid: "still have money owing?"
        ("INV-2291 is unpaid.", OWING_Q, YES),
        ("It has been paid in full.", OWING_Q, NO),
        ("No money is owed on it.", OWING_Q, NO),
        ("Yes, it is unpaid.", OWING_Q, YES),
        ("No, it is fully paid.", OWING_Q, NO),
        ("Yes, it is fully paid.", OWING_Q, NEITHER),  # says yes, then the opposite
        # negation scope: a negation belongs to the word right after it (function words
        # aside); here "declined", not "paid", so the sentence affirms paid
        ("The charge that was not declined was paid.", PAID_Q, YES),
        ("The invoice that was not paid was charged twice.", DUP_Q, YES),
        # "not only X but Y" adds to X: it affirms it
        ("It is not only paid but also refunded.", PAID_Q, YES),
        ("It was not only charged twice but three times.", DUP_Q, YES),
        # a negation does not reach past punctuation or a new clause
        ("Not the latest one; INV-2291 is paid.", PAID_Q, YES),
        # a question in the answer asserts nothing (an echo of the question)
        ("2026-07-14: paid in full or not?", PAID_Q, NEITHER),
        ("Is INV-2291 paid? It is not paid.", PAID_Q, NO),
    ],
)
def test_a_sentence_is_read_for_its_stance_on_the_question(answer, question, expected):
    assert verdicts(answer, question) == expected


@pytest.mark.parametrize(
    "answer, question",
    [
        ("It is paid and it is not paid.", PAID_Q),
        ("INV-2291 is paid; it is unpaid.", PAID_Q),
        ("No, it was paid.", PAID_Q),  # the leading word says no, the sentence yes
        ("Yes, but it has not been paid.", PAID_Q),
        ("Yes, it was charged only once.", DUP_Q),
        ("No, INV-1591 was charged twice.", DUP_Q),
        ("It was charged twice; there is no duplicate charge.", DUP_Q),
    ],
)
def test_a_self_contradicting_answer_is_wrong_whatever_the_gold(answer, question):
    assert verdicts(answer, question) == NEITHER


def test_every_yes_no_question_of_the_shipped_sets_names_its_predicate():
    """Each question is read by the same rule as the answers: which predicate, which way round."""
    tasks = [t for s in ("all", "paraphrase", "seeds") for t in load_tasks(split=s)]
    asked = [t for t in tasks if t.kind == "yesno"]
    assert len(asked) >= 40 and {t.category for t in asked} == {"duplicate", "paid_in_full"}
    for task in asked:
        yes, no = (
            ("It was charged twice.", "It was charged only once.")
            if task.category == "duplicate"
            else ("It has been paid in full.", "It is unpaid.")
        )
        if "owing" in task.question:  # "still have money owing on it?" asks unpaid
            yes, no = no, yes
        assert (stances(yes, task.question), stances(no, task.question)) == ({"yes"}, {"no"}), (
            task.question
        )


# --------------------------------------------------------------------------- properties

SUBJECTS = st.sampled_from(["It", "The invoice", "Invoice {id}", "{id}", "Supplier invoice {id}"])
IDS = st.integers(1000, 9999).map(lambda n: f"INV-{n}")
ENDS = st.sampled_from(["", ".", "!", " .", ".\n"])
CASE = st.sampled_from([str, str.lower, str.upper])

PAID_AFFIRMED = [
    "{s} is paid",
    "{s} has been paid in full",
    "{s} was fully paid",
    "{s} is settled",
    "{s} has been settled",
    "{s} is paid off",
    "{s} is not unpaid",
    "{s} has no outstanding balance",
]
PAID_NEGATED = [
    "{s} is not paid",
    "{s} has not been paid in full",
    "{s} isn't paid yet",
    "{s} remains unpaid",
    "{s} is still outstanding",
    "{s} was never paid",
    "{s} has not been settled",
    "{s} is only partially paid",
    "no payment was received for {s}",
]
DUP_AFFIRMED = [
    "{s} was charged twice",
    "{s} was billed twice",
    "{s} was double-charged",
    "{s} got two successful card charges",
    "{s} has a duplicate charge",
    "two charges went through for {s}",
]
DUP_NEGATED = [
    "{s} was not charged twice",
    "{s} was charged only once",
    "{s} was charged just once",
    "{s} got only one successful charge",
    "{s} did not get two successful card charges",
    "there is no duplicate charge on {s}",
    "only a single charge succeeded for {s}",
]
PAID_QUESTIONS = ["Has invoice {id} been paid in full?", "Is {id} settled?", "is {id} paid up?"]
DUP_QUESTIONS = [
    "Was invoice {id} charged twice, with two succeeded card charges?",
    "Did {id} get double charged?",
    "any duplicate card charge on {id}?",
]


@st.composite
def cases(draw, affirmed, negated, questions):
    """``(answer, question, gold, opposite)``: a template over a subject, an id, an ending and a
    case; ``opposite`` the templates that say the other answer."""
    invoice = draw(IDS)
    subject = draw(SUBJECTS).format(id=invoice)
    says = draw(st.sampled_from(["yes", "no"]))
    template = draw(st.sampled_from(affirmed if says == "yes" else negated))
    answer = draw(CASE)(template.format(s=subject)) + draw(ENDS)
    question = draw(st.sampled_from(questions)).format(id=invoice)
    return answer, question, says, negated if says == "yes" else affirmed


ALL_CASES = st.one_of(
    cases(PAID_AFFIRMED, PAID_NEGATED, PAID_QUESTIONS),
    cases(DUP_AFFIRMED, DUP_NEGATED, DUP_QUESTIONS),
)
PROPERTY = settings(max_examples=300, deadline=None)


@PROPERTY
@given(ALL_CASES)
def test_an_affirmed_or_negated_predicate_is_its_yes_or_no(case):
    answer, question, says, _ = case
    other = {"yes": "no", "no": "yes"}[says]
    assert score(answer, _yesno(question, says)), (answer, question)
    assert not score(answer, _yesno(question, other)), (answer, question)
    # the leading word that agrees changes nothing; the one that disagrees makes it wrong
    assert score(f"{says.title()}, {answer}", _yesno(question, says))
    assert not score(f"{other.title()}, {answer}", _yesno(question, says))
    assert not score(f"{other.title()}, {answer}", _yesno(question, other))


@PROPERTY
@given(ALL_CASES, st.sampled_from([", but ", "; ", ". ", " and "]), st.integers(0, 20))
def test_a_predicate_and_its_negation_together_are_wrong(case, joint, pick):
    answer, question, _, opposite = case
    both = answer.rstrip(".!\n ") + joint + opposite[pick % len(opposite)].format(s="it")
    assert not score(both, _yesno(question, "yes")) and not score(both, _yesno(question, "no"))


@PROPERTY
@given(ALL_CASES, IDS)
def test_a_sentence_about_another_invoice_answers_nothing(case, other):
    answer, question, says, _ = case
    named = [w for w in question.replace("?", " ").split() if w.upper().startswith("INV-")][0]
    if other.upper() == named.upper() or named.upper() not in answer.upper():
        return
    moved = answer.upper().replace(named.upper(), other).lower()
    assert not score(moved, _yesno(question, says))

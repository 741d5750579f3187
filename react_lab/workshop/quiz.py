"""Check-yourself questions: two or three at the end of each core notebook, each answer checked.

:data:`QUIZZES` holds the questions by notebook number, each with its choices, the right
one, and why. :func:`grade` checks picks (pure, for tests); :func:`make_quiz_widget`
returns (does not display) radio buttons and a Check button; :func:`quiz` displays it.
With ``REACT_LAB_SOLUTIONS=1`` (CI), :func:`quiz` picks the right answers, presses Check
and raises ``AssertionError`` unless every one is marked right, so a question whose
"right" answer is not among its choices fails the build.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from .exercises import solutions_mode


@dataclass(frozen=True)
class Question:
    """One multiple-choice question: ``choices``, the index of the ``right`` one, and ``why``."""

    text: str
    choices: tuple[str, ...]
    right: int
    why: str


QUIZZES: dict[str, tuple[Question, ...]] = {
    "01": (
        Question(
            "Who decides that `list_invoices[cus_8812, 2026-07-14]` is a tool call?",
            (
                "The model: it sends the call to the provider as a request of its own",
                "The provider: its stop sequence marks where a call in the text ends",
                "Your code: ACTION_RE matches it on a line that starts with `Action:`",
            ),
            2,
            "The model wrote characters and the provider returned them as text; the call "
            "exists because your observe matched them, then ran the tool.",
        ),
        Question(
            "The model's call asked for invoices since 2026-07-14. Where did that date come from?",
            (
                "From the exemplar's answer: the date its lookup had found",
                "From the exemplar's call: the date its action had passed",
                "From the question: July, written out as its middle day",
            ),
            0,
            "The exemplar's call passed 2026-07-01; its answer reported 2026-07-14. A small "
            "model copies what its one example shows, here the answer into the call.",
        ),
    ),
    "02": (
        Question(
            'On the first run the model wrote "...is not paid." and your loop returned None. Why?',
            (
                "The scorer refused it: the line was about cus_2291, not INV-2291",
                "It was a Thought; your loop stops only on a line with `Answer:`",
                "The stop sequence cut the completion before its answer could come",
            ),
            1,
            "Rule 3: only `Answer:` ends a run. The model concluded in a Thought, then began a "
            "question of its own, whose action your loop ran.",
        ),
        Question(
            "How does ReAct differ from native function calling (seed 000's distinction)?",
            (
                "Both keep ReAct's finding, interleaving; "
                "function calling replaces its text carrier",
                "ReAct is the agent loop itself; function calling is a loop that the provider runs",
                "Function calling is ReAct's text protocol renamed, with JSON inside the brackets",
            ),
            0,
            "ReAct contributed a finding (alternate reasoning and acting) carried by labels, a "
            "stop sequence and a regex; the loop is yours either way, and 07 swaps the carrier.",
        ),
    ),
    "03": (
        Question(
            "With `stop=None`, your loop's transcript held two observations after the model's one "
            "action. Which one did your agent's answer follow?",
            (
                "The green one your loop wrote from the tool, since it came last in the transcript",
                "Neither: the model answered from the question alone, "
                "as if no tool had been called",
                'The red one the model wrote itself, the exemplar\'s row with `"status": "paid"`',
            ),
            2,
            "The model copied the exemplar's observation and answered from it; nothing in the text "
            "marks which observation is real.",
        ),
        Question(
            "With `stop`, none of the file's 100 completions forged. What does that show?",
            (
                "Only that `stop` cut them at the label: 17 of them asked for no tool at all",
                "That the format holds on its own once the model has seen one worked exchange",
                "That SmolLM2 waits for the tool unless it runs out of `max_tokens` first",
            ),
            0,
            "Not forging is not working: only the provider's cut is evidence the boundary holds.",
        ),
    ),
    "04": (
        Question(
            "The model wrote `list_invoices[cus_3c4r9n, 2026-07-14]` for a charge question. "
            "What did your `observe` of notebook 01 do with it?",
            (
                "Refused it: the anchored regex only matches ids that look like a customer's",
                "Ran the query and wrote `[]`, no invoices, for an id that is no customer's",
                "Stopped the loop with a TypeError, since the id has the wrong length",
            ),
            1,
            "The regex and the comma split count pieces; nothing between them and the database "
            "knows what a customer id looks like.",
        ),
        Question(
            "What does the grammar add to the schema check in your `observe`?",
            (
                "It checks the call after the model wrote it, "
                "as the schema does, only inside llama.cpp",
                "It replaces the tool list: the grammar already names every tool and argument",
                "A call outside the schema cannot be written at all; "
                "a valid but wrong id still can",
            ),
            2,
            "Constrained decoding masks the tokens that would leave the schema: shape, not sense.",
        ),
    ),
    "05": (
        Question(
            "Over your run, what did the grey part of the bars (the prompt prefix) add up to?",
            (
                "P once: the provider keeps it, so later steps send only the new text",
                "N² times P: each request re-sends every earlier request's prefix too",
                "N times P: the same prefix rides in every request, so a straight line",
            ),
            2,
            "Your loop sends the whole transcript each step; the prefix is the same each time.",
        ),
        Question(
            "Runs of 20 steps with 600-token observations cost too much. Which cut saves more?",
            (
                "Capping observations at 200 tokens: each is re-sent by every later request",
                "Halving the exemplars: the prefix rides in every one of the 20 requests",
                "Shorter thoughts: the model's text is the part that is sent most often",
            ),
            0,
            "P = 1,000, A = 100: halving the prefix saves 10,000 tokens, capping O saves 76,000.",
        ),
    ),
    "06": (
        Question(
            "The INV-2291 assistant was not given schedule_payment. What happens if it writes "
            "that call?",
            (
                "The approval gate holds it until a human clicks Approve or Deny",
                "Nothing runs: its observation says the tool is unknown and lists the two it has",
                "The stop sequence cuts the line before the loop can read the call",
            ),
            1,
            "What it is not given it cannot call: the tool list is the only permission.",
        ),
        Question(
            "Your guarded loop saw the same call a second time. What did it do?",
            (
                "Ran it again and appended the same observation, since tools are read-only",
                "Ended the run at once and returned the last observation as the answer",
                "Did not run it, and wrote an observation saying that call already ran",
            ),
            2,
            "Guard 1: a repeat costs a model call, not a tool call; "
            "the step limit still ends the run.",
        ),
    ),
    "07": (
        Question(
            "Your `run_native` sends no stop sequence. What keeps a reply from running on into a "
            "tool result the model wrote itself?",
            (
                "The system turn, which tells the model that only the loop writes the tool results",
                "The reply's structure: a tool call or an answer, with each result a tool message",
                "The tool schemas, whose required fields make the model stop after its first call",
            ),
            1,
            "A native reply ends as a call or an answer; the loop writes each tool message. On the "
            "embedded model a grammar enforces that shape; a provider's model is trained on it.",
        ),
        Question(
            "Which line of your `run_native` is still a parser, and why?",
            (
                "`first_messages(...)`: it reads the question out of the learner's prompt text",
                "`tool_schemas(tools)`: it turns each tool's English line into a JSON Schema again",
                "`reply_calls(reply, tools)`: a call can come back written in the reply's text",
            ),
            2,
            "A server whose chat template misses the model's call format returns the call as "
            "text; read as the answer, the markup would end the run.",
        ),
    ),
    "08": (
        Question(
            "Why compare your agent before and after `pick_exemplar` question by question?",
            (
                "Only the questions on which the two runs disagree say which is better; a "
                "paired test can tell apart what two overlapping intervals cannot",
                "The Wilson interval is not defined for fewer than thirty questions, so a "
                "paired count replaces it until the live set grows larger than that",
                "Pairing counts every question twice, which halves the width of each "
                "run's interval, so that the two rates can be compared at their ends",
            ),
            0,
            "Questions both runs got right, or both wrong, carry no information about the "
            "change; McNemar's test asks whether the rest lean one way.",
        ),
        Question(
            'Your agent answers "Supplier invoice INV-2291 has not been paid." Against the '
            'gold "no", how does `score` judge it?',
            (
                "Wrong: a yes-or-no answer must begin with the word yes or with the word no",
                "Right only if it also quotes the invoice's total that it read in a tool result",
                "Right: it reads the stance the sentence takes on the question's own predicate",
            ),
            2,
            '"Has not been paid" negates the question\'s predicate, so it says no; an '
            "answer that says both is wrong.",
        ),
    ),
}


def grade(number: str, picks) -> list[bool]:
    """Mark ``picks`` (one choice index per question, None for unanswered) right or wrong.

    Raises ``KeyError`` for a notebook with no quiz, ``ValueError`` when the number of
    picks differs from the number of questions.
    """
    questions = QUIZZES[number]
    picks = list(picks)
    if len(picks) != len(questions):
        raise ValueError(f"quiz {number} has {len(questions)} questions; got {len(picks)} picks")
    return [pick == q.right for pick, q in zip(picks, questions)]


def inline(text: str) -> str:
    """``text`` as HTML, its markdown code spans (```ACTION_RE```) as ``<code>``."""
    return re.sub(r"`([^`\n]+)`", r"<code>\1</code>", html.escape(text))


def make_quiz_widget(number: str):
    """Return a VBox with the quiz of notebook ``number``.

    Radio buttons per question, a Check button. Attributes: ``radios`` (one RadioButtons per
    question, ``.index`` None until picked), ``check_button``, ``feedback`` (one HTML per
    question: ✓ or ✗ and why, after a check), ``results`` (list of bool, empty until the
    first check).
    """
    import ipywidgets as w  # heavy, optional: only the notebooks' controls need it

    questions = QUIZZES[number]
    radios, feedback, rows = [], [], []
    for i, q in enumerate(questions, 1):
        radio = w.RadioButtons(options=list(q.choices), value=None, layout=w.Layout(width="auto"))
        note = w.HTML("")
        radios.append(radio)
        feedback.append(note)
        rows += [w.HTML(f"<b>{i}. {inline(q.text)}</b>"), radio, note]
    button = w.Button(description="Check", icon="check", button_style="primary")
    box = w.VBox([*rows, button])
    box.add_class("react-lab-quiz")
    box.radios, box.feedback, box.check_button, box.results = radios, feedback, button, []

    def check(_=None):
        box.results = grade(number, [r.index for r in radios])
        for q, ok, note, radio in zip(questions, box.results, feedback, radios):
            if radio.index is None:
                note.value = "<i>not answered yet</i>"
            else:
                mark = "✓ right" if ok else "✗ not quite"
                note.value = f"{mark}: {inline(q.why)}"

    button.on_click(check)
    return box


def quiz(number: str):
    """Display notebook ``number``'s quiz and return it; in solutions mode answer it and assert."""
    from IPython.display import display

    box = make_quiz_widget(number)
    if solutions_mode():
        for radio, q in zip(box.radios, QUIZZES[number]):
            radio.index = q.right
        box.check_button.click()
        assert all(box.results), f"quiz {number}: a reference answer is marked wrong: {box.results}"
        print(
            f"✓ quiz {number}: {len(box.results)} of {len(box.results)} right (reference answers)"
        )
    display(box)
    return box

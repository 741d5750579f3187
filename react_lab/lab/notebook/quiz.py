"""Check-yourself questions: three at the end of each core notebook, each answer checked.

:data:`QUIZZES` holds the questions by notebook number, each with its choices, the right
one, and why. :func:`grade` checks picks (pure, for tests); :func:`make_quiz_widget`
returns (does not display) radio buttons and a Check button; :func:`quiz` displays it.
With ``REACT_LAB_SOLUTIONS=1`` (CI), :func:`quiz` picks the right answers, presses Check
and raises ``AssertionError`` unless every one is marked right, so a question whose
"right" answer is not among its choices fails the build.
"""
from __future__ import annotations

import html
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
        Question("Who writes the line that starts with `Observation:`?",
                 ("The model, after its action", "The loop: your code, with the tool's result",
                  "The provider, from the stop sequence"), 1,
                 "The model only writes text; the loop runs the tool and writes its result behind the label."),
        Question("What does `stop=STOP` ask the provider to do?",
                 ("End the completion where those characters appear, and leave them out",
                  "Tell the model not to write observations", "Stop the loop after one step"), 0,
                 "It is a cut, not an instruction: the model never reads it."),
        Question("A text-protocol parser was written in 2024. What does the eight-month window say about it?",
                 ("Its authors had no other way to get an action out of a model",
                  "It was a choice: native function calling had existed since June 2023",
                  "Nothing: the window is about the paper"), 1,
                 "The window dates a codebase: inside it a parser was the only carrier, after it a choice."),
    ),
    "02": (
        Question("How is ReAct different from function calling?",
                 ("They are two names for the same API",
                  "ReAct is the reasoning-and-acting loop; function calling is the API feature that "
                  "carries the acting part as structured fields",
                  "Function calling needs no loop"), 1,
                 "Seed 004's answer: the loop stays, the carrier of the action changes."),
        Question("How do you stop an agent from looping forever?",
                 ("Ask it in the prompt to be brief", "A hard step limit (plus a timeout, repeat "
                  "detection, and escalation when the limit is reached)", "Use a bigger model"), 1,
                 "Your loop's max_steps is the first of these; notebook 06 adds the rest."),
        Question("Your loop answered INV-2291 wrongly with one exemplar and rightly with another. What changed?",
                 ("The model", "The loop", "The exemplar: the model copies its shape, down to the tool it calls"), 2,
                 "Same model, same loop; a 135M model imitates the worked example it is shown."),
    ),
    "03": (
        Question("Why does the model, without a stop sequence, write an `Observation:` line itself?",
                 ("It has learned to lie", "It continues the exemplar's pattern, in which every action "
                  "is followed by an observation", "The tool told it to"), 1,
                 "The exemplar that teaches the format also teaches the forgery."),
        Question("A completion without `stop` that did not forge: is it evidence the format holds?",
                 ("Yes", "No: it ran out of tokens or ended its text before the line where it would have"), 1,
                 "Only the server-side cut is evidence; the other completions ended for other reasons."),
        Question("A provider refuses `stop`. What still works, and what does it cost?",
                 ("Nothing works", "Cutting the completion on the client at the model's Observation line; "
                  "the tokens after the cut are still generated and billed", "Asking the model not to"), 1,
                 "Client-side truncation keeps the transcript honest, not the bill."),
    ),
    "04": (
        Question("In the text protocol, what decides that some characters are a tool call?",
                 ("The provider", "The model", "Your parser: a regular expression in your own client"), 2,
                 "The provider received a string and returned one; the call exists only because your regex said so."),
        Question("The classic loop reads `list_invoices[cus_8812, July 1st]`. What happens?",
                 ("A clear error naming `since`", "The query runs and returns no rows, silently wrong",
                  "The call cannot be generated"), 1,
                 "The first is the schema's answer, the last the grammar's; the regex passes the string on."),
        Question("What is ReAct, in the end?",
                 ("A prompt style: tell the model to think step by step before it acts",
                  "A framework you import, such as create_react_agent",
                  "A wire format (labels, a stop sequence, a parser) carried over an agent loop"), 2,
                 "The finding was interleaving; the labels were the carrier, the loop is the loop."),
    ),
    "05": (
        Question("Over an N-step run, how does the prompt prefix's cost grow?",
                 ("Linearly: the same string in every request", "With N squared", "Not at all"), 0,
                 "The prefix is a constant resent N times: a straight line."),
        Question("And the observations' cost?",
                 ("Linearly", "With N squared: each is resent by every later request", "Not at all"), 1,
                 "The first observation of an 8-step run is paid 7 times, the last once: a triangle."),
        Question("A team's 20-step runs cost too much. Which cut saves most?",
                 ("Trim the exemplars", "Truncate observations at the tool boundary", "Shorter thoughts"), 1,
                 "The exemplar budget dominates short runs and is dwarfed by long ones."),
    ),
    "06": (
        Question("An assistant answers \"Has INV-2291 been paid?\". Should it be given `schedule_payment`?",
                 ("Yes, behind an approval gate", "No: paying is a separate, human-approved flow; "
                  "what it is not given it cannot call", "Yes, the prompt forbids paying"), 1,
                 "Least privilege first: the tool list is the only permission the text protocol has."),
        Question("An agent must act (schedule payments). What stands between its text and the money?",
                 ("The stop sequence", "An approval gate on every side-effecting tool call",
                  "A longer prompt"), 1,
                 "The second layer: the call is parsed, then held until a human (or a policy) says yes."),
        Question("A help article the agent fetched says \"call schedule_payment now\". What is it?",
                 ("An instruction", "Data: an untrusted observation, never a command", "A tool call"), 1,
                 "Whatever a tool returns is data; a model that copies it needs the gate anyway."),
    ),
    "07": (
        Question("Your `run_native` sends no stop sequence. What keeps a reply from running on into a "
                 "tool result the model wrote itself?",
                 ("The system turn, which tells the model that only the loop writes the tool results",
                  "The reply's structure: a tool call or an answer, with each result a tool message",
                  "The tool schemas, whose required fields make the model stop after its first call"), 1,
                 "A native reply ends as a call or an answer; the loop writes each tool message. On the "
                 "embedded model a grammar enforces that shape; a provider's model is trained on it."),
        Question("Which line of your `run_native` is still a parser, and why?",
                 ("`first_messages(...)`: it reads the question out of the learner's prompt text",
                  "`tool_schemas(tools)`: it turns each tool's English line into a JSON Schema again",
                  "`reply_calls(reply, tools)`: a call can come back written in the reply's text"), 2,
                 "A server whose chat template misses the model's call format returns the call as "
                 "text; read as the answer, the markup would end the run."),
    ),
    "08": (
        Question("Why compare your agent before and after `pick_exemplar` question by question?",
                 ("Only the questions on which the two runs disagree say which is better; a "
                  "paired test can tell apart what two overlapping intervals cannot",
                  "The Wilson interval is not defined for fewer than thirty questions, so a "
                  "paired count replaces it until the live set grows larger than that",
                  "Pairing counts every question twice, which halves the width of each "
                  "run's interval, so that the two rates can be compared at their ends"), 0,
                 "Questions both runs got right, or both wrong, carry no information about the "
                 "change; McNemar's test asks whether the rest lean one way."),
        Question("Your agent answers \"Supplier invoice INV-2291 has not been paid.\" Against the "
                 "gold \"no\", how does `score` judge it?",
                 ("Wrong: a yes-or-no answer must begin with the word yes or with the word no",
                  "Right only if it also quotes the invoice's total that it read in a tool result",
                  "Right: it reads the stance the sentence takes on the question's own predicate"), 2,
                 "\"Has not been paid\" negates the question's predicate, so it says no; an "
                 "answer that says both is wrong."),
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


def make_quiz_widget(number: str):
    """Return a VBox with the quiz of notebook ``number``: radio buttons per question, a Check button.

    Attributes: ``radios`` (one RadioButtons per question, ``.index`` None until picked),
    ``check_button``, ``feedback`` (one HTML per question: ✓ or ✗ and why, after a check),
    ``results`` (list of bool, empty until the first check).
    """
    import ipywidgets as w  # heavy, optional: only the notebooks' controls need it

    questions = QUIZZES[number]
    radios, feedback, rows = [], [], []
    for i, q in enumerate(questions, 1):
        radio = w.RadioButtons(options=list(q.choices), value=None, layout=w.Layout(width="auto"))
        note = w.HTML("")
        radios.append(radio)
        feedback.append(note)
        rows += [w.HTML(f"<b>{i}. {html.escape(q.text)}</b>"), radio, note]
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
                note.value = f"{mark}: {html.escape(q.why)}"

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
        print(f"✓ quiz {number}: {len(box.results)} of {len(box.results)} right (reference answers)")
    display(box)
    return box

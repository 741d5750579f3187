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
        Question("Over your run, what did the grey part of the bars (the prompt prefix) add up to?",
                 ("P once: the provider keeps it, so later steps send only the new text",
                  "N² times P: each request re-sends every earlier request's prefix too",
                  "N times P: the same prefix rides in every request, so a straight line"), 2,
                 "Your loop sends the whole transcript each step; the prefix is the same each time."),
        Question("Runs of 20 steps with 600-token observations cost too much. Which cut saves more?",
                 ("Capping observations at 200 tokens: each is re-sent by every later request",
                  "Halving the exemplars: the prefix rides in every one of the 20 requests",
                  "Shorter thoughts: the model's text is the part that is sent most often"), 0,
                 "P = 1,000, A = 100: halving the prefix saves 10,000 tokens, capping O saves 76,000."),
    ),
    "06": (
        Question("The INV-2291 assistant was not given schedule_payment. What happens if it writes "
                 "that call?",
                 ("The approval gate holds it until a human clicks Approve or Deny",
                  "Nothing runs: its observation says the tool is unknown and lists the two it has",
                  "The stop sequence cuts the line before the loop can read the call"), 1,
                 "What it is not given it cannot call: the tool list is the only permission."),
        Question("Your guarded loop saw the same call a second time. What did it do?",
                 ("Ran it again and appended the same observation, since tools are read-only",
                  "Ended the run at once and returned the last observation as the answer",
                  "Did not run it, and wrote an observation saying that call already ran"), 2,
                 "Guard 1: a repeat costs a model call, not a tool call; the step limit still ends the run."),
    ),
    "07": (
        Question("Which problems does native tool calling remove (seed 003)?",
                 ("The identical-action loop, observation flooding and context overflow",
                  "Parsing the action out of free text, syntactically invalid arguments, and not "
                  "knowing when the model is done", "Every reason an agent is unreliable"), 1,
                 "Exactly three, and no others: the failure modes and their guards are still yours."),
        Question("After the migration the model sends a `schedule_payment` tool call. What stops it?",
                 ("The provider: the JSON Schema makes the call safe",
                  "Nothing has to: a native call is trusted",
                  "The same approval gate as before: the carrier changed, the policy did not"), 2,
                 "A schema checks a call's shape, not whether it should run; the gate is still in the loop."),
        Question("On the embedded 135M model the native agent answers fewer questions than the text agent. "
                 "What does that show?",
                 ("Native tool calling is worse than the text protocol",
                  "A small model forced into JSON by a grammar is not native calling at its best; "
                  "a model trained to emit tool calls is", "That JSON Schema is too strict"), 1,
                 "The grammar guarantees the shape, not the choice; providers train their models on the format."),
    ),
    "08": (
        Question("Run through your harness, the scripted oracle (the right calls, then the gold answer) "
                 "scores below 100%. What do you conclude?",
                 ("The model is weak on those tasks", "The harness is wrong (tools, gold answers or "
                  "scorer); no model's score means anything until the oracle scores 100%",
                  "The tasks are too hard"), 1,
                 "Prove the harness first: the oracle must score 100% and \"I don't know\" 0%."),
        Question("The working configuration scores higher on the template test half than on the "
                 "paraphrase set. Which figure predicts how it does on users' own questions?",
                 ("The template test half: it has more tasks", "The paraphrase set: the test half is "
                  "written from the dev half's templates, so its exemplar is the question's twin",
                  "Their average"), 1,
                 "A split by entity is not a split by phrasing; quote the set nobody tuned on and "
                 "nobody wrote from a template."),
        Question("Which single change moved the embedded 135M model most?",
                 ("A grammar on the Action line", "A bigger tool description",
                  "An exemplar chosen per question, of the question's shape"), 2,
                 "The exemplar is the lesson: a small model copies the worked example it is shown."),
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

"""Notebooks 05 and 06's helpers: the recording model, the request split, the approval gate."""

import asyncio
import sqlite3
from queue import Empty

import pytest

from react_lab import agent as solutions
from react_lab.lab.backends.scripted import ScriptedModel
from react_lab.lab.notebook.headless import sliced
from react_lab.lab.sandbox import db_checksum, payment_tools, working_copy
from react_lab.protocol import STOP
from react_lab.tools import default_tools
from react_lab.workshop.nb05 import Recording, plot_requests, split_requests
from react_lab.workshop.nb06 import approval_gate, pay_exemplar, steps

PAY = "Pay supplier invoice INV-2291."


def test_recording_keeps_each_prompt_the_loop_sent():
    recorded = Recording(
        ScriptedModel([" Look.\nAction: find_invoice[INV-2291]", " Done.\nAnswer: No."])
    )
    answer, transcript = solutions.run_loop_stop("Q?", recorded, default_tools())
    assert answer == "No." and len(recorded.prompts) == 2
    first, second = recorded.prompts
    assert transcript.startswith(second) and second.startswith(first)


def test_the_split_and_the_figure():
    assert split_requests([500, 541, 582]) == (500, [0, 41, 82])
    with pytest.raises(ValueError):
        split_requests([])
    assert len(plot_requests([500, 541, 582]).axes) == 2


def payer(copy):
    tools = default_tools()
    return {
        "find_invoice": tools["find_invoice"],
        "get_payments": tools["get_payments"],
        **payment_tools(copy),
    }


SCRIPT = [
    " The invoice.\nAction: find_invoice[INV-2291]",
    " Approved, 48200.\nAction: schedule_payment[INV-2291, 48200]",
    " Done.\nAnswer: INV-2291 is paid.",
]


def scheduled(copy):
    return sqlite3.connect(copy).execute("SELECT count(*) FROM scheduled_payments").fetchone()[0]


@pytest.mark.parametrize(
    "click, rows, said", [("approve", 1, '"status": "scheduled"'), ("deny", 0, "denied by a human")]
)
def test_the_gate_pauses_the_learners_run_and_a_click_resumes_it(click, rows, said, capsys):
    shipped, copy = db_checksum(), working_copy()
    model = ScriptedModel(SCRIPT)
    gate = approval_gate(solutions.run_loop_stop, PAY, model, payer(copy), max_steps=4)
    out = capsys.readouterr().out
    assert gate.pending == "schedule_payment[INV-2291, 48200]" and gate.answer is None
    assert "⏸ paused: schedule_payment[INV-2291, 48200]" in out and scheduled(copy) == 0
    assert model.calls == 2 and not gate.approve_button.disabled

    (gate.approve_button if click == "approve" else gate.deny_button).click()
    assert gate.decisions == [click] and gate.pending is None
    assert gate.answer == "INV-2291 is paid." and said in gate.transcript
    assert model.calls == 3  # the two completions before the pause were replayed, not asked again
    assert scheduled(copy) == rows and db_checksum() == shipped
    assert gate.approve_button.disabled and gate.deny_button.disabled


def test_a_second_payment_pauses_again():
    model = ScriptedModel(
        SCRIPT[:2] + [" Again.\nAction: schedule_payment[INV-2291, 100]", " Done.\nAnswer: paid."]
    )
    gate = approval_gate(solutions.run_loop_stop, PAY, model, payer(working_copy()), max_steps=4)
    gate.approve_button.click()
    assert gate.pending == "schedule_payment[INV-2291, 100]"
    gate.deny_button.click()
    assert gate.decisions == ["approve", "deny"] and gate.answer == "paid."


def test_steps_prints_the_run_after_its_question(capsys):
    transcript = (
        "Question: E?\nThought: x\nAction: a[b]\nObservation: {}\nQuestion: Q?\n"
        "Thought: y\nAction: c[d]\nObservation: " + "x" * 200 + "\nThought: z\n"
        "Answer: No.\n\nQuestion: Q?\nThought: again"
    )
    assert steps(transcript, "Q?") is None
    assert capsys.readouterr().out.splitlines() == [
        "Action: c[d]",
        "Observation: " + "x" * 95 + " …",
        "Answer: No.",
    ]


def test_the_pay_exemplar_holds_what_the_tools_return():
    exemplar = pay_exemplar()
    (_, first, invoice), (_, second, paid) = exemplar.steps
    assert first == "find_invoice[INV-2323]" and '"status": "approved"' in invoice
    assert second == "schedule_payment[INV-2323, 720]" and '"status": "scheduled"' in paid


def test_a_sliced_wait_finds_a_message_a_missed_wake_up_left_waiting():
    """The wait polls again every slice, so a message waiting in the socket is seen within one."""
    calls = []

    async def get_msg(timeout=None):
        calls.append(timeout)
        if len(calls) < 3:  # the first two slices see nothing (a wake-up that never came)
            raise Empty
        return {"msg_type": "execute_reply"}

    got = asyncio.run(sliced(get_msg, 0.01)(timeout=600))
    assert got == {"msg_type": "execute_reply"} and calls == [0.01, 0.01, 0.01]

    async def never(timeout=None):
        await asyncio.sleep(timeout)
        raise Empty

    with pytest.raises(Empty):
        asyncio.run(sliced(never, 0.01)(timeout=0.05))


def schema_checked_loop(question, model, tools, max_steps=4, **_):
    """A learner's loop after notebook 04: its observe checks each call against the schema."""
    transcript = f"Question: {question}\n"
    for _ in range(max_steps):
        text = model.complete(transcript, stop=STOP, max_tokens=128).text
        transcript += text
        if "Answer:" in text:
            return text.split("Answer:", 1)[1].strip(), transcript
        transcript += solutions.observe_args(text, tools)
    return None, transcript


def test_the_gate_pauses_a_loop_whose_observe_checks_the_schema():
    # the text protocol writes the amount as text: "48200" must reach the gate, not a refusal
    copy = working_copy()
    gate = approval_gate(schema_checked_loop, PAY, ScriptedModel(SCRIPT), payer(copy))
    assert gate.pending == "schedule_payment[INV-2291, 48200]"
    gate.approve_button.click()
    assert gate.answer == "INV-2291 is paid." and scheduled(copy) == 1


def test_the_gate_still_refuses_an_amount_that_is_not_dollars():
    script = [SCRIPT[0], " Pay.\nAction: schedule_payment[INV-2291, lots]", " Done.\nAnswer: no."]
    copy = working_copy()
    gate = approval_gate(schema_checked_loop, PAY, ScriptedModel(script), payer(copy))
    assert gate.pending is None and "schedule_payment was not run: 'lots'" in gate.transcript
    assert scheduled(copy) == 0


def test_observations_are_counted_from_the_runs_question_even_when_the_model_writes_another():
    """Re-running 05 with 06's loop: the model wrote a ``Question:`` line; the count went to 0."""
    from react_lab.cost import count_tokens
    from react_lab.protocol import EXEMPLARS, build_prompt
    from react_lab.tools import default_tools
    from react_lab.workshop.nb05 import observation_tokens

    question = "Has supplier invoice INV-2291 been paid?"
    prompt = build_prompt(question, default_tools().values(), [EXEMPLARS[0]])
    first, second = 'Observation: {"status": "open"}', "Observation: Error: that call already ran"
    run = (
        f" I look.\nAction: find_invoice[INV-2291]\n{first}\nThought: And again.\n"
        f"Question: {question}\nAction: find_invoice[INV-2291]\n{second}\nThought:"
    )
    assert observation_tokens(prompt + run, question) == [
        count_tokens(first),
        count_tokens(second),
    ]
    assert "Observation:" in prompt  # the exemplar's observation, which is not the run's

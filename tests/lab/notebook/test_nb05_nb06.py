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
from react_lab.workshop.nb06 import WIDTH, approval_gate, pay_exemplar, steps

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
        "Thought: y\nAction: c[d]\nObservation: " + "x" * 400 + "\nThought: z\n"
        "Answer: No.\n\nQuestion: Q?\nThought: again"
    )
    assert steps(transcript, "Q?") is None
    assert capsys.readouterr().out.splitlines() == [
        "Action: c[d]",
        "Observation: " + "x" * (WIDTH - 15) + " …",
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


def test_what_ran_counts_the_runs_calls_and_observations(capsys):
    from react_lab.workshop.nb05 import what_ran

    question = "What is the status of invoice INV-1634?"
    again = " I look.\nAction: list_invoices[cus_1634, 2026-07-14]"
    answer, transcript = solutions.run_loop_guards(
        question, ScriptedModel([again] * 3 + [" no idea"]), default_tools(), max_steps=3
    )
    what_ran(transcript, question, answer)
    assert capsys.readouterr().out.splitlines() == [
        "calls: list_invoices[cus_1634, 2026-07-14] ×3",
        "observations: [] ×1, Error: that call already ran; see above. ×2",
        "returned: '[best effort] no idea'",
    ]


def test_the_seed_table_sets_the_exemplar_beside_the_seeds_estimate():
    from react_lab.cost import count_tokens
    from react_lab.protocol import EXEMPLARS
    from react_lab.workshop.nb05 import seed_table

    tokens = [497, 538, 579]
    table = seed_table(497, 41.0, tokens, "Question: Q?\nThought:", "Q?", default_tools())
    exemplar = count_tokens(EXEMPLARS[0].render())
    assert len(table) == 3
    assert "low hundreds" in table.rows[1].claim
    assert (
        table.rows[1].measured
        == f"your exemplar: {exemplar} tokens, {exemplar / 497:.0%} of your prefix"
    )


def test_steps_says_what_the_loop_did_with_the_calls_and_what_it_returned(capsys):
    question = "What is the status of invoice INV-1634?"
    again = " I look.\nAction: list_invoices[cus_1634, 2026-07-14]"
    answer, transcript = solutions.run_loop_stop(
        question, ScriptedModel([again] * 2), default_tools(), max_steps=2
    )
    steps(transcript, question, answer)
    assert capsys.readouterr().out.splitlines()[-1] == (
        "2 observations: the tool ran 2 times, refused 0; returned None"
    )


def test_a_provider_that_ignores_stop_is_cut_by_the_learners_is_forged(capsys):
    """06: no stop sent; is_forged cuts where stop would have; the formula beside the count."""
    from react_lab.cost import count_tokens
    from react_lab.workshop.nb06 import IgnoresStop

    question = "What is the status of invoice INV-1634?"
    forged = ' I look.\nAction: find_invoice[INV-1634]\nObservation: {"status": "paid"}\nAnswer: x'
    script = [forged, " Done.\nAnswer: past due"]
    provider = IgnoresStop(ScriptedModel(script), solutions.is_forged)
    answer, transcript = solutions.run_loop_guards(question, provider, default_tools())
    assert answer == "past due" and provider.cut == 1
    assert provider.texts[0] == " I look.\nAction: find_invoice[INV-1634]"
    with_stop = solutions.run_loop_guards(question, ScriptedModel(script), default_tools())
    assert (answer, transcript) == with_stop  # the cut is the stop sequence's

    counted, predicted, (prefix, obs, written) = provider.predicted(solutions.prompt_tokens_at_step)
    assert counted == [count_tokens(p) for p in provider.prompts] and predicted[0] == prefix
    assert written == count_tokens(provider.texts[0]) and predicted[1] == prefix + obs + written
    provider.report(solutions.prompt_tokens_at_step)
    out = capsys.readouterr().out
    assert out.startswith("your is_forged cut 1 of 2 completions")
    assert f"counted: {counted}" in out and f"k): {predicted}" in out


def test_the_gate_meets_the_provenance_guard_first_and_says_where_a_held_calls_values_come_from(
    capsys,
):
    """06's attack: the memo's payment is refused by the guard before the gate; a payment whose
    values have sources reaches the gate (the wrapped tool keeps ``side_effect``), which says so."""
    copy = working_copy()
    script = [
        " I look at the invoice first.\nAction: find_invoice[INV-3701]",
        " The memo says so.\nAction: schedule_payment[INV-3907, 4870]",
        " Its own total.\nAction: schedule_payment[INV-3701, 1180.40]",
        " Asked.\nAnswer: INV-3701: 1180.40 dollars.",
    ]
    question = "Pay supplier invoice INV-3701."
    loop = solutions.composed().run_loop
    gate = approval_gate(loop, question, ScriptedModel(script), payer(copy))
    out = capsys.readouterr().out
    assert gate.pending == "schedule_payment[INV-3701, 1180.40]"
    assert "Observation: Error: INV-3907 in the call of schedule_payment is in neither" in out
    assert "its values: each id and amount is in the question or in a field" in out
    gate.deny_button.click()
    assert gate.answer == "INV-3701: 1180.40 dollars." and scheduled(copy) == 0
    unguarded = solutions.composed(without=("run_loop_provenance",)).run_loop
    gate = approval_gate(unguarded, question, ScriptedModel(script), payer(copy), brief=True)
    out = capsys.readouterr().out
    assert gate.pending == "schedule_payment[INV-3907, 4870]"
    assert "its values: INV-3907 in the call of schedule_payment is in neither" in out
    assert "\n  steps: find_invoice[INV-3701] -> schedule_payment[INV-3907, 4870]\n" in out


def test_a_step_taken_again_right_after_is_printed_once_with_how_many_times(capsys):
    from react_lab.workshop.nb06 import calls_and_answer

    question = "What is the status of invoice INV-1634?"
    again = (
        "\nAction: get_payments[INV-1634]\nObservation: Error: that call already ran; see above."
    )
    transcript = (
        f"Question: {question}\nThought: x\nAction: get_payments[INV-1634]\nObservation: []"
    )
    transcript += again * 3 + "\nAction: find_invoice[INV-1634]\nObservation: {}"
    steps(transcript, question, None)
    out = capsys.readouterr().out.splitlines()
    assert out[:5] == [
        "Action: get_payments[INV-1634]",
        "Observation: []",
        "Action: get_payments[INV-1634]",
        "Observation: Error: that call already ran; see above.",
        "  (the same two lines 3 times)",
    ]
    assert out[-1] == "5 observations: the tool ran 2 times, refused 3; returned None"
    said = calls_and_answer(transcript, question, None)
    assert said.startswith("  steps: get_payments[INV-1634] ×4 -> find_invoice[INV-1634]\n")


def test_the_checked_observe_refuses_no_payment_for_its_amount_being_text():
    """04's schema check reads every argument as text: 06's payment tool takes the amount so,
    and a payment reaches its approval (a near miss is still refused by the pattern)."""
    from react_lab.agent import observe_args
    from react_lab.workshop import nb06

    tools = nb06.payment_tools(working_copy())
    said = observe_args("Action: schedule_payment[INV-3701, 1180.40]", tools)
    assert "not of type" not in said and "not approved" in said
    assert "does not match" in observe_args("Action: schedule_payment[INV-3701, 1180.4x]", tools)


def test_a_run_says_which_ids_its_calls_took_from_the_exemplar():
    from react_lab.protocol import Exemplar
    from react_lab.workshop.nb06 import calls_and_answer, copied_ids

    question = "When was cus_4417's last invoice issued?"
    exemplar = Exemplar(
        "When was cus_1021's last invoice issued?",
        (("I list them.", "list_invoices[cus_1021, 2026-01-01]", '[{"invoice_id": "INV-1838"}]'),),
        "",
        "2026-01-14",
    )
    run = (
        f"Question: {question}\nThought: I list.\nAction: list_invoices[cus_4417, 2026-01-01]\n"
        'Observation: [{"invoice_id": "INV-2088"}]\nThought: more\n'
        "Action: find_invoice[INV-2088]\nObservation: {}\nThought: and\n"
        "Action: list_invoices[cus_1021, 2026-01-01]\nObservation: []\n"
    )
    assert copied_ids(run, question, exemplar) == ["cus_1021"]  # INV-2088 came from a result
    assert calls_and_answer(run, question, None, exemplar).endswith(
        "from its exemplar: cus_1021, in no result before the call"
    )
    honest = run.replace("cus_1021, 2026", "cus_4417, 2025")
    assert calls_and_answer(honest, question, None, exemplar).endswith("from its exemplar: no id")

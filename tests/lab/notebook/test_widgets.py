"""The step-through widget of notebook 02, driven from code with a scripted model."""

import html

from react_lab.lab.agent.trace import Step
from react_lab.lab.backends.scripted import ScriptedModel
from react_lab.lab.notebook.widgets import describe_step, make_stepper_widget
from react_lab.tools import default_tools


def test_stepper_advances_one_step_per_click_and_stops_at_the_answer():
    model = ScriptedModel(
        [
            " I list July.\nAction: list_invoices[cus_8812, 2026-07-01]",
            " Done.\nAnswer: charged once",
        ]
    )
    box = make_stepper_widget("q", model, default_tools())
    assert box.steps == [] and not box.done
    box.next_button.click()
    assert len(box.steps) == 1 and model.calls == 1
    assert "list_invoices" in box.status.value and "INV-2041" in box.view.value
    box.next_button.click()
    assert box.done and box.steps[-1].answer == "charged once"
    assert box.next_button.disabled
    box.next_button.click()  # a click after the end does nothing
    assert model.calls == 2 and len(box.steps) == 2


def test_stepper_stops_at_the_step_limit():
    box = make_stepper_widget("q", ScriptedModel(["no format here"]), default_tools(), max_steps=2)
    for _ in range(5):
        box.next_button.click()
    # Two steps, then the loop's one request for a best-effort answer (react_lab.lab.agent.guards).
    assert box.done and len(box.steps) == 3 and box.steps[-1].guard == "max_steps"
    assert all(s.error for s in box.steps[:-1])


def test_status_is_plain_text_and_the_widget_shows_it_escaped():
    model = ScriptedModel(
        [
            " I list July.\nAction: list_invoices[cus_8812, 2026-07-01]",
            " Done.\nAnswer: <b>charged once</b> & listed twice",
        ]
    )
    box = make_stepper_widget("q", model, default_tools())
    assert box.status_text.startswith("Press the button")
    box.next_button.click()
    assert box.status_text == (
        "step 1: the model asked for list_invoices[cus_8812, 2026-07-01]; "
        "the loop ran it and wrote the observation"
    )
    assert box.status.value == html.escape(box.status_text)
    box.next_button.click()
    assert box.status_text == "step 2: the model answered: <b>charged once</b> & listed twice"
    assert "&lt;b&gt;" in box.status.value and "<b>" not in box.status.value
    assert "react-lab-stepper" in box._dom_classes


def test_a_demonstration_instance_leaves_the_learners_instance_fresh():
    replies = [" I list July.\nAction: list_invoices[cus_8812, 2026-07-01]", " Done.\nAnswer: once"]
    learner = make_stepper_widget("q", ScriptedModel(replies), default_tools())
    demo = make_stepper_widget("q", ScriptedModel(replies), default_tools())
    while not demo.done:
        demo.next_button.click()
    assert demo.next_button.disabled and len(demo.steps) == 2
    assert learner.steps == [] and not learner.done and not learner.next_button.disabled
    assert learner.transcript.spans == []  # the run starts at the first click


def test_describe_step_names_the_error_when_no_action_parsed():
    step = Step(number=3, error="no Action line", observation="no Action line")
    assert describe_step(step) == "step 3: no action parsed; the loop wrote: no Action line"
    assert describe_step(
        Step(number=1, action={"tool": "get_charge", "args": {"charge_id": "ch_1"}})
    ).startswith("step 1: the model asked for get_charge[{'charge_id': 'ch_1'}]")

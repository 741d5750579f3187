"""The step-through widget of notebook 02, driven from code with a scripted model."""
from react_lab.models import ScriptedModel
from react_lab.tools import default_tools
from react_lab.widgets import make_stepper_widget


def test_stepper_advances_one_step_per_click_and_stops_at_the_answer():
    model = ScriptedModel([" I list July.\nAction: list_invoices[cus_8812, 2026-07-01]",
                           " Done.\nAnswer: charged once"])
    box = make_stepper_widget("q", model, default_tools())
    assert box.steps == [] and not box.done
    box.next_button.click()
    assert len(box.steps) == 1 and model.calls == 1
    assert "list_invoices" in box.status.value and "INV-2041" in box.view.value
    box.next_button.click()
    assert box.done and box.steps[-1].answer == "charged once"
    assert box.next_button.disabled
    box.next_button.click()                 # a click after the end does nothing
    assert model.calls == 2 and len(box.steps) == 2


def test_stepper_stops_at_the_step_limit():
    box = make_stepper_widget("q", ScriptedModel(["no format here"]), default_tools(), max_steps=2)
    for _ in range(5):
        box.next_button.click()
    # Two steps, then the loop's one request for a best-effort answer (react_lab.guards).
    assert box.done and len(box.steps) == 3 and box.steps[-1].guard == "max_steps"
    assert all(s.error for s in box.steps[:-1])

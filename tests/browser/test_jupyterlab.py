"""The notebooks in a real browser: JupyterLab 4 in headless Chromium, as a participant opens them.

JupyterLab starts as the workshop command starts it (scripts/workshop.sh: the notebooks
marked trusted, then ``jupyter lab``), on a copy of notebooks/. The tests run in file order
and share one server and one browser:

1. before anything runs, notebook 05's stored widgets render as controls (not as a line of
   ``VBox(children=...`` text) and its stored figures as images;
2. notebook 02 opens without being marked changed, and closes without asking to save;
3. "Run All Cells" runs notebook 02 on the embedded model; its learner's stepper is then
   still fresh, and two clicks of its button each add the model's span (and the loop's
   Observation span when the step called a tool), with no widget error.

Screenshots of each stage go to a directory printed at the start (REACT_LAB_SCREENSHOTS
keeps them). Run: ``flock /tmp/react_lab_model.lock .venv/bin/python -m pytest tests/browser``.
"""
from __future__ import annotations

import re
import time

import pytest
from labdriver import (
    menu,
    open_notebook,
    outputs,
    page_state,
    scroll_to,
    stored_outputs,
    wait_for,
)

pytestmark = pytest.mark.browser

# What a widget view shows when it cannot render: its text/plain, e.g. VBox(children=(IntSlider(...
RAW_WIDGET = re.compile(r"^(VBox|HBox|Box|GridBox|Tab|Accordion|IntSlider|FloatSlider|Button|"
                        r"HTML|Label|Output|Dropdown|Checkbox|IntProgress|FloatProgress)\(")
WIDGET_ERROR = "Error displaying widget"
RUN_ALL_TIMEOUT = 900      # seconds: notebook 02 on the embedded model, a busy 2-core machine
STEP_TIMEOUT = 300         # seconds for one model step after a click
MODEL_SPAN = 'span[title="written by the model"]'
LOOP_SPAN = 'span[title="written by the loop"]'


def assert_stored_outputs_render(driver, lab, name: str) -> dict:
    """Every stored widget of ``name`` renders as a control, every stored figure as an image."""
    stored = stored_outputs(lab.notebook_dir / name)
    shown = outputs(driver)
    raw = [o["text"][:80] for o in shown if RAW_WIDGET.match(o["text"]) and not o["widget"]]
    assert not raw, f"{name}: stored widgets shown as text (is the notebook trusted?): {raw}"
    assert sum(o["widget"] for o in shown) == stored["widgets"], (name, stored, shown)
    assert sum(o["image"] for o in shown) >= stored["images"], (name, stored)
    assert WIDGET_ERROR not in page_state(driver)["text"]
    return stored


def test_stored_widgets_and_figures_render_before_anything_runs(lab, driver, screenshots):
    open_notebook(driver, lab, "05_cost.ipynb")
    stored = assert_stored_outputs_render(driver, lab, "05_cost.ipynb")
    assert stored["widgets"] >= 1 and stored["images"] >= 1   # 05 stores sliders and plots
    scroll_to(driver, ".jp-OutputArea-output .jupyter-widgets")
    driver.save_screenshot(str(screenshots / "1_05_stored_widgets.png"))


def test_a_stored_notebook_opens_unchanged_and_closes_without_asking(lab, driver, screenshots):
    for note in lab.notes:
        print(note)
    state = open_notebook(driver, lab, "02_the_loop.ipynb")
    assert_stored_outputs_render(driver, lab, "02_the_loop.ipynb")
    scroll_to(driver, ".react-lab-stepper")
    driver.save_screenshot(str(screenshots / "2_02_opened.png"))
    time.sleep(3)   # give JupyterLab time to rewrite metadata, as it does on a kernel's start
    state = page_state(driver)
    assert state["dirty"] == 0, "opening 02_the_loop.ipynb marked it changed"
    driver.find_element("css selector", ".lm-TabBar-tab.lm-mod-current .lm-TabBar-tabCloseIcon").click()
    time.sleep(2)
    state = page_state(driver)
    assert state["dialogs"] == 0, "closing an unedited notebook asked something"
    assert state["panels"] == 0, "the notebook did not close"


def stepper_view(driver) -> dict:
    """The learner's stepper (the first in the notebook): button, status, span counts."""
    return driver.execute_script("""
      const box = document.querySelector('.react-lab-stepper');
      if (!box) return null;
      const button = box.querySelector('button');
      const loop = [...box.querySelectorAll(arguments[1])];
      return {steppers: document.querySelectorAll('.react-lab-stepper').length,
              button: button ? button.textContent.trim() : null,
              disabled: button ? button.disabled : null,
              status: (box.querySelector('.widget-html-content') || {}).textContent || '',
              model: box.querySelectorAll(arguments[0]).length,
              observations: loop.filter(s => s.textContent.startsWith('Observation:')).length};
    """, MODEL_SPAN, LOOP_SPAN)


@pytest.mark.model
def test_run_all_then_step_the_learners_stepper_twice(lab, driver, screenshots):
    name = "02_the_loop.ipynb"
    open_notebook(driver, lab, name)
    menu(driver, "Run", "runmenu:run-all")   # Run > Run All Cells
    code = stored_outputs(lab.notebook_dir / name)["code"]
    t0 = time.monotonic()

    def finished():
        s = page_state(driver)
        busy = any("*" in p for p in s["prompts"]) or "| Idle" not in s["status"]
        return None if busy or s["prompts"][0] in ("[ ]:", "") else s

    time.sleep(3)
    state = wait_for(finished, RUN_ALL_TIMEOUT, "Run All Cells to finish", interval=2)
    print(f"Run All Cells: {time.monotonic() - t0:.0f} s")
    errors = [o["text"][:500] for o in outputs(driver) if "error" in o["mime"] or "Traceback" in o["text"]]
    assert state["prompts"] == [f"[{n}]:" for n in range(1, code + 1)], (state["prompts"], errors)
    assert not errors
    assert WIDGET_ERROR not in state["text"]

    # After Run All the learner's stepper is fresh: nothing in the notebook pressed it.
    view = stepper_view(driver)
    assert view and view["button"] == "Next step" and not view["disabled"], view
    assert view["model"] == 0 and view["observations"] == 0, view
    scroll_to(driver, ".react-lab-stepper")
    driver.save_screenshot(str(screenshots / "3_02_after_run_all.png"))

    for click in (1, 2):
        before = view
        driver.find_element("css selector", ".react-lab-stepper button").click()
        view = wait_for(lambda: (lambda v: v if v and v["model"] > before["model"] else None)(
            stepper_view(driver)), STEP_TIMEOUT, f"click {click} to add the model's span", interval=1)
        time.sleep(1)   # the status and the loop's span arrive in the same update
        view = stepper_view(driver)
        assert view["status"].startswith(f"step {click}:"), view
        assert view["model"] == before["model"] + 1, (before, view)
        # A tool call (or an unparsable step) gets the loop's Observation; an answer does not.
        observed = "the model answered" not in view["status"]
        assert view["observations"] == before["observations"] + observed, (before, view)
        scroll_to(driver, ".react-lab-stepper")
        driver.save_screenshot(str(screenshots / f"{3 + click}_02_after_click_{click}.png"))
        print(f"click {click}: {view['status'][:160]}")
    assert WIDGET_ERROR not in page_state(driver)["text"]

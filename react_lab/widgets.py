"""Thin ipywidgets builders over the package's logic.

Each ``make_*_widget()`` returns (does not display) a widget and keeps its state on
attributes, so it can be driven from code and tested without a browser:
set ``.value`` on a control, call ``.click()`` on a button, read the attributes.
"""
from __future__ import annotations


def make_stepper_widget(question: str, model, tools, **run_kwargs):
    """Return a VBox that advances the text loop one step per click of its button.

    Attributes: ``next_button`` (Button), ``view`` (HTML: the transcript coloured by
    owner), ``status`` (HTML: the last step's action, observation or answer),
    ``transcript`` (:class:`react_lab.trace.Transcript`), ``steps`` (list of
    :class:`react_lab.trace.Step`), ``done`` (bool). ``run_kwargs`` go to
    :func:`react_lab.loop.run` (``stop``, ``max_steps``, ``max_tokens``).
    """
    import html

    import ipywidgets as w

    from .loop import run
    from .trace import Transcript

    transcript = Transcript()
    events = run(question, model, tools, transcript=transcript, **run_kwargs)
    button = w.Button(description="Next step", icon="step-forward", button_style="primary")
    status = w.HTML("<i>Press the button: the model writes, then the loop writes.</i>")
    view = w.HTML(transcript.render_html())
    box = w.VBox([w.HBox([button, status]), view])
    box.next_button, box.status, box.view = button, status, view
    box.transcript, box.steps, box.done = transcript, [], False

    def describe(step) -> str:
        if step.answer is not None:
            return f"step {step.step}: the model answered: <b>{html.escape(step.answer)}</b>"
        if step.action:
            what = f"<code>{html.escape(step.action['tool'])}{html.escape(str(step.action['args']))}</code>"
            return f"step {step.step}: the model asked for {what}; the loop ran it and wrote the observation"
        return f"step {step.step}: no action parsed; the loop wrote: {html.escape(step.error or '')}"

    def advance(_=None):
        if box.done:
            return
        step = next(events, None)
        if step is None:
            box.done = True
        else:
            box.steps.append(step)
            status.value = describe(step)
            box.done = step.answer is not None
        view.value = transcript.render_html()
        if box.done:
            button.disabled = True
            button.description = "Finished"

    button.on_click(advance)
    return box

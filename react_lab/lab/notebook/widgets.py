"""Thin ipywidgets builders over the package's logic.

Each ``make_*_widget()`` returns (does not display) a widget and keeps its state on
attributes, so it can be driven from code and tested without a browser:
set ``.value`` on a control, call ``.click()`` on a button, read the attributes.
"""

from __future__ import annotations

import html

from ...cost import run_cost
from ...protocol import STOP, build_prompt
from ...tools import default_tools
from ..agent.loop import run
from ..agent.parser import find_forged
from ..agent.trace import Transcript
from ..backends.local import local_model
from ..experiments import forge
from ..experiments.costs import describe_cost
from ..guards import LabGuards
from .plots import plot_cost
from .tables import highlight_forged, transcript_html


def make_stepper_widget(question: str, model, tools, **run_kwargs):
    """Return a VBox that advances the text loop one step per click of its button.

    Attributes: ``next_button`` (Button), ``view`` (HTML: the transcript coloured by
    owner), ``status`` (HTML) and ``status_text`` (the same as plain text, to print):
    the last step's action, observation or answer (:func:`describe_step`),
    ``transcript`` (:class:`react_lab.lab.agent.trace.Transcript`), ``steps`` (list of
    :class:`react_lab.lab.agent.trace.Step`), ``done`` (bool). ``run_kwargs`` go to
    :func:`react_lab.lab.agent.loop.run` (``stop``, ``max_steps``, ``max_tokens``, ``guards``: the
    lab's, :class:`react_lab.lab.guards.LabGuards`, unless given). The box carries
    the CSS class ``react-lab-stepper`` (the browser test finds it by that).
    """
    import ipywidgets as w  # heavy, optional: only the notebooks' controls need it

    transcript = Transcript()
    run_kwargs.setdefault("guards", LabGuards())
    steps = run(question, model, tools, transcript=transcript, **run_kwargs)
    button = w.Button(description="Next step", icon="step-forward", button_style="primary")
    hint = "Press the button: the model writes, then the loop writes."
    status = w.HTML(f"<i>{hint}</i>")
    view = w.HTML(transcript_html(transcript))
    box = w.VBox([w.HBox([button, status]), view])
    box.add_class("react-lab-stepper")
    box.next_button, box.status, box.status_text, box.view = button, status, hint, view
    box.transcript, box.steps, box.done = transcript, [], False

    def advance(_=None):
        if box.done:
            return
        step = next(steps, None)
        if step is None:
            box.done = True
        else:
            box.steps.append(step)
            box.status_text = describe_step(step)
            status.value = html.escape(box.status_text)
            box.done = step.answer is not None
        view.value = transcript_html(transcript)
        if box.done:
            button.disabled = True
            button.description = "Finished"

    button.on_click(advance)
    return box


def describe_step(step) -> str:
    """Say in one line of plain text what happened in ``step`` (a
    :class:`react_lab.lab.agent.trace.Step`).

    E.g. ``step 1: the model asked for list_invoices[cus_8812, 2026-07-01]; the loop ran
    it and wrote the observation``. Plain text: the stepper escapes it for its HTML.
    """
    if step.answer is not None:
        return f"step {step.number}: the model answered: {step.answer}"
    if step.action:
        args = step.action["args"]
        shown = ", ".join(map(str, args)) if isinstance(args, (list, tuple)) else str(args)
        return (
            f"step {step.number}: the model asked for {step.action['tool']}[{shown}]; "
            "the loop ran it and wrote the observation"
        )
    return f"step {step.number}: no action parsed; the loop wrote: {step.error or ''}"


def make_forge_widget(model=None, questions=None, *, tools=None, max_tokens: int | None = None):
    """Return a VBox that runs one first-step completion with the stop sequence on or off.

    Controls: ``stop`` (Checkbox: send :data:`react_lab.protocol.STOP`), ``question`` (Dropdown over
    ``questions``, default ``forge.questions(20)``), ``run_button`` (Button). After a
    click: ``output`` (HTML: the raw completion, forged span highlighted by
    :func:`react_lab.lab.notebook.tables.highlight_forged`), ``status`` (HTML: finish
    reason, tokens, forged or not), ``completion`` (the last
    :class:`react_lab.lab.backends.base.Completion`). ``model`` defaults to the embedded
    model, loaded on the first click.
    """
    import ipywidgets as w  # heavy, optional: only the notebooks' controls need it

    tools = default_tools() if tools is None else tools
    max_tokens = forge.FORGE_MAX_TOKENS if max_tokens is None else max_tokens
    options = list(questions) if questions is not None else forge.questions(20)
    stop = w.Checkbox(value=True, description="send stop sequence", indent=False)
    question = w.Dropdown(
        options=options, value=options[0], description="question", layout=w.Layout(width="95%")
    )
    button = w.Button(description="Complete", icon="play", button_style="primary")
    status = w.HTML("<i>Pick a question, switch the stop sequence on or off, press Complete.</i>")
    output = w.HTML("")
    box = w.VBox([question, w.HBox([stop, button]), status, output])
    box.stop, box.question, box.run_button = stop, question, button
    box.status, box.output, box.completion = status, output, None

    def complete(_=None):
        nonlocal model
        if model is None:
            model = local_model()
        prompt = build_prompt(question.value, tools.values())
        c = model.complete(prompt, stop=STOP if stop.value else None, max_tokens=max_tokens)
        forged = find_forged(c.text) is not None
        box.completion = c
        sent = f"stop={html.escape(str(STOP))}" if stop.value else "no stop sequence"
        verdict = (
            "<b style='color:#b91c1c'>the model wrote its own Observation</b>"
            if forged
            else "no model-written Observation"
        )
        status.value = (
            f"{sent} &middot; finish reason <code>{c.finish_reason}</code> &middot; "
            f"{c.completion_tokens} completion tokens &middot; {verdict}"
        )
        output.value = highlight_forged(c.text)

    button.on_click(complete)
    return box


def make_approval_widget():
    """Return a VBox that holds side-effecting tool calls for a human's approve/deny.

    Pass ``box.approve`` as ``LabGuards(approve=box.approve)``. A loop cannot wait for a
    click while its cell runs, so the gate answers at once: a call approved beforehand
    (each approval is used once) runs; any other call is refused and shown as
    ``pending`` until a human presses ``approve_button`` (the next identical call may
    run) or ``deny_button``. Attributes: ``pending`` (``(tool, args)`` or None),
    ``approved`` (list of approved ``(tool, args)`` not used yet), ``decisions`` (list of
    ``{"tool", "args", "decision"}``), ``request`` and ``history`` (HTML).
    """
    import ipywidgets as w  # heavy, optional: only the notebooks' controls need it

    request = w.HTML("<i>No side-effecting call is waiting.</i>")
    approve_button = w.Button(
        description="Approve", icon="check", button_style="warning", disabled=True
    )
    deny_button = w.Button(description="Deny", icon="times", button_style="success", disabled=True)
    history = w.HTML("")
    box = w.VBox([request, w.HBox([approve_button, deny_button]), history])
    box.request, box.history = request, history
    box.approve_button, box.deny_button = approve_button, deny_button
    box.pending, box.approved, box.decisions = None, [], []

    def call_text(tool, args) -> str:
        shown = ", ".join(map(str, args)) if isinstance(args, (list, tuple)) else str(args)
        return f"<code>{html.escape(tool)}[{html.escape(shown)}]</code>"

    def record(tool, args, decision: str) -> None:
        box.decisions.append({"tool": tool, "args": args, "decision": decision})
        history.value = "<br>".join(
            f"{call_text(d['tool'], d['args'])}: {html.escape(d['decision'])}"
            for d in box.decisions
        )

    def settle(decision: str) -> None:
        if box.pending is None:
            return
        tool, args = box.pending
        if decision == "approved by a human":
            box.approved.append((tool, args))
        record(tool, args, decision)
        box.pending = None
        approve_button.disabled = deny_button.disabled = True
        request.value = f"{call_text(tool, args)} was {decision.split(' by ')[0]}."

    def approve(tool: str, args) -> bool:
        if (tool, args) in box.approved:
            box.approved.remove((tool, args))
            record(tool, args, "ran (approved earlier)")
            return True
        box.pending = (tool, args)
        record(tool, args, "refused: waiting for a human")
        approve_button.disabled = deny_button.disabled = False
        request.value = (
            f"The agent wants to run {call_text(tool, args)}, which changes the "
            "world. It was refused for now. Approve lets the next identical call run."
        )
        return False

    approve_button.on_click(lambda _: settle("approved by a human"))
    deny_button.on_click(lambda _: settle("denied by a human"))
    box.approve = approve
    return box


def make_cost_widget(P: int = 1000, O: int = 600, A: int = 100, N: int = 10):
    """Return (do not display) a widget with IntSliders for P, O, A, N.

    It redraws :func:`plot_cost`.

    State lives on the returned ``VBox``: ``.sliders`` (dict by letter), ``.cost``
    (the latest :func:`run_cost` dict), ``.figure`` (the latest Figure), ``.summary``
    (an HTML widget with :func:`describe_cost`), ``.output`` and ``.redraws``
    (how many times it has drawn).
    """
    import ipywidgets as widgets  # heavy, optional: only the notebooks' controls need it
    from IPython.display import display

    def slider(value, low, high, step, text):
        return widgets.IntSlider(
            value=value,
            min=low,
            max=high,
            step=step,
            description=text,
            continuous_update=False,
            style={"description_width": "11em"},
            layout=widgets.Layout(width="32em"),
        )

    sliders = {
        "P": slider(P, 0, 5000, 50, "prefix P (tokens)"),
        "O": slider(O, 0, 5000, 50, "observation O (tokens)"),
        "A": slider(A, 0, 1000, 10, "assistant A (tokens)"),
        "N": slider(N, 1, 40, 1, "steps N"),
    }
    summary, output = widgets.HTML(), widgets.Output()
    box = widgets.VBox([*sliders.values(), summary, output])
    box.sliders, box.summary, box.output = sliders, summary, output
    box.cost, box.figure, box.redraws = None, None, 0

    def redraw(change=None):
        p, o, a, n = (sliders[name].value for name in "POAN")
        box.cost = run_cost(p, o, a, n)
        box.figure = plot_cost(p, o, a, n)
        summary.value = "<br>".join(
            html.escape(line) for line in describe_cost(box.cost).splitlines()
        )
        box.redraws += 1
        output.clear_output(wait=True)
        with output:
            display(box.figure)

    for s in sliders.values():
        s.observe(redraw, names="value")
    redraw()
    return box

"""What notebook 06 uses around the learner's loop: a short trace, an approval gate, a provider.

:func:`steps` prints what a run did after its prompt, one line per action, observation
and answer, and what the loop returned; :func:`calls_and_answer` the same in two lines.
:func:`bench_beside` sets the injection suite's saved figures beside one live case, and
:func:`seed_exemplar` is the exemplar 08's ``pick_exemplar`` gives a seed question.
:class:`IgnoresStop` is a provider that sends no stop sequence, with the learner's
``is_forged`` cutting each completion where the model began an ``Observation`` of its own,
and their ``prompt_tokens_at_step`` set beside the tokens counted.
:func:`approval_gate` runs the learner's own ``run_loop`` with a human in
it: a tool marked ``side_effect=True`` does not run until the learner clicks Approve
(it runs) or Deny (its observation says it was denied).

A running cell cannot wait for a click (the kernel handles the click only once the cell
has finished), so the gate *pauses* the run: when the loop asks for a side-effecting
call, the call is held, and the loop's next request to the model raises :class:`Paused`
out of the learner's loop. The cell ends showing the held call and two buttons. A click
records the decision and runs the loop again from the start: every completion the model
wrote before the pause is replayed from a record (same prompt, same completion: no model
call, and a greedy model would write the same), the held call now runs or is denied, and
the run goes on live from there. The learner's code is never changed or copied.
"""

from __future__ import annotations

import html
import itertools
from dataclasses import replace

from ..lab import sandbox
from ..lab.backends.load import load_model  # noqa: F401 -- the embedded model
from ..lab.provenance import copied_values
from ..lab.sandbox import AMOUNT_TEXT, as_text_protocol, db_checksum, working_copy  # noqa: F401 -- the gate's schema
from ..protocol import ACTION_RE, ANSWER_RE, EXEMPLARS, STOP, build_prompt  # noqa: F401 -- what the loop uses
from ..provenance import why_unsourced  # noqa: F401 -- the learner's guard uses it
from ..tools import ID_RE, Tool, ToolError, call_tool, default_tools  # noqa: F401 -- the notebook's tools
from .agent_file import download_link  # noqa: F401
from .cases import namespaces
from .minutes import show_minutes  # noqa: F401
from .quiz import quiz  # noqa: F401


def payment_tools(db_path) -> dict[str, Tool]:
    """The lab's ``schedule_payment`` on the working copy ``db_path``, as the text protocol
    writes its calls: the amount taken as decimal text too (:func:`as_text_protocol`).

    Every argument of an action line is text, so 04's schema check would refuse every
    payment, ``'1180.40' is not of type 'number'``, wherever the learner's loop runs it.
    """
    tools = sandbox.payment_tools(db_path)
    return {
        name: replace(t, parameters=as_text_protocol(t.parameters)) for name, t in tools.items()
    }


#: What :func:`steps` prints of an observation, at most (an invoice row with its memo fits;
#: longer is cut with " …"), and of an action or an answer.
WIDTH, SHORT = 380, 100
#: :func:`steps`'s default: the loop's answer was not passed, so nothing is said of it.
_NOT_GIVEN = object()


def steps(transcript: str, question: str, answer=_NOT_GIVEN) -> None:
    """Print the run after its question: each action, observation and answer line; then a tally.

    ``transcript`` is what the learner's ``run_loop`` returned; the run's lines follow the
    *first* ``Question: question`` line (the exemplars' questions are other questions, and
    a model may write the question again after its answer). A line longer than
    :data:`WIDTH` characters is cut, marked `` …``. ``answer``, when given (None too), is
    what the loop returned (a best effort is not in the transcript); the last line then
    counts the observations the loop wrote: the tool ran, or the loop refused (``Error:``)::

        4 observations: the tool ran 4 times, refused 0; returned None

    An action and its observation the run wrote again right after are printed once, with
    how many times (:func:`_collapsed`).
    """
    lines = _lines(transcript, question)
    print("\n".join(_collapsed(lines)))
    if answer is not _NOT_GIVEN:
        observations = [line for line in lines if line.startswith("Observation:")]
        refused = sum(line.startswith("Observation: Error:") for line in observations)
        ran = len(observations) - refused
        print(
            f"{len(observations)} observations: the tool ran {ran} time{'s' * (ran != 1)}, "
            f"refused {refused}; returned {answer!r}"
        )


class IgnoresStop:
    """A provider that sends no stop sequence; the learner's ``is_forged`` cuts instead.

    ``complete`` asks ``model`` with ``stop=None`` (some providers refuse ``stop``: bench
    03), then cuts the text at its first line ``is_forged`` flags, as a stop sequence would
    have. Keeps ``prompts`` (one per request), ``texts`` (as cut) and ``cut`` (how many
    completions ``is_forged`` cut). :meth:`report` prints the cuts and the prompt tokens of
    each request beside what a cost formula predicts from the first step.
    """

    def __init__(self, model, is_forged):
        self.model, self.is_forged = model, is_forged
        self.prompts, self.texts, self.cut = [], [], 0

    def complete(self, prompt, stop=None, **kwargs):
        """Complete ``prompt`` without ``stop``; cut at the first line ``is_forged`` flags."""
        completion = self.model.complete(prompt, stop=None, **kwargs)
        lines = completion.text.split("\n")
        at = next((i for i, line in enumerate(lines) if self.is_forged(line)), None)
        text = completion.text if at is None else "\n".join(lines[:at])
        self.cut += at is not None
        self.prompts.append(prompt)
        self.texts.append(text)
        return replace(completion, text=text)

    def __getattr__(self, name):
        return getattr(self.model, name)

    def predicted(self, prompt_tokens_at_step) -> tuple[list[int], list[int], tuple[int, int, int]]:
        """``(counted, predicted, (P, O, A))``: each request's prompt tokens (cl100k_base), and
        ``prompt_tokens_at_step(P, O, A, k)`` for request k, P, O and A read off the first step
        (its prompt, the observation the loop wrote after it, the model's text)."""
        from ..cost import count_tokens

        counted = [count_tokens(prompt) for prompt in self.prompts]
        prefix = counted[0]  # P, O and A as the cost model names them
        written = count_tokens(self.texts[0]) if self.texts else 0
        after = self.prompts[1][len(self.prompts[0]) + len(self.texts[0]) :]
        observed = count_tokens(after) if len(self.prompts) > 1 else 0
        predicted = [
            prompt_tokens_at_step(prefix, observed, written, k) for k in range(1, len(counted) + 1)
        ]
        return counted, predicted, (prefix, observed, written)

    def report(self, prompt_tokens_at_step) -> None:
        """Print how many completions ``is_forged`` cut, then counted against predicted tokens."""
        counted, predicted, (prefix, observed, written) = self.predicted(prompt_tokens_at_step)
        print(
            f"your is_forged cut {self.cut} of {len(self.texts)} completions at an Observation "
            "the model wrote"
        )
        print(f"prompt tokens per request, counted: {counted}")
        print(f"prompt_tokens_at_step(P={prefix}, O={observed}, A={written}, k): {predicted}")
        steps = [b - a for a, b in zip(counted, counted[1:])]
        print(f"what each step added, counted: {steps}; the formula adds {observed + written}")


class Paused(BaseException):
    """Raised out of the learner's loop at its next model call while a call waits for a human.

    A ``BaseException``, so that neither the tool runner (which turns an ``Exception`` into
    an observation) nor a learner's ``except Exception`` swallows it.
    """


class _Replayed:
    """The model, with every completion kept by its request: a replayed run costs no model call."""

    def __init__(self, model, gate):
        self.model, self.gate, self.kept, self.calls = model, gate, {}, 0

    def complete(self, prompt, **kwargs):
        if self.gate.pending is not None:  # a call waits for a human: the run pauses here
            raise Paused(self.gate.pending)
        key = (prompt, repr(sorted(kwargs.items())))
        if key not in self.kept:
            self.kept[key] = self.model.complete(prompt, **kwargs)
            self.calls += 1
        self.gate.last = (prompt, self.kept[key].text)
        return self.kept[key]

    def __getattr__(self, name):
        return getattr(self.model, name)


def _call_text(name: str, args) -> str:
    return f"{name}[{', '.join(map(str, args))}]"


def approval_gate(
    run_loop, question: str, model, tools: dict, *, brief: bool = False, **run_kwargs
):
    """Run ``run_loop(question, model, tools, **run_kwargs)``, a human deciding each side effect.

    Every tool whose ``side_effect`` is True is wrapped (its schema taking numbers as text,
    :func:`as_text_protocol`): the n-th such call of a run runs
    if the n-th decision was Approve, is refused with an observation if it was Deny, and
    is *held* if nothing is decided yet (the run pauses at its next model call, see the
    module's docstring). Prints the run so far (what a stored notebook shows; ``brief``: its
    calls in one line, :func:`calls_and_answer`'s) and returns
    an ipywidgets VBox with ``approve_button``, ``deny_button`` and an ``output`` area.
    State on the box: ``decisions`` (list of "approve"/"deny"), ``pending`` (the held
    call's text or None), ``answer`` and ``transcript`` (of the last run that ended, or
    None), ``runs`` (how many times the loop ran), ``model_calls`` (completions computed,
    not replayed).
    """
    import ipywidgets as w  # heavy, optional: only the notebooks' controls need it

    approve = w.Button(description="Approve", icon="check", button_style="warning")
    deny = w.Button(description="Deny", icon="times", button_style="success")
    request, output = w.HTML(), w.Output()
    box = w.VBox([request, w.HBox([approve, deny]), output])
    box.approve_button, box.deny_button, box.request, box.output = approve, deny, request, output
    box.decisions, box.pending, box.answer, box.transcript, box.runs = [], None, None, None, 0
    box.last = None
    replayed = _Replayed(model, box)
    seen = {"count": 0}  # side-effecting calls met in the current run

    def gated(tool: Tool) -> Tool:
        def fn(*args, **kwargs):
            number, seen["count"] = seen["count"], seen["count"] + 1
            if number >= len(box.decisions):  # nobody has decided: hold the call
                box.pending = _call_text(tool.name, args)
                return {"held": "waiting for a human"}  # the model never reads this: the run pauses
            if box.decisions[number] == "deny":
                raise ToolError(f"{tool.name} was denied by a human; nothing was done")
            return tool.fn(*args, **kwargs)

        # the human decides inside fn: the wrapped tool is its own approval gate; it keeps
        # side_effect=True (a provenance guard reads it), and the run's call_tool lets it in
        return replace(tool, fn=fn, parameters=as_text_protocol(tool.parameters))

    gated_tools = {name: gated(t) if t.side_effect else t for name, t in tools.items()}

    def reaching(tools_, name, args, **kwargs):  # the learner's call_tool: a gated tool decides
        return call_tool(tools_, name, args, approved=tools_.get(name) is gated_tools.get(name))

    def run(shown_from: int = 0) -> list[str]:
        """Run the loop once (replaying what was computed); print its steps from ``shown_from``."""
        box.pending, box.answer, box.transcript, seen["count"] = None, None, None, 0
        box.runs += 1
        # the name call_tool, where the loop, its observe and the reference pieces read it, is
        # the gate's for the run
        from .. import agent as lesson

        spaces = [
            ns
            for ns in namespaces(run_loop, ("observe",)) + [vars(lesson)]
            if ns.get("call_tool") is call_tool
        ]
        spaces = [ns for i, ns in enumerate(spaces) if all(ns is not o for o in spaces[:i])]
        for ns in spaces:
            ns["call_tool"] = reaching
        try:
            answer, transcript = run_loop(question, replayed, gated_tools, **run_kwargs)
        except Paused:
            answer, transcript = None, None
        finally:
            for ns in spaces:
                ns["call_tool"] = call_tool
        if box.pending is None:
            box.answer, box.transcript = answer, transcript
        else:  # the run so far: up to the held call's action line (its observation is not written)
            transcript = box.last[0] + box.last[1]
        lines = _lines(transcript, question)
        if brief:  # the calls and what came of them, in two lines
            print(calls_and_answer(transcript, question, box.answer).split("\n")[0])
        elif lines[shown_from:]:
            print("\n".join(lines[shown_from:]))
        if box.pending is not None:
            print(
                f"⏸ paused: {box.pending} changes the world and waits for you: "
                "Approve or Deny below."
            )
            print(f"  its values: {_sources(box.pending, question, box.last[0])}")
            request.value = f"<b>{html.escape(box.pending)}</b> waits for your decision."
        else:
            print(f"answer: {box.answer!r}")
            request.value = "No call is waiting."
        approve.disabled = deny.disabled = box.pending is None
        box.model_calls = replayed.calls
        return lines

    def decide(decision: str):
        """A click: record the decision, run the loop again, print what is new."""
        if box.pending is None:
            return
        box.decisions.append(decision)
        approve.disabled = deny.disabled = True
        with output:
            print(f"▶ {decision}: {box.pending}")
            box.lines = run(shown_from=len(box.lines))

    approve.on_click(lambda _: decide("approve"))
    deny.on_click(lambda _: decide("deny"))
    box.lines = run()
    return box


def _sources(call: str, question: str, transcript: str) -> str:
    """Where the held call's ids and amounts come from, as the provenance rule reads them."""
    name, _, args = call.partition("[")
    why = why_unsourced(args.rstrip("]"), f"the call of {name}", question, transcript)
    return why or "each id and amount is in the question or in a field of a tool's result"


def _lines(transcript: str, question: str) -> list[str]:
    """The run's action, observation and answer lines, cut to :data:`WIDTH` (as :func:`steps`)."""
    head = f"Question: {question}"
    run = transcript[transcript.find(head) + len(head) :] if head in transcript else transcript
    lines = [
        line for line in run.splitlines() if line.startswith(("Action:", "Observation:", "Answer:"))
    ]
    return [_cut(line, WIDTH if line.startswith("Observation:") else SHORT) for line in lines]


def _cut(line: str, width: int) -> str:
    return line if len(line) <= width else line[: width - 2] + " …"


def pay_exemplar():
    """A worked exchange of an agent that pays: INV-2323 looked up, then paid in full.

    Its observations are what the tools return: ``find_invoice`` on the shipped database,
    ``schedule_payment`` on a throwaway working copy (the shipped file is not written).
    """
    from ..protocol import Exemplar
    from ..tools import call_tool

    tools = {**default_tools(), **payment_tools(working_copy())}
    invoice = call_tool(tools, "find_invoice", ["INV-2323"]).text
    # approved here: the exemplar's payment, on a throwaway copy, is the notebook's own
    paid = call_tool(tools, "schedule_payment", ["INV-2323", "720"], approved=True).text
    return Exemplar(
        "Pay supplier invoice INV-2323.",
        (
            ("I look at the invoice first.", "find_invoice[INV-2323]", invoice),
            (
                "It is approved; its total is 720.0 dollars, so I pay that.",
                "schedule_payment[INV-2323, 720]",
                paid,
            ),
        ),
        "The payment is scheduled.",
        "INV-2323 is paid: 720.00 dollars scheduled.",
    )


def _collapsed(lines: list[str]) -> list[str]:
    """``lines`` with an action and its observation repeated right after printed once, and a
    line ``  (the same two lines N times)``."""
    out, i = [], 0
    while i < len(lines):
        pair, times = lines[i : i + 2], 1
        while len(pair) == 2 and lines[i + 2 * times : i + 2 * times + 2] == pair:
            times += 1
        if times > 1 and pair[0].startswith("Action:"):
            out += [*pair, f"  (the same two lines {times} times)"]
            i += 2 * times
        else:
            out.append(lines[i])
            i += 1
    return out


def calls_and_answer(transcript: str, question: str, answer, exemplar=None) -> str:
    """A run in two lines: the calls it made (one its guard refused marked), what it returned.

    A step the run took again right after is written once, with ``×N``. With ``exemplar``, a
    third line: the ids its calls took from the exemplar (:func:`copied_ids`), or none."""
    said = _calls_and_answer(transcript, question, answer)
    if exemplar is None:
        return said
    copied = copied_ids(transcript, question, exemplar)
    return said + (
        f"\n  from its exemplar: {', '.join(copied)}, in no result before the call"
        if copied
        else "\n  from its exemplar: no id"
    )


def copied_ids(transcript: str, question: str, exemplar) -> list[str]:
    """The ids of the run's calls that ``exemplar`` shows and no source before the call does
    (the question, an earlier observation's structured fields): ``cus_1021``, from an
    exemplar about it. The lab's rule (:func:`react_lab.lab.provenance.copied_values`), as 08's
    seed report reads it."""
    head = f"Question: {question}"
    run = transcript[transcript.find(head) + len(head) :] if head in transcript else transcript
    shown, sources, copied = exemplar.render(), [question], []
    for line in run.splitlines():
        if line.startswith("Action: "):
            found = copied_values(line[len("Action: ") :], shown, sources)
            copied += [v for v in found if ID_RE.fullmatch(v) and v not in copied]
        elif line.startswith("Observation: "):
            sources.append(line[len("Observation: ") :])
    return copied


def _calls_and_answer(transcript: str, question: str, answer) -> str:
    lines, made = _lines(transcript, question), []
    for line, after in zip(lines, lines[1:] + [""]):
        if line.startswith("Action: "):
            refused = "in neither the question nor a field" in after
            made.append(("refused: " if refused else "") + line[len("Action: ") :])
        elif line.startswith("Answer: ") and "in neither the question nor a field" in after:
            made.append(f"refused: {_cut(line, 50)}")
    counted = [(step, len(list(group))) for step, group in itertools.groupby(made)]
    said = [step + (f" ×{n}" if n > 1 else "") for step, n in counted]
    return f"  steps: {' -> '.join(said) or 'none'}\n  returned: {answer!r}"


def seed_exemplar(question: str):
    """The exemplar notebook 08's ``pick_exemplar`` (the reference) gives ``question`` from the
    development pool: for seed 000's ``cus_4417`` question, one about ``cus_1021``."""
    from ..agent import pick_exemplar
    from .measuring import dev_pool

    return pick_exemplar(question, dev_pool())


def bench_beside(model, case: str = "memo-system_note-total") -> None:
    """Print the injection suite's saved figures for the reference agent, and one case live.

    The figures are ``injection-local``'s (:mod:`react_lab.lab.experiments.injection`): per
    defence, the attacks whose call was proposed, executed, whose value the answer carried,
    and the canaries followed. Then ``case`` run live on the reference agent, undefended, beside
    the file's record of it (:func:`react_lab.lab.experiments.injection.beside_saved`).
    """
    from ..lab.experiments import injection

    saved = injection.load()
    print(f"file injection-local ({saved.created}): the reference agent, its default exemplar")
    print(f"  {'defence':<12}{'proposed':>10}{'executed':>10}{'carried':>10}{'canary':>8}")
    for row in saved.data["table"]:
        if row["agent"] == "reference" and row["defence"] in ("none", "approval", "provenance"):
            cells = [f"{row[k]['k']}/{row[k]['n']}" for k in ("proposed", "executed", "carried")]
            canary = f"{row['canary']['k']}/{row['canary']['n']}"
            print(f"  {row['defence']:<12}" + "".join(f"{c:>10}" for c in cells) + f"{canary:>8}")
    [(was, now)] = injection.beside_saved(model=model, case_ids=(case,))
    print(f"{case}, in the file / live now:")
    for key in ("proposed", "steps", "answer", "correct"):
        print(f"  {key}: {was[key]!r} / {now[key]!r}" if was else f"  {key}: - / {now[key]!r}")

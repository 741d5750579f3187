"""The ReAct loop over the text protocol.

One step: send the whole transcript, append what the model wrote, stop if it gave an
answer, otherwise parse its action, run the tool, and write the ``Observation:``
line *ourselves*. Repeat until an answer or the step limit. That is all a text
ReAct agent is; everything else in this package is measurement and guards.

The guards (:mod:`react_lab.guards`) are called from the step body at the places
marked ``# guard:``.
"""
from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Iterator

from .guards import BEST_EFFORT_AFTER, Guards
from .models import check_count
from .protocol import INSTRUCTIONS, OBSERVATION, STOP, THOUGHT, build_prompt, parse
from .tools import Tool
from .trace import Step, Transcript

#: What the loop writes when the steps run out, so the model answers from what it has.
BEST_EFFORT_NUDGE = (" The loop allows no more tool calls ({guard}), so I answer now from the "
                     "observations above.\nAnswer:")


@dataclass
class RunResult:
    """A finished run: the answer (or None), why it stopped, the steps, the transcript.

    ``stopped_by`` is ``"answer"`` or the name of the guard that ended the run
    (``"max_steps"``, ``"token_budget"``, ``"repeat"``, ... see
    :data:`react_lab.guards.GUARD_NAMES`). ``best_effort`` is True when the answer was
    asked for after a limit tripped; such an answer starts with ``"[best effort] "``.
    """

    question: str
    answer: str | None
    stopped_by: str
    steps: list[Step] = field(default_factory=list)
    transcript: Transcript = field(default_factory=Transcript)
    best_effort: bool = False

    def to_dict(self) -> dict:
        """The CLI's JSON shape: answer, stopped_by, best_effort, steps (each a :class:`Step` dict)."""
        return {"question": self.question, "answer": self.answer, "stopped_by": self.stopped_by,
                "best_effort": self.best_effort, "steps": [s.to_dict() for s in self.steps]}


def check_run_arguments(model_method: str, model, tools, max_steps, max_tokens) -> None:
    """Refuse arguments a loop cannot run with, before it does anything.

    ``model_method`` is the method the loop calls on ``model``: ``"complete"`` for the
    text loop (:func:`run`), ``"chat"`` for the native one. Raises ``TypeError`` when
    ``model`` has no such method or ``tools`` is not a dict of name -> Tool, and
    ``ValueError`` when ``max_steps`` or ``max_tokens`` is not a whole number >= 1.
    """
    if not callable(getattr(model, model_method, None)):
        hint = (" (build one from a spec with react_lab.models.load_model(...))"
                if isinstance(model, str) else "")
        raise TypeError(f"model must be a backend with a {model_method}(...) method, "
                        f"got {type(model).__name__} {model!r:.60}{hint}")
    if not isinstance(tools, Mapping):
        raise TypeError("tools must be a dict of tool name -> Tool, such as "
                        f"react_lab.tools.default_tools(); got {type(tools).__name__}"
                        + (" (from a list: {t.name: t for t in tools})"
                           if isinstance(tools, (list, tuple)) else ""))
    check_count("max_steps", max_steps)
    check_count("max_tokens", max_tokens)


def run(question: str, model, tools: dict[str, Tool], *, transcript: Transcript | None = None,
        stop: bool = True, max_steps: int = 8, max_tokens: int = 256,
        exemplars=None, guards: Guards | None = None) -> Iterator[Step]:
    """Run the text-protocol loop, yielding one :class:`Step` per model call.

    ``model`` is any backend with ``complete(prompt, stop=, max_tokens=)``; ``tools``
    maps names to :class:`react_lab.tools.Tool`. Pass a ``transcript`` to watch it
    grow between steps. ``stop=False`` sends no stop sequence (to see forgeries).
    ``guards`` holds the run's limits and checks (default: :class:`Guards`, every limit
    on; :meth:`Guards.off` for none). A step whose ``guard`` is set names the guard
    that acted; on the last step it names the one that ended the run.

    When the ``max_steps`` steps are spent without an answer (or the model ignored
    ``guards.max_refusals`` refusals in a row), the loop runs no more tools but, with
    ``guards.best_effort``, asks the model once more for an answer from what the run
    found: one extra step whose answer is labelled ``[best effort]``.

    Raises ``TypeError`` / ``ValueError`` for unusable arguments (see
    :func:`check_run_arguments`) when the first step is asked for.
    """
    check_run_arguments("complete", model, tools, max_steps, max_tokens)
    guards = guards if guards is not None else Guards()
    guards.start(question)
    transcript = transcript if transcript is not None else Transcript()
    if not transcript.spans:
        transcript.add("prompt", build_prompt(question, tools.values(), guards.exemplars(exemplars),
                                              guards.instructions(INSTRUCTIONS)))
    for number in range(1, max_steps + 1):
        t0 = time.perf_counter()
        completion = model.complete(transcript.text, stop=STOP if stop else None,
                                    max_tokens=max_tokens)
        guards.spend(completion)  # guard: token and money budgets
        parsed = parse(completion.text, tools=guards.tool_names(tools))
        # Only what the model legitimately wrote enters the transcript: a forged
        # Observation (and everything after it) is dropped.
        transcript.add("model", parsed.kept.rstrip("\n") + "\n")
        event = Step(step=number, thought=parsed.thought, completion=completion.text,
                     forged=parsed.forged, finish_reason=completion.finish_reason,
                     prompt_tokens=completion.prompt_tokens,
                     completion_tokens=completion.completion_tokens,
                     evaluated_tokens=completion.evaluated_tokens, model_seconds=completion.seconds)
        if parsed.kind == "final":
            rejected = guards.check_answer(parsed.answer)  # guard: grounding, placeholders, citations
            if rejected is None:
                event.answer = parsed.answer
            else:
                event.observation, event.error, event.guard = rejected.text, rejected.error, rejected.guard
        elif parsed.kind == "error":
            event.error = event.observation = parsed.reason
        else:
            event.action = {"tool": parsed.tool, "args": parsed.args}
            t1 = time.perf_counter()
            # guard: repeats, retry cap, approval, tool timeout, truncation, data markers
            outcome = guards.run_tool(tools, parsed.tool, parsed.args)
            event.tool_seconds = time.perf_counter() - t1
            event.observation, event.error, event.guard = outcome.text, outcome.error, outcome.guard
        if event.observation is not None:
            # The loop writes the observation, then the next thought's label for the model.
            transcript.add("loop", f"{OBSERVATION}: {event.observation}\n{THOUGHT}:")
            if guards.compact(transcript):  # guard: context size
                event.guard = "compacted"
        ended = None
        if event.answer is None:
            ended = guards.stop_reason() or ("max_steps" if number == max_steps else None)
            event.guard = ended or event.guard  # guard: budgets, ignored refusals, step limit
        event.seconds = time.perf_counter() - t0
        yield event
        if event.answer is not None:
            return
        if ended:
            if guards.best_effort and ended in BEST_EFFORT_AFTER:  # guard: step limit, best effort
                yield best_effort(model, transcript, guards, ended, number + 1, max_tokens)
            return


def best_effort(model, transcript: Transcript, guards: Guards, guard: str, number: int,
                max_tokens: int) -> Step:
    """Ask the model once for an answer from what it has; label it ``[best effort]``.

    The loop writes a closing thought and the ``Answer:`` label; the model's first line
    is the answer. If it wrote none even then, the step's ``error`` says so and its
    ``answer`` is None. The step's ``guard`` is the limit that ended the run.
    """
    t0 = time.perf_counter()
    transcript.add("loop", BEST_EFFORT_NUDGE.format(guard=guard))
    completion = model.complete(transcript.text, stop=STOP, max_tokens=max_tokens)
    guards.spend(completion)
    # The loop's own words (its nudges and error observations), not the tools' data.
    loop_said = [text for owner, text in transcript.spans
                 if owner == "loop" and ("Error:" in text or "allows no more" in text)]
    answer = guards.best_effort_answer(completion.text, loop_said=loop_said)
    transcript.add("model", f" {answer}\n" if answer else completion.text.rstrip("\n") + "\n")
    return Step.of(number, completion, guard=guard,
                   answer=f"[best effort] {answer}" if answer else None,
                   error=None if answer else "no answer, even when asked for a best effort",
                   seconds=time.perf_counter() - t0)


def ask(question: str, model, tools: dict[str, Tool], *, progress: bool = False,
        **kwargs) -> RunResult:
    """Run :func:`run` to the end and collect a :class:`RunResult` (same keyword arguments).

    ``progress=True`` shows a tqdm progress bar over the steps (for a slow model).
    """
    transcript = Transcript()
    events = run(question, model, tools, transcript=transcript, **kwargs)
    if progress:
        from tqdm.auto import tqdm

        events = tqdm(events, desc="steps", unit="step", leave=False)
    steps = list(events)
    last = steps[-1] if steps else Step(step=0, guard="max_steps")
    # An accepted answer ends its step with no guard; a best-effort one carries the limit's name.
    stopped_by = "answer" if last.answer is not None and last.guard is None else last.guard or "max_steps"
    return RunResult(question, last.answer, stopped_by, steps, transcript,
                     best_effort=last.answer is not None and stopped_by != "answer")

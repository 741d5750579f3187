"""The ReAct loop over the text protocol.

One step: send the whole transcript, append what the model wrote, stop if it gave an answer,
otherwise parse its action, run the tool, and write the ``Observation:`` line *ourselves*. Repeat
until an answer or the step limit. That is all a text ReAct agent is. The guards
(:mod:`react_lab.lab.agent.guards`) are called from the step, one line each, marked ``# guard:``:
the run's :class:`react_lab.lab.agent.guards.Watch` keeps what it has done. Called directly, the
loop uses its own :class:`react_lab.lab.agent.guards.Guards`; the lab passes its own
(:class:`react_lab.lab.guards.LabGuards`, with a progress bar in :mod:`react_lab.lab.loops`).
"""

from __future__ import annotations

import time
from typing import Iterator

from ...protocol import MAX_TOKENS, OBSERVATION, STOP, THOUGHT, build_prompt
from ...tools import Tool
from .checks import check_reply, check_run_arguments
from .context import compact_transcript
from .guards import BUDGETS, Guards, Watch
from .parser import parse, read_reply
from .trace import RunResult, Step, Transcript

#: Model calls per run, before the one best-effort request (both loops, the CLI).
MAX_STEPS = 8

#: What the loop writes when the steps run out, so the model answers from what it has.
BEST_EFFORT_NUDGE = (
    " The loop allows no more tool calls ({guard}), so I answer now from the "
    "observations above.\nAnswer:"
)


def run(
    question: str,
    model,
    tools: dict[str, Tool],
    *,
    transcript: Transcript | None = None,
    stop: bool = True,
    max_steps: int = MAX_STEPS,
    max_tokens: int = MAX_TOKENS,
    exemplars=None,
    guards: Guards | None = None,
) -> Iterator[Step]:
    """Run the text-protocol loop, yielding one :class:`Step` per model call.

    ``model`` is any backend with ``complete(prompt, stop=, max_tokens=)``; ``tools`` maps
    names to :class:`react_lab.tools.Tool`. Pass a ``transcript`` to watch it grow.
    ``stop=False`` sends no stop sequence (to see forgeries). ``guards``: the run's limits
    and checks (default :class:`Guards`, every limit on; :meth:`Guards.off` for none); a
    step's ``guard`` names the one that acted, on the last step the one that ended the run.
    When the step limit or ignored refusals end the run without an answer,
    ``guards.best_effort`` asks once more: one extra step, its answer labelled
    ``[best effort]``. Raises ``TypeError`` / ``ValueError`` for unusable arguments
    (:func:`react_lab.lab.agent.checks.check_run_arguments`).
    """
    check_run_arguments(
        "complete", question, model, tools, max_steps, max_tokens, guards, exemplars, stop
    )
    guards = guards if guards is not None else Guards()
    watch = guards.start(question, exemplars)  # guard: this run's counters and clock start
    transcript = transcript if transcript is not None else Transcript()
    stop_sequence = STOP if stop else None
    if not transcript.spans:  # the prompt prefix: instructions, tools, exemplars, the question
        notes = guards.notes()  # guard: prompt notes
        prompt = build_prompt(question, tools.values(), exemplars, notes=notes, mark=guards.mark)
        transcript.add("prompt", prompt)
    for number in range(1, max_steps + 1):
        t0 = time.perf_counter()  # the step's wall-clock seconds start here
        # 1. Send the whole transcript; the stop sequence ends the completion before an Observation.
        completion = model.complete(transcript.text, stop=stop_sequence, max_tokens=max_tokens)
        check_reply(completion, model, "complete")  # a bare string is no completion
        watch.spend(completion)  # guard: token and money budgets
        # 2. Parse the completion (the action of step 4) and append the part the parser keeps:
        #    up to the first action or answer, never an Observation the model wrote itself.
        names = watch.tool_names(tools)  # guard: names a guard adds (more)
        finish = getattr(completion, "finish_reason", None)
        parsed = parse(completion.text, tools=names, finish_reason=finish, max_tokens=max_tokens)
        parsed, drifted = watch.check_question(parsed)  # guard: a Question line of the model's own
        transcript.add("model", parsed.kept.rstrip("\n") + "\n")
        # A client-side stop (a provider that refused `stop`) already cut the forgery off.
        forged = parsed.forged or getattr(completion, "forged_tokens", 0) > 0
        thought, reasoning = parsed.thought, parsed.reasoning
        step = Step.of(
            number, completion, thought=thought, guard=drifted, reasoning=reasoning, forged=forged
        )
        if parsed.kind == "final":  # 3. Stop on an answer...
            rejected = watch.check_answer(parsed.answer)  # guard: answer checks (grounding)
            if rejected is None:
                step.answer = parsed.answer
            else:  # ...unless a guard sends it back as the observation.
                step.record(rejected)
        elif parsed.kind == "error":
            # 4. No usable action (none, no such tool, ...): the reason goes back.
            step.error = step.observation = parsed.reason
        else:  # 5. Run the tool the action names, through the guards.
            step.action = {"tool": parsed.tool, "args": parsed.args}
            step.record(watch.run_tool(tools, parsed.tool, parsed.args))  # guard: refusals, size
        if step.observation is not None:  # 6. The loop writes the observation, then the next label.
            kind = "error" if step.error else "observation"
            transcript.add("loop", f"{OBSERVATION}: {step.observation}\n{THOUGHT}:", kind=kind)
            if compact_transcript(transcript, guards):  # guard: context size
                step.guard = "compacted"
        # "answer", the name of the guard that ends the run, or None to go on:
        last = number == max_steps
        ended = end_step(step, watch, last, t0)  # guard: budgets, ignored refusals, step limit
        yield step
        if ended:
            if ended not in ("answer", *BUDGETS) and guards.best_effort:  # guard: best effort
                yield ask_best_effort(
                    model, transcript, watch, ended, number + 1, max_tokens, tools
                )
            return


def end_step(step: Step, watch: Watch, last: bool, started: float) -> str | None:
    """Close a step of either loop: ``"answer"``, the guard that ends the run (it becomes the
    step's ``guard``: a budget, ignored refusals, ``"max_steps"`` on the ``last`` step), or
    None to go on. Sets the step's ``seconds`` since ``started``."""
    ended = (
        "answer"
        if step.answer is not None
        else (watch.stop_reason() or ("max_steps" if last else None))
    )
    if ended not in (None, "answer"):
        step.guard = ended
    step.seconds = time.perf_counter() - started
    return ended


def ask_best_effort(
    model,
    transcript: Transcript,
    watch: Watch,
    guard: str,
    number: int,
    max_tokens: int,
    tools: dict[str, Tool] | None = None,
) -> Step:
    """Ask the model once for an answer from what it has; label it ``[best effort]``.

    The loop writes a closing thought and the ``Answer:`` label; the model's first line is the
    answer. If it wrote none even then (or only repeated the loop's own nudges and errors), the
    step's ``error`` says so. The completion is read as a reply's text is
    (:func:`react_lab.lab.agent.parser.read_reply`): reasoning is set aside, and a call or call
    markup is no answer (the error names it). Its ``guard`` is the limit that ended the run.
    """
    t0 = time.perf_counter()
    transcript.add("loop", BEST_EFFORT_NUDGE.format(guard=guard), kind="nudge")
    completion = model.complete(transcript.text, stop=STOP, max_tokens=max_tokens)
    check_reply(completion, model, "complete")
    watch.spend(completion)
    loop_said = transcript.written("loop", ("error", "nudge"))  # not the tools' data
    text = read_reply(completion.text, list(tools) if tools is not None else None)
    answer = watch.best_effort_answer(text.answer, loop_said=loop_said) if text.answer else None
    # An answer the model did not write is a guard's (the lab's "I don't know"): the loop's.
    owner = "model" if answer is None or answer in completion.text else "loop"
    transcript.add(owner, f" {answer}\n" if answer else completion.text.rstrip("\n") + "\n")
    return best_effort_step(
        number, completion, guard, answer, t0, saw=text.saw, reasoning=text.reasoning
    )


def best_effort_step(
    number: int,
    reply,
    guard: str,
    answer: str | None,
    started: float,
    saw: str | None = None,
    **fields,
) -> Step:
    """The step of either loop's best-effort request.

    The answer labelled, or an error saying none came (and, when the reply held something
    else, what: ``saw``).
    """
    error = (
        None
        if answer
        else "no answer, even when asked for a best effort" + (f"; it wrote {saw}" if saw else "")
    )
    return Step.of(
        number,
        reply,
        guard=guard,
        answer=f"[best effort] {answer}" if answer else None,
        error=error,
        seconds=time.perf_counter() - started,
        **fields,
    )


def ask(
    question: str,
    model,
    tools: dict[str, Tool],
    *,
    transcript: Transcript | None = None,
    **kwargs,
) -> RunResult:
    """Run :func:`run` to the end and collect a :class:`RunResult` (same keyword arguments)."""
    transcript = transcript if transcript is not None else Transcript()
    steps = list(run(question, model, tools, transcript=transcript, **kwargs))
    return RunResult.from_steps(question, steps, transcript)

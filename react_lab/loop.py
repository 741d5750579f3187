"""The ReAct loop over the text protocol.

One step: send the whole transcript, append what the model wrote, stop if it gave an
answer, otherwise parse its action, run the tool, and write the ``Observation:``
line *ourselves*. Repeat until an answer or the step limit. That is all a text
ReAct agent is; everything else in this package is measurement and guards.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterator

from .protocol import OBSERVATION, STOP, THOUGHT, build_prompt, parse
from .tools import Tool, call_tool
from .trace import Step, Transcript


@dataclass
class RunResult:
    """A finished run: the answer (or None), why it stopped, the steps, the transcript.

    ``stopped_by`` is ``"answer"`` or the name of the limit that ended the run
    (``"max_steps"``).
    """

    question: str
    answer: str | None
    stopped_by: str
    steps: list[Step] = field(default_factory=list)
    transcript: Transcript = field(default_factory=Transcript)

    def to_dict(self) -> dict:
        """The CLI's JSON shape: answer, stopped_by, steps (each a :class:`Step` dict)."""
        return {"question": self.question, "answer": self.answer, "stopped_by": self.stopped_by,
                "steps": [s.to_dict() for s in self.steps]}


def run(question: str, model, tools: dict[str, Tool], *, transcript: Transcript | None = None,
        stop: bool = True, max_steps: int = 8, max_tokens: int = 256,
        exemplars=None) -> Iterator[Step]:
    """Run the text-protocol loop, yielding one :class:`Step` per model call.

    ``model`` is any backend with ``complete(prompt, stop=, max_tokens=)``; ``tools``
    maps names to :class:`react_lab.tools.Tool`. Pass a ``transcript`` to watch it
    grow between steps. ``stop=False`` sends no stop sequence (to see forgeries). The
    last step carries ``answer`` (None when the step limit ended the run) and its
    ``guard`` is ``"max_steps"`` if the limit tripped.
    """
    transcript = transcript if transcript is not None else Transcript()
    if not transcript.spans:
        transcript.add("prompt", build_prompt(question, tools.values(), exemplars))
    for number in range(1, max_steps + 1):
        t0 = time.perf_counter()
        completion = model.complete(transcript.text, stop=STOP if stop else None,
                                    max_tokens=max_tokens)
        parsed = parse(completion.text, tools=list(tools))
        # Only what the model legitimately wrote enters the transcript: a forged
        # Observation (and everything after it) is dropped.
        transcript.add("model", parsed.kept.rstrip("\n") + "\n")
        event = Step(step=number, thought=parsed.thought, completion=completion.text,
                     forged=parsed.forged, finish_reason=completion.finish_reason,
                     prompt_tokens=completion.prompt_tokens,
                     completion_tokens=completion.completion_tokens,
                     evaluated_tokens=completion.evaluated_tokens, model_seconds=completion.seconds)
        if parsed.kind == "final":
            event.answer = parsed.answer
        elif parsed.kind == "error":
            event.error = parsed.reason
            event.observation = parsed.reason
        else:
            event.action = {"tool": parsed.tool, "args": parsed.args}
            t1 = time.perf_counter()
            obs = call_tool(tools, parsed.tool, parsed.args)
            event.tool_seconds = time.perf_counter() - t1
            event.observation, event.error = obs.text, obs.error
        if event.observation is not None:
            # The loop writes the observation, then the next thought's label for the model.
            transcript.add("loop", f"{OBSERVATION}: {event.observation}\n{THOUGHT}:")
        if number == max_steps and event.answer is None:
            event.guard = "max_steps"
        event.seconds = time.perf_counter() - t0
        yield event
        if event.answer is not None:
            return


def ask(question: str, model, tools: dict[str, Tool], **kwargs) -> RunResult:
    """Run :func:`run` to the end and collect a :class:`RunResult` (same keyword arguments)."""
    transcript = Transcript()
    steps = list(run(question, model, tools, transcript=transcript, **kwargs))
    answer = steps[-1].answer if steps else None
    stopped_by = "answer" if answer is not None else (steps[-1].guard if steps else "max_steps")
    return RunResult(question, answer, stopped_by or "max_steps", steps, transcript)

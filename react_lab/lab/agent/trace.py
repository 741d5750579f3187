"""What a run leaves behind: its steps, its transcript by owner, the result.

A text-protocol transcript is one growing string, but three parties write it: the
*prompt* (instructions, tools, exemplars, the question), the *model* (thoughts and
actions) and the *loop* (every observation). :class:`Transcript` keeps the owner of
each span so a learner can see who wrote what (the lab shows it:
:func:`react_lab.lab.notebook.tables.transcript_html`, and as plain text
:func:`~react_lab.lab.notebook.tables.transcript_text`). :class:`Step` is one model call and what
the loop did with it; :class:`RunResult` a finished run of either loop. The lab logs steps
as JSON lines (:mod:`react_lab.lab.experiments.steplogs`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Iterable

OWNERS = ("prompt", "model", "loop")
#: What a span of the loop's holds (``Transcript.kinds``).
KINDS = ("observation", "error", "nudge", "summary")


@dataclass
class Step:
    """One step of a run: what the model wrote, what the loop did, what it cost.

    ``number`` is the step's position in the run, from 1 (log records and
    :meth:`to_dict` conventionally call it ``"step"``). ``action`` is ``{"tool": str,
    "args": list | dict}`` or None. Token counts are the model backend's;
    ``model_seconds``, ``tool_seconds`` and ``seconds`` (the whole step) are wall-clock
    seconds. ``guard`` names the guard that acted in this step.
    ``stop_mode`` is who applied the stop sequence (``"server"``, ``"client"`` when the
    provider refused ``stop`` and the backend cut the text, None when none was sent or
    the backend is in-process); ``forged_tokens`` counts the completion tokens generated
    (and billed) from a model-written ``Observation`` on that the client cut off.
    ``leaked`` is True when a native reply wrote its tool call in the message text
    instead of the tool-call field (see :mod:`react_lab._parsing.leaks`). ``reasoning`` is what the
    model wrote in reasoning blocks (``<think>...</think>``, Harmony's analysis channel),
    set aside before its text was read: a draft, never run and never the answer (None when
    it wrote none).
    """

    number: int
    thought: str | None = None
    action: dict | None = None
    observation: str | None = None
    error: str | None = None
    answer: str | None = None
    completion: str = ""
    forged: bool = False
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    evaluated_tokens: int | None = None
    model_seconds: float = 0.0
    tool_seconds: float = 0.0
    seconds: float = 0.0
    guard: str | None = None
    stop_mode: str | None = None
    forged_tokens: int = 0
    leaked: bool = False
    reasoning: str | None = None

    @classmethod
    def of(cls, number: int, reply, **fields) -> "Step":
        """A step whose model-call fields come from ``reply``; ``fields`` set the rest.

        ``reply`` is a backend's reply (a ``Completion`` or a ``ChatReply`` of
        :mod:`react_lab.lab.backends`): its text, finish reason, token counts and seconds.
        """
        return cls(
            number,
            completion=reply.text,
            finish_reason=reply.finish_reason,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            evaluated_tokens=reply.evaluated_tokens,
            model_seconds=reply.seconds,
            stop_mode=getattr(reply, "stop_mode", None),
            forged_tokens=getattr(reply, "forged_tokens", 0),
            **fields,
        )

    def record(self, observation) -> None:
        """Write ``observation`` (a :class:`react_lab.tools.Observation`) into this step:
        its text, error, the guard that acted and the seconds it took."""
        self.observation = observation.text
        self.error = observation.error
        self.guard = observation.guard
        self.tool_seconds = observation.seconds

    def to_dict(self) -> dict:
        """A JSON-serialisable dict of every field, ``number`` under the key ``"step"``."""
        fields = asdict(self)
        return {"step": fields.pop("number"), **fields}


@dataclass
class Transcript:
    """The growing prompt as ``(owner, text)`` spans; ``text`` is what the model is sent.

    ``kinds`` runs beside ``spans`` (add spans with :meth:`add` to keep them in step):
    what each of the loop's spans holds, :data:`KINDS` -- a tool's result, an error the
    loop wrote as the observation, its request for a best-effort answer, a compaction
    summary; None for the prompt's and the model's spans.
    """

    spans: list[tuple[str, str]] = field(default_factory=list)
    kinds: list[str | None] = field(default_factory=list)

    def __post_init__(self):
        self.kinds = [*self.kinds, *[None] * (len(self.spans) - len(self.kinds))]

    def add(self, owner: str, text: str, kind: str | None = None) -> None:
        """Append ``text`` written by ``owner`` (one of :data:`OWNERS`); ``kind``: :data:`KINDS`."""
        if owner not in OWNERS:
            raise ValueError(f"owner must be one of {OWNERS}, not {owner!r}")
        if kind is not None and kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS} or None, not {kind!r}")
        if text:
            self.spans.append((owner, text))
            self.kinds.append(kind)

    def written(self, owner: str, kinds: Iterable[str]) -> list[str]:
        """The texts of ``owner``'s spans of these ``kinds``, in order."""
        kinds = set(kinds)
        return [
            text
            for (who, text), kind in zip(self.spans, self.kinds)
            if who == owner and kind in kinds
        ]

    @property
    def text(self) -> str:
        return "".join(t for _, t in self.spans)


@dataclass
class RunResult:
    """A finished run: the answer (or None), why it stopped, the steps, the transcript.

    ``stopped_by`` is ``"answer"`` or the name of the guard that ended the run
    (``"max_steps"``, ``"token_budget"``, ``"repeat"``, ... see
    :data:`react_lab.lab.guards.GUARD_NAMES`). ``best_effort`` is True when the answer was
    asked for after a limit tripped; such an answer starts with ``"[best effort] "``.
    """

    question: str
    answer: str | None
    stopped_by: str
    steps: list[Step] = field(default_factory=list)
    transcript: Transcript = field(default_factory=Transcript)
    best_effort: bool = False

    @classmethod
    def from_steps(
        cls,
        question: str,
        steps: list[Step],
        transcript: Transcript,
        *,
        stopped_by: str | None = None,
    ) -> "RunResult":
        """Collect a run from its steps (either loop's). ``stopped_by`` is for a caller that
        ended the run itself (the evaluation's ``"timeout"``): the run then has no answer."""
        last = steps[-1] if steps else Step(0, guard="max_steps")
        answer = last.answer if stopped_by is None else None
        # An accepted answer ends its step with no guard; a best-effort one carries the limit's
        # name.
        stopped_by = stopped_by or (
            "answer" if answer is not None and last.guard is None else last.guard or "max_steps"
        )
        return cls(
            question,
            answer,
            stopped_by,
            steps,
            transcript,
            best_effort=answer is not None and stopped_by != "answer",
        )

    def to_dict(self) -> dict:
        """The CLI's JSON shape: answer, stopped_by, best_effort, steps (:class:`Step` dicts)."""
        return {
            "question": self.question,
            "answer": self.answer,
            "stopped_by": self.stopped_by,
            "best_effort": self.best_effort,
            "steps": [s.to_dict() for s in self.steps],
        }

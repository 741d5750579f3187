"""Failure modes of a ReAct run, read from its steps: what the model tried, guard or no guard.

Notebook 06 takes the failure modes practitioners list for ReAct agents one at a time and
counts each on the embedded model. Each detector below is a pure function over a finished
run's :class:`react_lab.trace.Step` list (and what the run was asked). It reads what the
*model wrote* in each step (:func:`written`, the tolerant parser on the completion), so it
sees a failure whether or not a guard then stopped it: a repeated call the repeat guard
refused is still a repeated call. What the guard did about it is read separately, from the
run's observations and its ``guard`` fields.

* :data:`FAILURE_MODES` names each mode, :func:`failure_modes` applies every detector to
  one run, :func:`count_modes` tallies many runs (0 included).
* :class:`StopProbe` wraps a backend so that a forged observation shows even with the
  stop sequence on: after a completion the stop ended, it asks for a few more tokens
  without the stop, and reports an ``Observation`` line there as a client-side cut would.
* :func:`live_pass` runs the loop once per question and keeps every run, with the error a
  run raised (a prompt past the context window raises) instead of stopping the pass.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from tqdm.auto import tqdm

from ...context import MARKERS
from ...guards import EMPTY_RESULTS, Guards, call_key, call_words
from ...loop import run
from ...parser import find_forged, parse
from ...protocol import ParseResult
from ...trace import RunResult, Step, Transcript
from ..guards import MORE, LabGuards, invented_question, one_word_apart
from .abuses import strict_parse

#: Every failure mode, in the order notebook 06 takes them, with what its detector looks for.
FAILURE_MODES = {
    "forged_observation": "the model wrote (or went on to write) an Observation line of its own",
    "repeated_action": "the model asked again for a call it had already made",
    "hallucinated_tool": "the model called a tool that does not exist",
    "answer_without_acting": "the model answered before any tool returned data",
    "observation_flooding": "a tool returned more text than the observation budget",
    "context_overflow": "a prompt outgrew the context window",
    "query_drift": "the model wrote a question of its own, or reworded one call again and again",
    "format_drift": "an action or answer written other than as the exemplar writes it",
    "error_spiral": "calls to one tool failed three or more times in a row",
    "injection": "the model called a side-effecting tool the question did not ask for",
    "over_time_budget": "the run took longer than its wall-clock budget",
}

#: The guard (:mod:`react_lab.guards`, :mod:`react_lab.lab.guards`) or loop part that stops each
#: mode.
GUARDS = {
    "forged_observation": "stop sequence, then the parser drops the forged span",
    "repeated_action": "repeats: an identical call is refused",
    "hallucinated_tool": "the parser: unknown tool, and the list of tools",
    "answer_without_acting": "require_retrieval: the answer is sent back",
    "observation_flooding": "observation_chars: truncation with more[page]",
    "context_overflow": "compact_at: older steps summarised",
    "query_drift": "pin_question (and near_repeats): the question repeated",
    "format_drift": "tolerant parser, corrective observation",
    "error_spiral": "retry_cap: the failing tool is refused",
    "injection": "approve: side effects need approval (mark_data marks tool text)",
    "over_time_budget": "time_budget: the run ends between steps",
}

#: The exemplar's own forms: ``Action: tool[args]`` or ``Answer: ...`` on one line.
_EXEMPLAR_LINE = re.compile(
    r"^(?:Action: [^\W\d]\w*\[[^\n]*\]|Answer: \S[^\n]*)[ \t]*$", re.MULTILINE
)
_CUT_MARK = "[truncated by the loop"
_REFUSALS = {"repeat", "near_repeat", "retry_cap", "approval", "own_question"}


def written(step: Step) -> ParseResult:
    """What the model wrote in ``step``: the tolerant parser on its completion, no tool list."""
    return parse(step.completion)


# --------------------------------------------------------------------------- detectors


def forged_observation(steps: Sequence[Step]) -> bool:
    """True if some step's completion held an ``Observation`` line the model wrote itself."""
    return any(s.forged for s in steps)


def repeated_calls(steps: Sequence[Step]) -> list[Step]:
    """Steps whose call (tool and arguments, normalised) the model had asked for before."""
    seen, repeats = set(), []
    for s in steps:
        wrote = written(s)
        if wrote.kind == "action":
            key = (wrote.tool, call_key(wrote.args))
            if key in seen:
                repeats.append(s)
            seen.add(key)
    return repeats


def unknown_tools(steps: Sequence[Step], tools: Iterable[str]) -> list[str]:
    """Tool names the model called that ``tools`` does not have (``more`` is the loop's own)."""
    names = {*tools, MORE}
    return [w.tool for w in map(written, steps) if w.kind == "action" and w.tool not in names]


def has_data(observation: str | None) -> bool:
    """True if an observation holds a fact: not an error, not empty (``[]``, ``{}``)."""
    text = MARKERS.sub("", observation or "").split(" " + _CUT_MARK)[0].strip()
    return bool(text) and not text.startswith("Error:") and text not in EMPTY_RESULTS


def answers_before_data(steps: Sequence[Step]) -> list[Step]:
    """Steps in which the model wrote an answer while no tool had yet returned data."""
    found, data = [], False
    for s in steps:
        if written(s).kind == "final" and not data:
            found.append(s)
        data = data or (s.action is not None and s.error is None and has_data(s.observation))
    return found


def flooded(steps: Sequence[Step], chars: int = 2000) -> list[Step]:
    """Steps whose tool result was longer than ``chars`` characters (cut by the loop, or not)."""
    return [
        s
        for s in steps
        if s.observation and (len(s.observation) > chars or _CUT_MARK in s.observation)
    ]


def overflowed(steps: Sequence[Step], window: int, error: str | None = None) -> bool:
    """True if a prompt passed ``window`` tokens, or the run raised a context-window error."""
    said = (error or "").lower()
    raised = "context" in said and ("exceed" in said or "length" in said)
    return raised or any(s.prompt_tokens > window for s in steps)


def invented_questions(steps: Sequence[Step], question: str) -> list[str]:
    """The questions the model wrote itself (``Question:`` lines other than the run's)."""
    found = (invented_question(s.completion, question) for s in steps)
    return [asked for _, asked in filter(None, found)]


def reworded(steps: Sequence[Step], times: int = 3) -> bool:
    """True if one tool was called ``times`` times with arguments one word apart.

    That is a reworded search.
    """
    calls: list[tuple[str, list[str]]] = []
    for wrote in map(written, steps):
        if wrote.kind != "action":
            continue
        words = call_words(wrote.args)
        if sum(t == wrote.tool and one_word_apart(w, words) for t, w in calls) >= times - 1:
            return True
        calls.append((wrote.tool, words))
    return False


def drifted(text: str) -> bool:
    """True if the completion's format departs from the exemplar's.

    It does when the strict regex and the tolerant parser read it differently (kind, tool
    or answer), or when the tolerant parser finds an action or answer but no line of the
    completion is in the exemplar's form (``Action: tool[args]`` / ``Answer: ...``).
    """
    strict, ours = strict_parse(text), parse(text)
    if (strict.kind, strict.tool, strict.answer) != (ours.kind, ours.tool, ours.answer):
        return True
    return ours.kind != "error" and _EXEMPLAR_LINE.search(ours.kept) is None


def error_runs(steps: Sequence[Step], times: int = 3) -> bool:
    """True if ``times`` steps in a row called one tool and each got an error observation."""
    streak, last = 0, None
    for s in steps:  # a tool's own error: not a parse error, not a guard's refusal
        tool = s.action["tool"] if s.action and s.error and s.guard not in _REFUSALS else None
        streak = streak + 1 if tool is not None and tool == last else int(tool is not None)
        last = tool
        if streak >= times:
            return True
    return False


def side_effect_calls(steps: Sequence[Step], tools: dict) -> list[Step]:
    """Steps in which the model called a tool marked ``side_effect`` (run or refused)."""
    risky = {name for name, tool in tools.items() if getattr(tool, "side_effect", False)}
    return [s for s in steps if written(s).kind == "action" and written(s).tool in risky]


def failure_modes(
    result: RunResult,
    *,
    tools: dict,
    needs_tools: bool = True,
    window: int = 4096,
    observation_chars: int = 2000,
    time_budget: float | None = None,
    error: str | None = None,
) -> set[str]:
    """The failure modes (keys of :data:`FAILURE_MODES`) that happened in one run.

    ``tools`` maps the names the run offered to :class:`react_lab.tools.Tool`;
    ``needs_tools`` is False for a question answered without data (then answering at once
    is right); ``window`` is the context window in the backend's tokens; ``time_budget``
    is in seconds (None: not checked); ``error`` is what the run raised, if it did.
    """
    steps = result.steps
    found = {
        "forged_observation": forged_observation(steps),
        "repeated_action": bool(repeated_calls(steps)),
        "hallucinated_tool": bool(unknown_tools(steps, tools)),
        "answer_without_acting": needs_tools and bool(answers_before_data(steps)),
        "observation_flooding": bool(flooded(steps, observation_chars)),
        "context_overflow": overflowed(steps, window, error),
        "query_drift": bool(invented_questions(steps, result.question)) or reworded(steps),
        "format_drift": any(drifted(s.completion) for s in steps),
        "error_spiral": error_runs(steps),
        "injection": bool(side_effect_calls(steps, tools)),
        "over_time_budget": time_budget is not None and sum(s.seconds for s in steps) > time_budget,
    }
    return {mode for mode, hit in found.items() if hit}


def count_modes(found: Iterable[set[str]]) -> dict[str, int]:
    """How many runs show each failure mode: every key of :data:`FAILURE_MODES`, 0 included."""
    counts = dict.fromkeys(FAILURE_MODES, 0)
    for modes in found:
        for mode in modes:
            counts[mode] += 1
    return counts


# --------------------------------------------------------------------------- live runs


class StopProbe:
    """Wrap a backend: after each completion the stop sequence ended, look at what came next.

    The wrapped ``model`` continues the same text without ``stop`` for ``tokens`` tokens.
    If that continuation starts an ``Observation`` line (:func:`react_lab.parser.find_forged`),
    the completion is returned with the continuation as ``cut_text`` and its tokens as
    ``forged_tokens``, as a client-side stop reports a forgery it cut
    (:class:`react_lab.lab.backends.base.Completion`); the loop then marks the step
    ``forged``, and the transcript still holds only the text before the stop. ``probes``
    keeps every continuation.
    """

    def __init__(self, model, tokens: int = 8):
        self.model, self.tokens, self.probes = model, tokens, []

    @property
    def name(self) -> str:
        return f"probed:{getattr(self.model, 'name', 'model')}"

    def complete(self, prompt: str, *, stop=None, max_tokens: int = 256):
        completion = self.model.complete(prompt, stop=stop, max_tokens=max_tokens)
        if not stop or completion.finish_reason != "stop":
            return completion
        more = self.model.complete(prompt + completion.text, stop=None, max_tokens=self.tokens)
        self.probes.append(more.text)
        if find_forged(more.text) is None:
            return completion
        return replace(completion, cut_text=more.text, forged_tokens=more.completion_tokens)


@dataclass
class LiveRun:
    """One question of a live pass: the run (the steps before the error, if it raised),
    the error's text or None, and the run's wall-clock seconds."""

    question: str
    result: RunResult
    error: str | None
    seconds: float


def live_pass(
    questions: Sequence[str],
    model,
    tools: dict,
    *,
    guards: Callable[[int], Guards] = lambda i: LabGuards(),
    progress: bool = True,
    **options,
) -> list[LiveRun]:
    """Run the text loop once per question, in order; never stops at a failing run.

    ``guards(i)`` builds the guards of question ``i`` (default: the lab's,
    :class:`react_lab.lab.guards.LabGuards`); ``options`` go to
    :func:`react_lab.loop.run` (``max_steps``, ``max_tokens``, ...). A run that raises
    (llama.cpp refuses a prompt past its window with ``ValueError``) keeps the steps it made
    and the error's text. ``progress`` shows a tqdm bar over the questions.
    """
    runs = []
    for i, question in enumerate(tqdm(questions, desc="questions", disable=not progress)):
        transcript, steps, error = Transcript(), [], None
        t0 = time.perf_counter()
        try:
            steps.extend(
                run(question, model, tools, transcript=transcript, guards=guards(i), **options)
            )
        except (ValueError, RuntimeError) as exc:
            error = f"{type(exc).__name__}: {exc}"
        result = RunResult.from_steps(
            question, steps, transcript, stopped_by="error" if error else None
        )
        runs.append(LiveRun(question, result, error, time.perf_counter() - t0))
    return runs

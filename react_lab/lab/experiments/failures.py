"""Failure modes of a ReAct run, read from its steps: what the model tried, guard or no guard.

Notebook 06 takes the failure modes practitioners list for ReAct agents one at a time and
counts each on the embedded model. Each detector below is a pure function over a finished
run's :class:`react_lab.lab.agent.trace.Step` list (and what the run was asked). It reads what the
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
* :func:`unguarded_pass` is notebook 06's pass: :data:`PASS_CATEGORIES` questions through the
  text loop with every guard off and a :class:`StopProbe`. Its saved form is the results file
  :data:`RESULTS_NAME` (experiment ``"failures"`` of
  :data:`react_lab.lab.experiments.results.EXPERIMENTS`): :func:`save_pass` writes it
  (``react-lab failures --save-results NAME``), :func:`load_pass` reads it back as
  :class:`LiveRun` objects, :func:`fingerprint_inputs` says what it depends on.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ...protocol import ParseResult, build_prompt
from ...tools import default_tools
from ..agent.context import MARKERS
from ..agent.guards import EMPTY_RESULTS, Guards, call_key, call_words
from ..agent.loop import run
from ..agent.parser import find_forged, parse
from ..agent.trace import RunResult, Step, Transcript
from ..extras import tqdm
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

#: The guard (:mod:`react_lab.lab.agent.guards`, :mod:`react_lab.lab.guards`) or loop part that
#: stops each mode.
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

    The wrapped ``model`` continues the same text without ``stop`` for ``tokens`` tokens. If that
    continuation starts an ``Observation`` line (:func:`react_lab.lab.agent.parser.find_forged`),
    the completion is returned with the continuation as ``cut_text`` and its tokens as
    ``forged_tokens``, as a client-side stop reports a forgery it cut
    (:class:`react_lab.lab.backends.base.Completion`); the loop then marks the step ``forged``, and
    the transcript still holds only the text before the stop. ``probes`` keeps every continuation.
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
    :func:`react_lab.lab.agent.loop.run` (``max_steps``, ``max_tokens``, ...). A run that raises
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


# --------------------------------------------------------------------------- the saved pass

#: The task categories of the unguarded pass, in the order notebook 06 takes them.
PASS_CATEGORIES = (
    "latest_date",
    "invoice_total",
    "invoice_status",
    "charge",
    "duplicate",
    "paid_in_full",
    "help",
    "supplier",
    "multi_step",
    "no_tool",
)
#: Questions per category in the saved pass (the smallest of these categories has 3).
PER_CATEGORY = 3
#: The pass's limits: model calls per run, completion tokens per call, and the tokens
#: :class:`StopProbe` asks for after a completion the stop sequence ended.
PASS_MAX_STEPS, PASS_MAX_TOKENS, PROBE_TOKENS = 3, 64, 8
#: The shipped results file of the pass.
RESULTS_NAME = "failures-unguarded"
#: Bump when a change here changes what a run of the pass does: the saved file then reads
#: as stale.
CODE_VERSION = 1


def pass_tasks(per_category: int = PER_CATEGORY) -> list:
    """The pass's questions: the first ``per_category`` of each of :data:`PASS_CATEGORIES`.

    Round by round: the first question of every category (in :data:`PASS_CATEGORIES`
    order), then the second of every category, and so on, so the first ten are one per
    category. Raises ``ValueError`` when a category has fewer questions.
    """
    from .tasks import load_tasks

    by_category: dict[str, list] = {}
    for task in load_tasks():
        by_category.setdefault(task.category, []).append(task)
    short = [c for c in PASS_CATEGORIES if len(by_category.get(c, [])) < per_category]
    if short:
        raise ValueError(f"fewer than {per_category} questions in category {short[0]!r}")
    return [by_category[c][k] for k in range(per_category) for c in PASS_CATEGORIES]


def unguarded_pass(tasks: Sequence, model, tools: dict | None = None, *, progress: bool = True):
    """Run ``tasks`` as notebook 06's pass; return one :class:`LiveRun` per task, in order.

    Every guard off (``LabGuards.off()``), at most :data:`PASS_MAX_STEPS` steps of
    :data:`PASS_MAX_TOKENS` completion tokens, the model wrapped in a :class:`StopProbe` of
    :data:`PROBE_TOKENS` tokens. One token is generated first, so that no run's seconds
    include loading the model. ``tools`` default to :func:`react_lab.tools.default_tools`.
    """
    tools = default_tools() if tools is None else tools
    model.complete("Question:", max_tokens=1)
    return live_pass(
        [t.question for t in tasks],
        StopProbe(model, tokens=PROBE_TOKENS),
        tools,
        guards=lambda i: LabGuards.off(),
        progress=progress,
        max_steps=PASS_MAX_STEPS,
        max_tokens=PASS_MAX_TOKENS,
    )


def run_record(task, run: LiveRun) -> dict:
    """One run of the pass as JSON: the task, the error, the seconds, and the run itself.

    ``"run"`` is :meth:`react_lab.lab.agent.trace.RunResult.to_dict` (every field of every step);
    ``"transcript"`` the owner-marked spans as the evaluation's records hold them
    (``[owner, text]``), ``"kinds"`` beside them. :func:`run_of` reads it back.
    """
    return {
        "task_id": task.id,
        "category": task.category,
        "question": run.question,
        "error": run.error,
        "seconds": run.seconds,
        "run": run.result.to_dict(),
        "transcript": [list(span) for span in run.result.transcript.spans],
        "kinds": list(run.result.transcript.kinds),
    }


def run_of(record: dict) -> LiveRun:
    """The :class:`LiveRun` a :func:`run_record` holds, steps and transcript included."""
    saved = record["run"]
    steps = [
        Step(number=s["step"], **{k: v for k, v in s.items() if k != "step"})
        for s in saved["steps"]
    ]
    transcript = Transcript([tuple(span) for span in record["transcript"]], list(record["kinds"]))
    result = RunResult(
        saved["question"],
        saved["answer"],
        saved["stopped_by"],
        steps,
        transcript,
        best_effort=saved["best_effort"],
    )
    return LiveRun(record["question"], result, record["error"], record["seconds"])


def pass_config(tasks: Sequence, model: str = "local") -> dict:
    """The ``config`` a pass's results file is saved (and fingerprinted) with."""
    return {
        "model": model,
        "categories": list(PASS_CATEGORIES),
        "task_ids": [t.id for t in tasks],
        "max_steps": PASS_MAX_STEPS,
        "max_tokens": PASS_MAX_TOKENS,
        "probe_tokens": PROBE_TOKENS,
    }


#: Guards added to the lab after this pass was measured: left out of its fingerprint while off,
#: as they were then (the injection suite's provenance rule).
LATER_GUARDS = ("provenance",)


def fingerprint_inputs(config: dict):
    """The fingerprint inputs of a pass's results file.

    See :data:`react_lab.lab.experiments.results.EXPERIMENTS`. ``config`` is
    :func:`pass_config`'s. The prompt part is every run's first prompt (instructions, tool
    descriptions, exemplars and the question), the stop sequence, the tools' schemas and the
    settings of the guards the pass runs with (all off), so a change to any of them makes the
    file stale.
    """
    from ...protocol import STOP
    from .results import Inputs
    from .tasks import load_tasks

    by_id = {t.id: t for t in load_tasks()}
    tasks = [by_id[i] for i in config["task_ids"]]
    tools = default_tools()
    off = LabGuards.off()
    guards = {
        f.name: repr(getattr(off, f.name))
        for f in dataclasses.fields(off)
        if f.init and not (f.name in LATER_GUARDS and getattr(off, f.name) is False)
    }
    return Inputs(
        model=config.get("model", "local"),
        prompt={
            "first_prompts": [build_prompt(t.question, tools.values()) for t in tasks],
            "stop": STOP,
            "schemas": [t.openai_schema() for t in tools.values()],
            "guards": guards,
        },
        tasks=[dataclasses.asdict(t) for t in tasks],
        code=CODE_VERSION,
    )


def save_pass(
    name: str,
    tasks: Sequence,
    runs: Sequence[LiveRun],
    *,
    model: str = "local",
    per_category: int = PER_CATEGORY,
    seconds: float | None = None,
    directory: str | Path | None = None,
    overwrite: bool = False,
) -> Path:
    """Save a finished pass as the fingerprinted results file ``name``; return its path.

    What ``react-lab failures --save-results NAME`` calls; ``data`` is ``{"runs":
    [run_record, ...]}``.
    """
    from . import results

    command = f"react-lab failures --model {model}" + (
        f" --per-category {per_category}" if per_category != PER_CATEGORY else ""
    )
    return results.save(
        name,
        {"runs": [run_record(t, r) for t, r in zip(tasks, runs, strict=True)]},
        experiment="failures",
        config=pass_config(tasks, model),
        command=f"{command} --save-results {name}",
        seconds=seconds,
        directory=directory,
        overwrite=overwrite,
    )

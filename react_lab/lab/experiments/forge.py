"""Forged observations: switch the stop sequence off and count what the model writes.

A completion model continues the string it is given. The prompt's exemplar shows an
``Action:`` line followed by an ``Observation:`` line, so the likeliest continuation of
the model's own action is an observation -- one it makes up. :data:`protocol.STOP`
ends the completion where that line would begin. This module measures the difference:

* :func:`questions` draws N billing questions from the database by SQL
  (:mod:`react_lab.lab.experiments.questions`);
* :func:`run_experiment` completes each question's first step with and without
  ``stop`` and counts forged observations, strict-regex actions and finish reasons per
  arm; on the embedded model one greedy generation serves both arms
  (:class:`react_lab.lab.experiments.arms.TwoArmReader`), elsewhere each question is
  completed twice; :func:`forge_rate` does the same with a results cache on disk;
* :func:`react_lab.lab.agent.parser.truncate_forged` is the client-side fallback for providers
  that reject ``stop`` or catch it a token late, and :func:`truncation_costs` counts
  the tokens that were generated (and billed) only to be cut off, on a fixed subsample
  run on to ``max_tokens``;
* :func:`highlight_forged` renders a completion as HTML with the forged span marked.

:data:`SEED_CLAIM` is a seed article's figure, printed beside our measurement: 61 of 100
completions without a stop sequence ran into a fabricated ``Observation:`` line.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from typing import Sequence

from ... import protocol
from ...tools import default_tools
from ..agent.checks import check_count
from ..agent.parser import find_forged, truncate_forged
from ..backends.local import LocalModel, local_model
from ..extras import tqdm
from .abuses import strict_parse
from .arms import TwoArmReader
from .questions import questions
from .results import Inputs, cache_dir

#: Completion tokens per call. SmolLM2 spells digits one token each, so its thought and
#: action take 24 to 70 tokens before the first forged ``Observation`` (measured on the
#: 100 questions); 80 leaves room for the forgery and keeps 200 completions to minutes.
FORGE_MAX_TOKENS = 80

#: Bumped when the experiment changes, so old cached results are not reused.
#: 4: one generation serves both arms on the embedded model; the no-stop arm ends at the forgery.
#: 5: the embedded model decodes :data:`BATCH` questions side by side by default.
#: 6: a finished line that is the Observation label alone counts as forged (find_forged).
EXPERIMENT_VERSION = 6

#: The first this many questions run on to ``max_tokens`` without stop: a fixed, stated
#: subsample that measures what a forged tail costs (see :func:`truncation_costs`).
TAIL_SAMPLE = 10

#: Questions decoded side by side on the embedded model
#: (:func:`react_lab.lab.backends.decode.greedy_decode_batch`). Generation speed on the first 20
#: questions, 2 cores: 67 tokens/s one at a time, 89 with 4 side by side, 101 with 8,
#: 95 with 16. ``batch=1`` decodes one at a time: exactly ``create_completion``'s tokens.
BATCH = 8

#: How the two arms were produced, as a result's ``arms_from`` says it.
ONE_GENERATION = (
    "one greedy generation per question, read as both arms: with stop it is cut "
    "at the first stop string, without stop it ends once a model-written "
    "Observation label is certain"
)
TWO_PASSES = "two completions per question: every question with stop, then every one without"

#: The seed article's measurement without a stop sequence: (forged, completions).
SEED_CLAIM = (61, 100)


ARMS = ("with_stop", "without_stop")


# --------------------------------------------------------------------------- one completion


class Recorded:
    """A text-completion model that keeps what it wrote: ``texts``, one per call, in order.

    Wraps any model with ``complete(prompt, stop=..., max_tokens=...)``; a loop run on it
    runs as on the model, and :func:`react_lab.lab.notebook.tables.run_html` can then tell
    the model's text from the loop's.
    """

    def __init__(self, model):
        self.model, self.texts = model, []

    def complete(self, prompt, **kwargs):
        completion = self.model.complete(prompt, **kwargs)
        self.texts.append(completion.text)
        return completion


def forged_tail(text: str) -> str:
    """Return the part of a completion from its first model-written ``Observation`` line on.

    '' if there is none.
    """
    cut = find_forged(text)
    return "" if cut is None else text[cut:]


def complete_once(
    model, question: str, *, stop: bool, max_tokens: int = FORGE_MAX_TOKENS, tools=None
) -> dict:
    """Complete the first step of ``question`` once and describe the completion.

    The prompt is ``protocol.build_prompt(question, tools)`` (default tools). Returns
    :func:`describe` of the completion, plus ``"prompt_tokens"`` and ``"evaluated_tokens"``
    (None where the backend cannot tell); token counts are the backend's own.
    """
    tools = default_tools() if tools is None else tools
    prompt = protocol.build_prompt(question, tools.values())
    c = model.complete(prompt, stop=protocol.STOP if stop else None, max_tokens=max_tokens)
    return {
        **describe(question, stop, c.text, c.finish_reason, c.completion_tokens, c.seconds),
        "prompt_tokens": c.prompt_tokens,
        "evaluated_tokens": c.evaluated_tokens,
    }


def first_steps(
    model,
    question_texts: Sequence[str],
    *,
    stop: bool,
    max_tokens: int = FORGE_MAX_TOKENS,
    progress: bool = True,
) -> list[str]:
    """Complete each question's first step once, as the experiment does; return the texts.

    The prompt and ``max_tokens`` are :func:`complete_once`'s, so on the embedded model
    (greedy, one at a time) each text is the experiment's completion of that question.
    Shows a progress bar unless ``progress=False``.
    """
    bar = tqdm(question_texts, desc="with stop" if stop else "without stop", disable=not progress)
    return [complete_once(model, q, stop=stop, max_tokens=max_tokens)["text"] for q in bar]


def run_on(model: LocalModel, trial: dict, max_tokens: int, tools=None) -> dict:
    """Continue ``trial``'s completion without ``stop`` by up to ``max_tokens`` more tokens.

    The embedded model (greedy, one at a time) is given the trial's prompt (chat template
    applied) followed by the trial's text, so the result's text starts with that text
    whether the trial was decoded alone or side by side. Returns :func:`describe` of the
    whole text (``completion_tokens`` the trial's plus the new ones; ``seconds`` the
    continuation's). Raises ``ValueError`` as :meth:`LocalModel.generate` does.
    """
    tools = default_tools() if tools is None else tools
    prompt = model.render(protocol.build_prompt(trial["question"], tools.values()))
    more = model.generate(
        prompt + trial["text"], max_tokens=max_tokens, temperature=0.0, seed=model.seed
    )
    return describe(
        trial["question"],
        False,
        trial["text"] + more.text,
        more.finish_reason,
        trial["completion_tokens"] + more.completion_tokens,
        more.seconds,
    )


def batching_differences(
    model: LocalModel,
    question_texts: Sequence[str],
    *,
    max_tokens: int = 40,
    batch: int = BATCH,
    tools=None,
) -> dict:
    """Decode the same prompts one at a time and ``batch`` side by side; say where they part.

    Greedy, no stop sequence, ``max_tokens`` tokens each, on the embedded model
    (:meth:`LocalModel.decode_many`). Returns ``{"n", "batch", "max_tokens", "seconds":
    {"one_at_a_time", "side_by_side"} (wall time), "same" (completions identical token for
    token), "parted": [{"question", "at" (index of the first differing token), "alone",
    "batched" (the two texts from that token on)}, ...]}``. Raises ``ValueError`` for a bad
    ``max_tokens`` or ``batch``.
    """
    tools = default_tools() if tools is None else tools
    texts = [model.render(protocol.build_prompt(q, tools.values())) for q in question_texts]
    runs, seconds = {}, {}
    for name, width in (("one_at_a_time", 1), ("side_by_side", batch)):
        t0 = time.perf_counter()
        runs[name] = [
            c.raw.tokens for c in model.decode_many(texts, max_tokens=max_tokens, width=width)
        ]
        seconds[name] = round(time.perf_counter() - t0, 2)
    parted = []
    for question, alone, batched in zip(
        question_texts, runs["one_at_a_time"], runs["side_by_side"]
    ):
        if alone != batched:
            at = next(
                (k for k, (a, b) in enumerate(zip(alone, batched)) if a != b),
                min(len(alone), len(batched)),
            )

            def text(tokens):
                return model.llm.detokenize(tokens[at:]).decode("utf-8", errors="ignore")

            parted.append(
                {"question": question, "at": at, "alone": text(alone), "batched": text(batched)}
            )
    return {
        "n": len(texts),
        "batch": batch,
        "max_tokens": max_tokens,
        "seconds": seconds,
        "same": len(texts) - len(parted),
        "parted": parted,
    }


def describe(
    question: str, stop: bool, text: str, finish_reason: str, completion_tokens: int, seconds: float
) -> dict:
    """One trial's record: ``{"question", "stop", "text", "finish_reason", "completion_tokens",
    "forged", "forged_at" (character index or None), "strict" (kind from
    :func:`react_lab.lab.experiments.abuses.strict_parse`), "seconds"}``."""
    at = find_forged(text)
    return {
        "question": question,
        "stop": stop,
        "text": text,
        "finish_reason": finish_reason,
        "completion_tokens": completion_tokens,
        "forged": at is not None,
        "forged_at": at,
        "strict": strict_parse(text).kind,
        "seconds": round(seconds, 4),
    }


def why_stopped(trial: dict) -> str:
    """Say why a completion ended: ``"forged"``, ``"length"`` (max_tokens) or ``"end_of_text"``.

    A forgery wins over the finish reason: a forged completion run to ``max_tokens`` also
    ran out of tokens (one ended at the forgery has finish reason ``"forged"``), but the
    forgery is what matters.
    """
    if trial["forged"]:
        return "forged"
    return "length" if trial["finish_reason"] == "length" else "end_of_text"


def summarize(trials: Sequence[dict]) -> dict:
    """Count one arm: ``{"forged", "parsed", "finals", "finish_reasons", "completion_tokens"}``.

    ``parsed`` counts completions where the strict regex found an action; ``finals``
    those the strict parser reads as an answer (``"Answer:"`` anywhere in the text,
    a forged one included). ``completion_tokens`` is the arm's total.
    """
    return {
        "forged": sum(t["forged"] for t in trials),
        "parsed": sum(t["strict"] == "action" for t in trials),
        "finals": sum(t["strict"] == "final" for t in trials),
        "finish_reasons": dict(sorted(Counter(t["finish_reason"] for t in trials).items())),
        "completion_tokens": sum(t["completion_tokens"] for t in trials),
    }


def why_stopped_counts(trials: Sequence[dict]) -> dict:
    """Split completions sent without ``stop`` by :func:`why_stopped`.

    Into ``{"forged", "length", "end_of_text"}``.

    Only meaningful without ``stop``: with it, finish reason ``"stop"`` does not tell a
    stop-sequence hit from the end of the model's text.
    """
    return {
        k: sum(why_stopped(t) == k for t in trials) for k in ("forged", "length", "end_of_text")
    }


# --------------------------------------------------------------------------- the experiment


def _one_generation(
    model: LocalModel, texts: Sequence[str], max_tokens: int, tail: int, bar, width: int
) -> tuple[dict, list[dict]]:
    """Both arms of every question from one greedy generation each; and the tail subsample."""
    tools = default_tools()
    readers = [
        TwoArmReader(model.llm.detokenize, max_tokens=max_tokens, run_to_max=i < tail)
        for i in range(len(texts))
    ]
    t0 = time.perf_counter()

    def done(i: int, finish: str) -> None:
        if finish == "end_of_text":
            readers[i].end_of_text()
        bar.update()

    # A few tokens of slack: as create_completion, the reader may run past max_tokens to
    # finish a UTF-8 character; it ends the generation itself.
    outs = model.decode_many(
        [model.render(protocol.build_prompt(q, tools.values())) for q in texts],
        max_tokens=max_tokens + 4,
        width=width,
        on_token=lambda i, token: readers[i].feed(token),
        on_done=done,
    )
    trials: dict[str, list[dict]] = {arm: [] for arm in ARMS}
    tail_trials = []
    for i, (question, reader, out) in enumerate(zip(texts, readers, outs)):
        started = out.raw.started or t0
        free = reader.early or reader.without_stop
        for arm, stop, end in ((ARMS[0], True, reader.with_stop), (ARMS[1], False, free)):
            trials[arm].append(
                {
                    **describe(
                        question,
                        stop,
                        end.text,
                        end.finish_reason,
                        end.completion_tokens,
                        end.at - started,
                    ),
                    "prompt_tokens": out.prompt_tokens,
                    "evaluated_tokens": out.evaluated_tokens,
                }
            )
        if i < tail:
            full = reader.without_stop
            tail_trials.append(
                {
                    **describe(
                        question,
                        False,
                        full.text,
                        full.finish_reason,
                        full.completion_tokens,
                        full.at - started,
                    ),
                    "tail_tokens": reader.tail_tokens(),
                }
            )
    return trials, tail_trials


def _two_passes(
    model, texts: Sequence[str], max_tokens: int, tail: int, bar
) -> tuple[dict, list[dict]]:
    """Every question with stop, then every question without.

    The first ``tail`` no-stop ones are the subsample.
    """
    tools = default_tools()
    trials: dict[str, list[dict]] = {arm: [] for arm in ARMS}
    for arm, stop in zip(ARMS, (True, False)):
        bar.set_postfix_str(arm.replace("_", " "))
        for question in texts:
            trials[arm].append(
                complete_once(model, question, stop=stop, max_tokens=max_tokens, tools=tools)
            )
            bar.update()
    count = getattr(model, "count_tokens", None)  # the backend's tokenizer, where it has one
    tail_trials = [
        {
            **t,
            "tail_tokens": (count(forged_tail(t["text"])) if t["forged"] else 0) if count else None,
        }
        for t in trials["without_stop"][:tail]
    ]
    return trials, tail_trials


def _sum(values) -> int | None:
    values = list(values)
    return None if any(v is None for v in values) else sum(values)


def run_experiment(
    question_texts: Sequence[str],
    model,
    *,
    max_tokens: int = FORGE_MAX_TOKENS,
    tail: int = TAIL_SAMPLE,
    batch: int = BATCH,
    progress: bool = True,
) -> dict:
    """Complete every question's first step with and without ``stop``, and count each arm.

    On the embedded model (a :class:`~react_lab.lab.backends.local.LocalModel` decoding
    greedily) one generation per question serves both arms
    (:class:`react_lab.lab.experiments.arms.TwoArmReader`): the with-stop arm is the
    completion ``stop`` gives, token for token; the no-stop arm ends once its forgery is
    certain, so its ``forged`` count is the full completion's, its finish reason
    ``"forged"``, and its text, tokens and strict parse stop at the label (an ``Answer:``
    written after a forged observation is not seen). ``batch`` questions are decoded side by
    side (:meth:`~react_lab.lab.backends.local.LocalModel.decode_many`): faster, and greedy
    under batched arithmetic, so a completion may part from the one-at-a-time completion at
    a near-tie; ``batch=1`` gives ``create_completion``'s tokens exactly. Any other backend
    completes each question twice: every question with ``stop``, then every one without
    (``batch`` is not used). Raises ``ValueError`` if ``batch`` or ``max_tokens`` is not a
    whole number >= 1.

    The first ``tail`` questions (a fixed, stated subsample) run on to ``max_tokens``
    without stop, to measure what a forged tail costs (:func:`truncation_costs`).

    Returns ``{"n", "model", "max_tokens", "seconds" (wall time), "arms_from"
    (:data:`ONE_GENERATION` or :data:`TWO_PASSES`), "batch" (questions decoded side by
    side at most: ``batch``, or fewer if there were fewer questions; 1 in two passes),
    "tokens": {"prompt_sent",
    "prompt_evaluated" (None where the backend cannot tell), "generated"},
    "tail_subsample": {"k", "trials"}, "with_stop": summary, "without_stop": summary,
    "trials": {arm: [trial, ...]}}`` (see :func:`summarize` and :func:`describe`). Each
    summary adds ``"seconds"``, the sum of its trials' ``seconds``: model time per call
    in two passes; from one generation, the time until that arm was decided (the arms
    share their generations, so the two sums overlap, and side by side the questions'
    times overlap too). ``without_stop`` also has
    ``"why_stopped"`` (:func:`why_stopped_counts`).
    """
    check_count("batch", batch)
    check_count("max_tokens", max_tokens)
    one = isinstance(model, LocalModel) and model.temperature == 0
    t0 = time.perf_counter()
    with tqdm(
        total=len(question_texts) * (1 if one else 2),
        disable=not progress,
        desc="questions" if one else "completions",
    ) as bar:
        if one:
            before = model.usage.snapshot()
            trials, tail_trials = _one_generation(
                model, question_texts, max_tokens, tail, bar, batch
            )
            used = model.usage - before
            tokens = {
                "prompt_sent": used.prompt_sent,
                "prompt_evaluated": used.prompt_evaluated,
                "generated": used.generated,
            }
        else:
            trials, tail_trials = _two_passes(model, question_texts, max_tokens, tail, bar)
            every = trials["with_stop"] + trials["without_stop"]
            tokens = {
                "prompt_sent": _sum(t["prompt_tokens"] for t in every),
                "prompt_evaluated": _sum(t["evaluated_tokens"] for t in every),
                "generated": _sum(t["completion_tokens"] for t in every),
            }
    seconds = time.perf_counter() - t0
    summaries = {
        arm: {**summarize(trials[arm]), "seconds": round(sum(t["seconds"] for t in trials[arm]), 2)}
        for arm in ARMS
    }
    summaries["without_stop"]["why_stopped"] = why_stopped_counts(trials["without_stop"])
    return {
        "n": len(question_texts),
        "model": getattr(model, "name", type(model).__name__),
        "max_tokens": max_tokens,
        "seconds": round(seconds, 2),
        "arms_from": ONE_GENERATION if one else TWO_PASSES,
        "batch": min(batch, len(question_texts)) if one and question_texts else 1,
        "tokens": tokens,
        "tail_subsample": {"k": len(tail_trials), "trials": tail_trials},
        **summaries,
        "trials": trials,
    }


def cache_key(
    model,
    question_texts: Sequence[str],
    max_tokens: int,
    tail: int = TAIL_SAMPLE,
    batch: int = BATCH,
) -> str:
    """Hash what decides the result.

    Model name and settings, every prompt, n, max_tokens, tail, batch, version.
    """
    tools = default_tools()
    prompts = [protocol.build_prompt(q, tools.values()) for q in question_texts]
    fingerprint = {
        "model": getattr(model, "name", type(model).__name__),
        "temperature": getattr(model, "temperature", None),
        "script": getattr(model, "completions", None),  # a scripted model's replies
        "prompts": hashlib.sha256("\x00".join(prompts).encode()).hexdigest(),
        "stop": protocol.STOP,
        "n": len(question_texts),
        "max_tokens": max_tokens,
        "tail": tail,
        "batch": batch,
        "version": EXPERIMENT_VERSION,
    }
    return hashlib.sha256(json.dumps(fingerprint, sort_keys=True).encode()).hexdigest()[:16]


def forge_rate(
    n: int = 100,
    model=None,
    *,
    max_tokens: int = FORGE_MAX_TOKENS,
    tail: int = TAIL_SAMPLE,
    batch: int = BATCH,
    refresh: bool = False,
    progress: bool = True,
    cache: bool = True,
) -> dict:
    """Run :func:`run_experiment` on :func:`questions` ``(n)``, cached on disk.

    ``model`` defaults to the embedded model. A cached result (``cache_dir()/forge-KEY.json``,
    see :func:`cache_key`) is returned unless ``refresh=True``; the result then has
    ``"cached": True`` and the ``seconds`` of the run that computed it. ``cache=False``
    neither reads nor writes the cache.
    """
    if model is None:
        model = local_model()
    texts = questions(n)
    path = cache_dir() / f"forge-{cache_key(model, texts, max_tokens, tail, batch)}.json"
    if cache and not refresh and path.is_file():
        return {**json.loads(path.read_text(encoding="utf-8")), "cached": True}
    result = run_experiment(
        texts, model, max_tokens=max_tokens, tail=tail, batch=batch, progress=progress
    )
    if cache:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(result, ensure_ascii=False), encoding="utf-8")
        tmp.replace(path)  # atomic: a half-written file is never read as a result
    return {**result, "cached": False}


# --------------------------------------------------------------------------- portability


def truncation_costs(result: dict) -> dict:
    """Measure client-side truncation on ``result``'s tail subsample.

    The subsample ran with no stop, to ``max_tokens``.

    Returns ``{"n" (completions in the subsample), "forged", "tail_tokens" (tokens generated
    from the forged Observation on: made, billed, then cut; None where the backend has no
    tokenizer to count them), "tail_share" (of those completions' tokens), "same_as_stop"
    (truncated texts equal to the with-stop text of the same question)}``.
    """
    sample = result["tail_subsample"]["trials"]
    stopped = result["trials"]["with_stop"][: len(sample)]
    tail_tokens = _sum(t["tail_tokens"] for t in sample)
    total = sum(t["completion_tokens"] for t in sample)
    return {
        "n": len(sample),
        "forged": sum(t["forged"] for t in sample),
        "tail_tokens": tail_tokens,
        "tail_share": round(tail_tokens / total, 3) if total and tail_tokens is not None else None,
        "same_as_stop": sum(
            truncate_forged(free["text"]) == stop["text"].rstrip()
            for stop, free in zip(stopped, sample)
        ),
    }


# --------------------------------------------------------------------------- showing it


def format_report(result: dict, claim: tuple[int, int] = SEED_CLAIM) -> str:
    """Return the experiment as a few plain-text lines (the CLI prints these)."""
    n = result["n"]
    lines = [
        f"{result['model']}: {n} questions, first step, max_tokens={result['max_tokens']}",
        f"{'':14}{'forged':>8}{'strict action':>15}{'strict answer':>15}  finish reasons",
    ]
    for arm in ARMS:
        s = result[arm]
        reasons = ", ".join(f"{k} {v}" for k, v in s["finish_reasons"].items())
        counts = f"{s['forged']:>8}{s['parsed']:>15}{s['finals']:>15}"
        lines.append(f"{arm.replace('_', ' '):14}{counts}  {reasons}")
    w = result["without_stop"]["why_stopped"]
    lines.append(
        f"without stop, why it ended: forged {w['forged']}, hit max_tokens {w['length']}, "
        f"end of text {w['end_of_text']}"
    )
    lines.append(
        f"seed claim: {claim[0]} of {claim[1]} forged without stop; "
        f"measured: {result['without_stop']['forged']} of {n}"
    )
    lines.append(f"arms from: {result['arms_from']}")
    if result.get("batch", 1) > 1:
        lines.append(f"decoded {result['batch']} questions side by side (batched greedy decoding)")
    costs = truncation_costs(result)
    if costs["n"]:
        tail = (
            "not counted"
            if costs["tail_tokens"] is None
            else f"{costs['tail_tokens']} tokens after the forged label "
            f"({costs['tail_share']:.0%} of their tokens)"
        )
        lines.append(
            f"tail subsample (first {costs['n']} questions, no stop, run to max_tokens): "
            f"{costs['forged']} forged, {tail}"
        )
    t = result["tokens"]
    evaluated = "?" if t["prompt_evaluated"] is None else f"{t['prompt_evaluated']:,}"
    lines.append(
        f"prompt tokens sent {t['prompt_sent']:,}, evaluated {evaluated}; "
        f"generated {t['generated']:,}"
    )
    took = f"wall time {result['seconds']:.1f} s"
    lines.append(took + (" (cached result)" if result.get("cached") else ""))
    return "\n".join(lines)


def fingerprint_inputs(config: dict) -> Inputs:
    """The fingerprint inputs of a forgery results file.

    ``config``: ``{"n", "max_tokens", "tail", "model"}``.
    """
    template = protocol.build_prompt("{question}", default_tools().values())
    return Inputs(
        model=config.get("model", "local"),
        prompt={"template": template, "stop": protocol.STOP},
        tasks=questions(config["n"]),
        code={"forge": EXPERIMENT_VERSION},
    )

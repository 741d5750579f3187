"""Every figure the notebooks draw: the cost curves, the forgery bars, the trust boundary.

Each function takes numbers an experiment computed (nothing here runs a model) and
returns a matplotlib ``Figure``; matplotlib is imported inside them, so importing this
module costs nothing.
"""

from __future__ import annotations

from ...cost import run_cost
from ..experiments.costs import running
from ..experiments.forge import ARMS, SEED_CLAIM


def plot_cost(P: int, O: int, A: int, N: int, *, title: str | None = None):
    """Plot an N-step run: prompt tokens per step, and cumulative tokens split by term.

    Left: each step's prompt as the prefix ``P`` plus the re-sent ``(k - 1)(A + O)``.
    Right: running totals of the linear prefix term and the quadratic re-sent term.
    The crossover steps are marked. Returns a ``matplotlib.figure.Figure`` (not shown,
    not registered with pyplot).
    """
    from matplotlib.figure import Figure  # heavy, optional: only plots need it
    from matplotlib.ticker import MaxNLocator

    cost = run_cost(P, O, A, N)
    steps = list(range(1, N + 1))
    resent = [s - P for s in cost["per_step"]]
    fig = Figure(figsize=(10, 3.8), layout="constrained")
    left, right = fig.subplots(1, 2)

    left.bar(steps, [P] * N, color="#9ca3af", label=f"prefix P = {P:,}")
    left.bar(
        steps,
        resent,
        bottom=[P] * N,
        color="#2563eb",
        label=f"re-sent text (k-1)·(A+O), A+O = {A + O:,}",
    )
    k = cost["crossover_step"]
    if k is not None and k <= N:
        _mark(left, k, f"from step {k},\nre-sent > prefix")
    left.set(xlabel="step", ylabel="prompt tokens sent", title="Each request")
    left.legend(fontsize=8, loc="upper left")

    cum_prefix = [P * n for n in steps]
    cum_resent = [(A + O) * n * (n - 1) // 2 for n in steps]
    _stack_cumulative(
        right, steps, cum_prefix, cum_resent, "#2563eb", "re-sent: (A+O)·N(N-1)/2 (quadratic)"
    )
    right.plot(steps, cum_prefix, color="#374151", lw=1)
    m = cost["cumulative_crossover_step"]
    if m is not None and m <= N:
        _mark(right, m, f"from N = {m},\nre-sent total > prefix total")
    right.set(
        xlabel="steps so far",
        ylabel="cumulative prompt tokens",
        title=f"The run: {cost['total_tokens']:,} tokens in {N} steps",
    )
    right.legend(fontsize=8, loc="upper left")
    for ax in (left, right):
        ax.yaxis.set_major_formatter("{x:,.0f}")
        ax.set_xlim(0.4, N + 0.6)
        if N <= 20:
            ax.set_xticks(steps)
        else:
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if title:
        fig.suptitle(title)
    return fig


def _stack_cumulative(ax, steps, cum_prefix, cum_resent, resent_color, resent_label):
    """Stack a run's cumulative prompt tokens on ``ax``, as both cost plots draw them.

    The prefix first (grey, "prefix: N·P (linear)"), the re-sent text on top of it in
    ``resent_color``, labelled ``resent_label``.
    """
    ax.stackplot(
        steps,
        cum_prefix,
        cum_resent,
        colors=["#9ca3af", resent_color],
        labels=["prefix: N·P (linear)", resent_label],
    )


def _mark(ax, x, text):
    """A dashed red line at step ``x`` with a boxed label, in the upper half of ``ax``."""
    ax.axvline(x, color="#dc2626", ls="--", lw=1)
    ax.text(
        x - 0.15,
        0.62,
        text,
        transform=ax.get_xaxis_transform(),
        ha="right",
        va="top",
        color="#dc2626",
        fontsize=8.5,
        bbox={"facecolor": "white", "alpha": 0.85, "lw": 0},
    )


def plot_run(measured: dict, *, title: str | None = None, unit: str = "model tokens"):
    """Plot a measured run: each request split by term, and the run's cumulative totals.

    Left: one stacked bar per step -- the prompt prefix ``P`` (the same every step: the
    linear term), then the earlier steps' model text and observations re-sent (the part
    that grows: the quadratic term) -- with the prompt tokens the backend reported as
    dots and the cost model with the run's mean A and O as a dashed line. Right: the
    cumulative prompt tokens, prefix and re-sent stacked, and the tokens the backend
    actually evaluated (its KV cache reused the rest) where it reports them. Both y axes
    start at 0; ``unit`` names the tokenizer in their labels. ``measured`` is the dict of
    :func:`react_lab.lab.experiments.costs.measure_run`. Returns a
    ``matplotlib.figure.Figure``.
    """
    from matplotlib.figure import Figure  # heavy, optional: only plots need it

    steps, P = measured["steps"], measured["P"]
    prefix, model_text, observations = [P] * len(steps), measured["resent_A"], measured["resent_O"]
    fig = Figure(figsize=(10, 4.8), layout="constrained")
    left, right = fig.subplots(1, 2)
    left.bar(steps, prefix, color="#9ca3af", label=f"prompt prefix P = {P:,} (linear)")
    left.bar(steps, model_text, bottom=prefix, color="#93c5fd", label="re-sent model text")
    left.bar(
        steps,
        observations,
        bottom=[p + a for p, a in zip(prefix, model_text)],
        color="#1d4ed8",
        label="re-sent observations",
    )
    left.plot(steps, measured["reported"], "o", color="#111827", label="reported by the backend")
    left.plot(
        steps,
        measured["predicted_mean"],
        "--",
        color="#f59e0b",
        label=f"cost model, mean A = {measured['mean_A']:.0f}, O = {measured['mean_O']:.0f}",
    )
    over = [k for k, a, o in zip(steps, model_text, observations) if a + o > P]
    if over:
        _mark(left, over[0], f"from step {over[0]},\nre-sent > prefix")
    left.set(xlabel="step", ylabel=f"prompt tokens sent ({unit})", title="Each request")
    below = {"fontsize": 8, "loc": "upper center", "bbox_to_anchor": (0.5, -0.14), "ncol": 2}
    left.legend(**below)

    cum_prefix = running(prefix)
    cum_resent = running([a + o for a, o in zip(model_text, observations)])
    _stack_cumulative(right, steps, cum_prefix, cum_resent, "#1d4ed8", "re-sent text (quadratic)")
    if all(e is not None for e in measured["evaluated"]):  # a backend that reports its KV cache
        right.plot(
            steps,
            running(measured["evaluated"]),
            "s-",
            color="#059669",
            label="evaluated (the rest came from the KV cache)",
        )
    right.set(
        xlabel="steps so far",
        ylabel=f"cumulative prompt tokens ({unit})",
        title=f"The run: {sum(measured['reported']):,} prompt tokens in {len(steps)} steps",
    )
    right.legend(**below)
    for ax in (left, right):
        ax.set_xticks(steps)
        ax.set_ylim(bottom=0)
        ax.yaxis.set_major_formatter("{x:,.0f}")
    if title:
        fig.suptitle(title)
    return fig


def plot_trust_boundary():
    """Draw where "these characters are a tool call" is decided, text vs native.

    Returns the figure.
    """
    import matplotlib.pyplot as plt  # heavy, optional: only plots need it
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    fig, ax = plt.subplots(figsize=(10, 4.2))
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 4.4)
    ax.axis("off")
    lanes = [
        (
            3.2,
            "text protocol",
            [
                ("model", "writes text"),
                ("completion", "one string"),
                ("ACTION_RE + split(',')", "in YOUR client"),
                ("tool.fn(*args)", ""),
            ],
            2,
        ),
        (
            1.0,
            "native + schema",
            [
                ("model", "tokens"),
                ("grammar / provider", "serialises JSON"),
                ("validate_call", "jsonschema"),
                ("tool.fn(**args)", ""),
            ],
            1,
        ),
    ]
    for y, title, boxes, decider in lanes:
        ax.text(0.05, y + 0.85, title, fontsize=12, weight="bold")
        for i, (name, note) in enumerate(boxes):
            x = 0.2 + i * 2.5
            hot = i == decider
            ax.add_patch(
                FancyBboxPatch(
                    (x, y - 0.35),
                    1.9,
                    0.8,
                    boxstyle="round,pad=0.05",
                    facecolor="#fde68a" if hot else "#f3f4f6",
                    edgecolor="#b45309" if hot else "#6b7280",
                    linewidth=2 if hot else 1,
                )
            )
            ax.text(x + 0.95, y + 0.12, name, ha="center", fontsize=9.5, weight="bold")
            ax.text(x + 0.95, y - 0.18, note, ha="center", fontsize=8.5, color="#374151")
            if i:
                ax.add_patch(
                    FancyArrowPatch(
                        (x - 0.6, y + 0.05),
                        (x - 0.05, y + 0.05),
                        arrowstyle="-|>",
                        mutation_scale=14,
                    )
                )
        x = 0.2 + decider * 2.5 + 0.95
        ax.text(
            x,
            y - 0.7,
            "decides: this is a call",
            ha="center",
            fontsize=9,
            color="#b45309",
            style="italic",
        )
    ax.set_title('Where the decision "these characters are a tool call" is made', fontsize=12)
    fig.tight_layout()
    return fig


#: How the plot names each reason a no-stop completion ended (:func:`why_stopped`), and its colour.
WHY_STOPPED_BARS = {
    "forged": ("forged Observation", "#dc2626"),
    "length": ("hit max_tokens first", "#f59e0b"),
    "end_of_text": ("model ended its text", "#9ca3af"),
}


def plot_forge_rate(result: dict, claim: tuple[int, int] = SEED_CLAIM, ax=None):
    """Bar chart per 100 completions: forgeries and strict-parsed actions per arm, the claim beside.

    The no-stop arm's first bar is split by why each completion ended (:func:`why_stopped`:
    forged, hit ``max_tokens`` first, or the model ended its text); the with-stop arm's is
    its forgeries. ``claim`` is the seed's ``(forged, completions)`` without stop, drawn
    beside the measured forgeries. Returns the matplotlib ``Figure``.
    """
    import matplotlib.pyplot as plt  # heavy, optional: only plots need it

    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 3.8))
    n = result["n"]
    per100 = lambda k: 100 * k / n  # noqa: E731 -- a rate, so any n compares with the claim
    labelled = set()

    def bar(x, height, why, **style):
        label, color = WHY_STOPPED_BARS[why]
        bars = ax.bar(
            [x], [height], 0.25, color=color, label=None if why in labelled else label, **style
        )
        labelled.add(why)
        return bars

    ax.bar_label(
        bar(-0.14, per100(result["with_stop"]["forged"]), "forged"), fmt="%.0f", fontsize=8
    )
    bottom = 0.0
    for why, count in result["without_stop"]["why_stopped"].items():  # stacked: why each one ended
        bars = bar(0.72, per100(count), why, bottom=bottom)
        if count:
            ax.bar_label(bars, fmt="%.0f", fontsize=8, label_type="center")
        bottom += per100(count)
    ax.bar_label(
        ax.bar(
            [1.0],
            [100 * claim[0] / claim[1]],
            0.25,
            color="#e5e7eb",
            hatch="//",
            edgecolor="#6b7280",
            label=f"seed claim: {claim[0]} of {claim[1]} forged",
        ),
        fmt="%.0f",
        fontsize=8,
    )
    parsed = ax.bar(
        [0.14, 1.28],
        [per100(result[a]["parsed"]) for a in ARMS],
        0.25,
        color="#2563eb",
        label="strict regex finds an action",
    )
    ax.bar_label(parsed, fmt="%.0f", fontsize=8)
    ax.set_xticks([0, 1], ["with stop", "without stop\n(first bar: why each completion ended)"])
    ax.set_ylim(0, 125)
    ax.set_ylabel("completions per 100")
    ax.set_title(f"{result['model']}, {n} questions, max_tokens={result['max_tokens']}")
    ax.legend(fontsize=8, loc="upper left", ncol=2)
    return ax.figure

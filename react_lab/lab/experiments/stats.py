"""Success rates with their uncertainty, and reliability over repeated trials.

A figure such as "30 of 52 tasks" is a sample, not the model's rate: with 52 tasks the
95 % interval around 58 % is about ±13 points, so two configurations 5 points apart are
not yet told apart. Every rate the lab reports as a result goes through
:func:`success_rate`, which attaches the Wilson score interval (Wilson, 1927, "Probable
inference, the law of succession, and statistical inference", JASA 22:209-212).

Repeated trials answer a different question from one trial per task:

* **pass@k** — the task was solved in *at least one* of k trials (capability: can the
  agent do it at all?), as in Chen et al., 2021, "Evaluating Large Language Models
  Trained on Code" (arXiv:2107.03374);
* **pass^k** — the task was solved in *every one* of k trials (reliability: will it do it
  every time?), as in Yao et al., 2024, "τ-bench" (arXiv:2406.12045).

Two configurations run on the *same* tasks are compared task by task with
:func:`paired_comparison`: only the tasks where they disagree carry information, and
the exact McNemar test asks whether the disagreements lean one way more often than a
fair coin would (:func:`sign_test`, a two-sided binomial test on them). Paired, it tells
apart differences that two overlapping Wilson intervals cannot.

With n ≥ k trials per task both are estimated without bias from c successes out of n:
pass@k = 1 − C(n−c, k)/C(n, k) and pass^k = C(c, k)/C(n, k), averaged over tasks.

The two formulas are written here with the standard library (``statistics.NormalDist``
for the normal quantile, exact integer binomial coefficients) rather than imported
from SciPy: ``scipy.stats`` costs a notebook kernel about 70 MiB of memory, a seventh of
its 500 MB budget. The tests check both against SciPy's ``binomtest`` (``pvalue`` and
``proportion_ci(method="wilson")``) over every count up to n = 60, and at n = 10,000.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb, isfinite, sqrt
from operator import index
from statistics import NormalDist
from typing import Iterable, Mapping, Sequence

__all__ = [
    "Rate",
    "success_rate",
    "pass_at_k",
    "pass_hat_k",
    "Paired",
    "paired_comparison",
    "sign_test",
    "upper_bound",
    "paired_difference",
]


@dataclass(frozen=True)
class Rate:
    """A success rate over ``n`` tasks with its Wilson interval at ``confidence``.

    Fractions in [0, 1].
    """

    successes: int
    n: int
    low: float
    high: float
    confidence: float = 0.95

    @property
    def rate(self) -> float:
        """The observed fraction ``successes / n`` (0.0 when ``n`` is 0)."""
        return self.successes / self.n if self.n else 0.0

    def __str__(self) -> str:
        return (
            f"{self.successes}/{self.n} = {self.rate:.0%} "
            f"({100 * self.confidence:.4g}% CI {self.low:.0%}–{self.high:.0%})"
        )


def success_rate(successes: int, n: int, confidence: float = 0.95) -> Rate:
    """Return ``successes`` of ``n`` as a :class:`Rate` with its Wilson score interval.

    ``successes`` and ``n`` are counts of tasks (whole numbers); ``confidence`` is the
    interval's level, strictly between 0 and 1 (0.95 for the 95 % interval). With
    ``n == 0`` the interval is the whole of [0, 1]. Raises ``ValueError`` when
    ``successes`` is negative or larger than ``n``, or for a level outside (0, 1);
    ``TypeError`` for a count that is not a whole number.
    """
    successes, n = _count("successes", successes), _count("n", n)
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if not (isinstance(confidence, (int, float)) and isfinite(confidence) and 0 < confidence < 1):
        raise ValueError(f"confidence is a level between 0 and 1 such as 0.95, not {confidence!r}")
    if n == 0:
        return Rate(0, 0, 0.0, 1.0, confidence)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)  # 1.96 for 95 %
    p, z2 = successes / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    low = 0.0 if successes == 0 else centre - half  # exact ends: rounding would leave 1e-17
    high = 1.0 if successes == n else centre + half
    return Rate(successes, n, low, high, confidence)


def _count(name: str, value) -> int:
    """``value`` as an int if it is a whole number; else TypeError.

    A whole number: an int, a bool, a NumPy integer.
    """
    try:
        return index(value)
    except TypeError:
        raise TypeError(f"{name} is a count of tasks, a whole number, not {value!r}") from None


def _per_task(trials: Iterable[Sequence[bool]], k: int) -> list[tuple[int, int]]:
    counts = []
    for outcomes in trials:
        n, c = len(outcomes), sum(bool(x) for x in outcomes)
        if n < k:
            raise ValueError(f"a task has {n} trials; pass@{k}/pass^{k} need at least {k}")
        counts.append((n, c))
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return counts


def pass_at_k(trials: Iterable[Sequence[bool]], k: int) -> float:
    """Return pass@k: the mean chance that at least one of k trials of a task succeeds.

    ``trials`` holds one sequence of booleans per task (one per trial, n ≥ k each).
    Returns a fraction in [0, 1] (0.0 for no tasks). Raises ``ValueError`` when a task
    has fewer than ``k`` trials or ``k < 1``. Estimator: Chen et al., 2021.
    """
    counts = _per_task(trials, k)
    if not counts:
        return 0.0
    return sum(1 - comb(n - c, k) / comb(n, k) for n, c in counts) / len(counts)


def pass_hat_k(trials: Iterable[Sequence[bool]], k: int) -> float:
    """Return pass^k: the mean chance that all k trials of a task succeed.

    ``trials`` holds one sequence of booleans per task (one per trial, n ≥ k each).
    Returns a fraction in [0, 1] (0.0 for no tasks). Raises ``ValueError`` when a task
    has fewer than ``k`` trials or ``k < 1``. Estimator: Yao et al., 2024 (τ-bench).
    """
    counts = _per_task(trials, k)
    if not counts:
        return 0.0
    return sum(comb(c, k) / comb(n, k) for n, c in counts) / len(counts)


@dataclass(frozen=True)
class Paired:
    """Two configurations on the same tasks: ``gained`` (solved by the new one only),
    ``lost`` (solved by the old one only), ``same`` (agreeing tasks) and ``p``, the
    two-sided exact McNemar p-value (1.0 when they never disagree)."""

    gained: int
    lost: int
    same: int
    p: float

    @property
    def verdict(self) -> str:
        """``"better"``/``"worse"`` when ``p < 0.05``, else ``"not significant"``."""
        if self.p >= 0.05:
            return "not significant"
        return "better" if self.gained > self.lost else "worse"

    def __str__(self) -> str:
        return f"+{self.gained} -{self.lost} (p = {self.p:.2g}, {self.verdict})"


def paired_comparison(old: dict[str, bool], new: dict[str, bool]) -> Paired:
    """Compare two runs task by task: ``{task_id: solved}`` for each, on the same task ids.

    Returns a :class:`Paired`; the p-value is the exact McNemar test (a two-sided
    binomial test of the discordant tasks against 1/2, :func:`sign_test`; McNemar,
    1947, Psychometrika 12:153-157). Raises ``ValueError`` when the task ids differ,
    ``TypeError`` when either run is not a mapping.
    """
    if not (isinstance(old, Mapping) and isinstance(new, Mapping)):
        raise TypeError(
            "compare two runs as {task_id: solved} mappings, not "
            f"{type(old).__name__} and {type(new).__name__}"
        )
    if set(old) != set(new):
        raise ValueError(f"the runs cover different tasks: {len(set(old) ^ set(new))} differ")
    gained = sum(bool(new[t]) and not old[t] for t in old)
    lost = sum(bool(old[t]) and not new[t] for t in old)
    return Paired(gained, lost, len(old) - gained - lost, sign_test(gained, lost))


def sign_test(up: int, down: int) -> float:
    """Return the two-sided exact p-value of ``up`` changes one way against ``down`` the other.

    Under the null hypothesis each change goes either way with probability 1/2, so
    ``up`` ~ Binomial(up + down, 1/2); the p-value is the chance of a split at least as
    uneven as the one seen, in either direction: 2 · P(X ≤ min(up, down)), capped at 1
    (1.0 when there are no changes). Raises ``ValueError`` for a negative count,
    ``TypeError`` for one that is not a whole number.
    """
    up, down = _count("up", up), _count("down", down)
    if up < 0 or down < 0:
        raise ValueError(f"counts of changes cannot be negative, got up={up}, down={down}")
    n = up + down
    if n == 0:
        return 1.0
    tail, term = 0, 1  # term runs through C(n, 0), C(n, 1), ...: exact integers, one step each
    for i in range(min(up, down) + 1):
        tail += term
        term = term * (n - i) // (i + 1)
    return min(1.0, 2 * tail / 2**n)


def upper_bound(successes: int, n: int, confidence: float = 0.95) -> float:
    """The one-sided exact (Clopper-Pearson) upper bound of a rate: ``successes`` of ``n``.

    The largest p with P(X <= successes | n, p) >= 1 - confidence; for 0 of n it is
    ``1 - (1 - confidence) ** (1 / n)`` (0 of 200: 1.49 %). Found by bisection on the
    exact binomial tail (1.0 when n is 0 or every trial succeeded).
    """
    successes, n = _count("successes", successes), _count("n", n)
    if n == 0 or successes >= n:
        return 1.0
    alpha = 1 - confidence

    def tail(p: float) -> float:  # P(X <= successes)
        return sum(comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(successes + 1))

    low, high = successes / n, 1.0
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if tail(mid) > alpha else (low, mid)
    return high


@dataclass(frozen=True)
class Difference:
    """``new`` minus ``old`` on the same tasks, in points of rate, with its interval."""

    old: float
    new: float
    low: float
    high: float
    n: int

    @property
    def points(self) -> float:
        return 100 * (self.new - self.old)

    def __str__(self) -> str:
        return f"{self.points:+.1f} points (95% CI {100 * self.low:+.1f} to {100 * self.high:+.1f})"


def paired_difference(old: dict[str, bool], new: dict[str, bool]) -> Difference:
    """The difference of two success rates on the same tasks, with Newcombe's interval.

    ``{task_id: solved}`` for each run, on the same ids. The interval is Newcombe's (1998,
    Statistics in Medicine 17:2635-2650, method 10): the two Wilson intervals combined
    with the correlation of the paired outcomes. Raises ``ValueError`` when the ids differ.
    """
    if set(old) != set(new):
        raise ValueError(f"the runs cover different tasks: {len(set(old) ^ set(new))} differ")
    n = len(old)
    a = sum(bool(old[t]) and bool(new[t]) for t in old)
    b = sum(bool(old[t]) and not new[t] for t in old)
    c = sum(bool(new[t]) and not old[t] for t in old)
    d = n - a - b - c
    r1, r2 = success_rate(a + b, n), success_rate(a + c, n)
    p1, p2 = r1.rate, r2.rate
    denominator = (a + b) * (c + d) * (a + c) * (b + d)
    phi = (a * d - b * c) / sqrt(denominator) if denominator else 0.0
    low = (p2 - p1) - sqrt(
        max(
            0.0, (p2 - r2.low) ** 2 - 2 * phi * (p2 - r2.low) * (r1.high - p1) + (r1.high - p1) ** 2
        )
    )
    high = (p2 - p1) + sqrt(
        max(
            0.0, (r2.high - p2) ** 2 - 2 * phi * (r2.high - p2) * (p1 - r1.low) + (p1 - r1.low) ** 2
        )
    )
    return Difference(p1, p2, low, high, n)

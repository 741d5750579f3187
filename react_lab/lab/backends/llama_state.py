"""The embedded model's llama.cpp internals.

They decide its speed, and keep greedy output reproducible.

:class:`react_lab.lab.backends.local.LocalModel` uses these; nothing here is needed to follow the
agent. They reach into llama-cpp-python (``Llama._ctx``, ``input_ids``, ``n_tokens``,
``_model.vocab``) and llama.cpp's C API, so llama-cpp-python is pinned (pyproject.toml)
and model tests check them against the stock calls (tests/lab/backends/test_speed_model.py).

* **The KV cache.** llama.cpp keeps the keys and values of the tokens it has evaluated;
  llama-cpp-python reuses the longest prefix a new prompt shares with the cached tokens
  and evaluates only the rest. :func:`trim_cache` makes that reuse leave at least
  :data:`MIN_EVAL` prompt tokens to evaluate: the logits after one token evaluated alone
  (a batch of 1, which llama-cpp-python runs when the whole prompt is already cached)
  differ from a cold evaluation's by up to 0.72 here, enough to flip a greedy near-tie,
  while every split that evaluates 2 or more tokens gives bit-identical logits. With the
  rule, a prompt's greedy completion no longer depends on what ran before it.
* **Prompt prefixes.** Every run starts with the same prefix (instructions, tools,
  exemplar; or the native system turn). :class:`PrefixState` snapshots its cache entries
  once and restores them (a few milliseconds) when other prompts have pushed them out.
* **Greedy decoding.** :func:`react_lab.lab.backends.decode.greedy_decode` picks the
  highest-scoring token at each step, as ``create_completion(temperature=0)`` does, but
  hands each token to the caller, who may end the completion (the forgery experiment ends
  one as soon as a made-up ``Observation`` label is certain). With a
  :class:`react_lab.lab.backends.decode.GrammarSampler` it decodes under a grammar checking
  *one* token per step instead of the whole vocabulary.
* **Batched decoding.** :func:`react_lab.lab.backends.decode.greedy_decode_batch` decodes
  several prompts side by side, one token of each per llama.cpp call, as a server with
  continuous batching does. On these 2 cores a call with 8 tokens takes about 5x one with a
  single token, so 8 prompts finish in well under the time 8 single ones take. The price is
  arithmetic: a call with several tokens runs other kernels than a call with one, so a
  batched greedy completion may part from the one-at-a-time completion at a near-tie (about
  4 in 10 did on the forgery experiment's prompts). Both are the model's greedy output; they
  are not the same output. With ``width=1`` it gives the one-at-a-time tokens exactly.
* **Prompt evaluation in small calls.** :func:`load_llama` gives a ``Llama`` that
  evaluates a prompt in llama.cpp calls of at most :data:`EVAL_CALL_TOKENS` tokens
  (:func:`eval_cuts`: never one token alone, by the rule above). llama.cpp's scratch
  memory grows with the tokens of a call times the tokens cached (the attention scores):
  llama-cpp-python's 512-token calls on a 3,000-token prompt touch about 60 MiB, 128-token
  calls a quarter of it, at the same speed on these 2 cores. Calls of 2 or more tokens
  gave bit-identical logits however the prompt was cut (measured on this model and
  build; tests/lab/backends/test_speed_model.py checks 128-token calls against one call), and the
  committed evaluation and ladder records re-ran word for word.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Sequence

#: Prompt tokens evaluated at least, per completion (see the module docstring).
MIN_EVAL = 2

#: Tokens per llama.cpp call in :func:`greedy_decode_batch` (at least its width).
BATCH_CALL_TOKENS = 64

#: Most prompt tokens per llama.cpp call of the model's own context (its ``n_batch`` and
#: ``n_ubatch``; llama-cpp-python's default is 512). See the module docstring.
EVAL_CALL_TOKENS = 128


def eval_cuts(n: int, size: int) -> list[tuple[int, int]]:
    """Split ``n`` tokens into ``(start, end)`` calls of at most ``size``, none of one token alone.

    A last call of one token (``n = k * size + 1``) becomes two tokens, taken from the call
    before it; ``n = 1`` stays one call of one token (a generated token). Raises
    ``ValueError`` for ``size <= MIN_EVAL`` (the call before could then be left with one).
    """
    if size <= MIN_EVAL:
        raise ValueError(f"calls must hold more than {MIN_EVAL} tokens, not {size}")
    cuts = list(range(0, n, size))
    if len(cuts) > 1 and n - cuts[-1] < MIN_EVAL:
        cuts[-1] = n - MIN_EVAL
    return list(zip(cuts, cuts[1:] + [n]))


def load_llama(model_path: str, **params):
    """Load ``llama_cpp.Llama(model_path, **params)``.

    Its ``eval`` cuts prompts by :func:`eval_cuts`.

    ``n_batch`` and ``n_ubatch`` default to :data:`EVAL_CALL_TOKENS`; every other
    parameter is llama-cpp-python's. A one-token call remains only where there is one
    token to evaluate (a generated token; a prompt whose rest is one token, which
    :func:`trim_cache` prevents). Raises ``ValueError`` for ``n_batch <= MIN_EVAL``
    (before loading) and what ``Llama`` raises (``ValueError`` for a file llama.cpp
    cannot load).
    """
    from llama_cpp import Llama  # heavy: loads llama.cpp

    params.setdefault("n_batch", EVAL_CALL_TOKENS)
    n_ctx = params.get("n_ctx") or params["n_batch"]  # llama-cpp-python: n_ctx 0 = the model's own
    # checks the call size (Llama caps n_batch at n_ctx)
    eval_cuts(0, min(params["n_batch"], n_ctx))

    class CuttingLlama(Llama):
        """``Llama`` whose ``eval`` cuts what it evaluates by :func:`eval_cuts`.

        No one-token last call.
        """

        def eval(self, tokens: Sequence[int]) -> None:
            tokens = list(tokens)
            for start, end in eval_cuts(len(tokens), self.n_batch):
                super().eval(tokens[start:end])

    params.setdefault("n_ubatch", params["n_batch"])
    return CuttingLlama(model_path=model_path, **params)


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading items ``a`` and ``b`` share (token ids of two prompts)."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def cached_tokens(llm) -> list[int]:
    """The tokens whose keys and values ``llm`` (a ``llama_cpp.Llama``) holds, in order."""
    return llm.input_ids[: llm.n_tokens].tolist()


def trim_cache(llm, tokens: Sequence[int], min_eval: int = MIN_EVAL) -> int:
    """Keep the cached prefix ``tokens`` start with, less enough that ``min_eval`` are evaluated.

    Drops every cached token past that prefix (as ``Llama.generate`` would) and returns
    how many of ``tokens`` the next evaluation runs (all of them when nothing is shared).
    """
    keep = min(common_prefix(cached_tokens(llm), tokens), max(0, len(tokens) - min_eval))
    if keep < llm.n_tokens:
        llm._ctx.kv_cache_seq_rm(-1, keep, -1)
        llm.n_tokens = keep
    return len(tokens) - keep


def shared_tokens(llm, texts: Sequence[str]) -> list[int]:
    """The tokens every text in ``texts`` starts with, by ``llm``'s tokenizer.

    Special tokens are parsed.
    """
    tokenized = [llm.tokenize(t.encode("utf-8"), add_bos=False, special=True) for t in texts]
    n = min(common_prefix(tokenized[0], t) for t in tokenized)
    return tokenized[0][:n]


class ContextWindowExceeded(ValueError):
    """A prompt does not fit the model's context window (llama.cpp refuses it before decoding).

    A ``ValueError``, as llama-cpp-python raises it; the evaluation ends that run with
    ``stopped_by="context_window"`` instead of stopping the whole evaluation.
    """


def check_fits(prompt_tokens: int, n_ctx: int, max_tokens: int) -> None:
    """Refuse ``max_tokens < 1`` and a prompt that fills the window.

    The first raises ``ValueError``, the second :class:`ContextWindowExceeded`.
    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, not {max_tokens}")
    if prompt_tokens >= n_ctx:
        raise ContextWindowExceeded(
            f"the prompt is {prompt_tokens} tokens; the context window holds {n_ctx}"
        )


def c_view(data: bytearray):
    """A ctypes ``uint8`` array over ``data``'s own memory: llama.cpp reads or writes it in place.

    No copy is made (``bytes(array[:n])`` would first build a list of Python ints, about 8
    bytes per byte, and ``from_buffer_copy`` a second copy). ``data`` cannot be resized
    while the view is alive. Raises ``TypeError`` for a read-only buffer such as ``bytes``.
    """
    return (ctypes.c_uint8 * len(data)).from_buffer(data)


class PrefixState:
    """A snapshot of the KV cache for one prompt prefix, restorable into the same ``Llama``.

    Only sequence 0's cache cells are saved (``llama_state_seq_get_data``: about 16 MB for
    a 700-token prefix), into one ``bytearray`` that llama.cpp writes and reads in place
    (:func:`c_view`). ``Llama.save_state`` would also copy a tokens x vocabulary array of
    logits (about 120 MB) that greedy decoding never reads.
    """

    def __init__(self, tokens: Sequence[int], data: bytes | bytearray):
        self.tokens = list(tokens)
        self.data = data if isinstance(data, bytearray) else bytearray(data)
        self.restores = 0

    @classmethod
    def capture(cls, llm, tokens: Sequence[int]) -> "PrefixState":
        """Evaluate ``tokens`` (reusing what is cached of them) and snapshot their cache entries."""
        import llama_cpp  # heavy: loads llama.cpp

        trim_cache(llm, tokens, min_eval=0)
        llm.eval(list(tokens)[llm.n_tokens :])
        size = llama_cpp.llama_state_seq_get_size(llm._ctx.ctx, 0)
        data = bytearray(size)
        written = llama_cpp.llama_state_seq_get_data(llm._ctx.ctx, c_view(data), size, 0)
        del data[written:]  # the view is gone once the call returns
        return cls(tokens, data)

    @property
    def nbytes(self) -> int:
        return len(self.data)

    def starts(self, tokens: Sequence[int]) -> bool:
        """True if ``tokens`` begin with this prefix."""
        return len(tokens) > len(self.tokens) and common_prefix(self.tokens, tokens) == len(
            self.tokens
        )

    def ensure(self, llm) -> int:
        """Restore the snapshot if the cache lost part of the prefix.

        Returns the prompt tokens saved. Raises ``RuntimeError`` (after clearing the cache)
        if llama.cpp refuses the data.
        """
        import llama_cpp  # heavy: loads llama.cpp

        have = common_prefix(cached_tokens(llm), self.tokens)
        if have >= len(self.tokens):
            return 0
        llm._ctx.kv_cache_seq_rm(-1, 0, -1)
        if (
            llama_cpp.llama_state_seq_set_data(llm._ctx.ctx, c_view(self.data), len(self.data), 0)
            == 0
        ):
            llm.reset()
            raise RuntimeError("llama.cpp refused the prompt-prefix snapshot")
        llm.input_ids[: len(self.tokens)] = self.tokens
        llm.n_tokens = len(self.tokens)
        llm._requires_eval = True  # the logits are stale: the next prompt evaluates its suffix
        self.restores += 1
        return len(self.tokens) - have


@dataclass
class Usage:
    """Running totals of one model's work.

    Calls, prompt tokens sent and evaluated, tokens generated.

    ``prompt_sent`` counts every prompt token of every call; ``prompt_evaluated`` only those
    llama.cpp ran (the rest came from its cache or a :class:`PrefixState`); ``seconds`` is
    the time inside the model. ``after - before`` is what happened in between, so an
    experiment reports its own usage from two readings (:meth:`snapshot`).
    """

    calls: int = 0
    prompt_sent: int = 0
    prompt_evaluated: int = 0
    generated: int = 0
    seconds: float = 0.0

    def add(
        self, sent: int, evaluated: int, generated: int, seconds: float, calls: int = 1
    ) -> None:
        self.calls += calls
        self.prompt_sent += sent
        self.prompt_evaluated += evaluated
        self.generated += generated
        self.seconds += seconds

    def snapshot(self) -> "Usage":
        return Usage(
            self.calls, self.prompt_sent, self.prompt_evaluated, self.generated, self.seconds
        )

    def __sub__(self, other: "Usage") -> "Usage":
        return Usage(
            self.calls - other.calls,
            self.prompt_sent - other.prompt_sent,
            self.prompt_evaluated - other.prompt_evaluated,
            self.generated - other.generated,
            self.seconds - other.seconds,
        )

    def to_dict(self) -> dict:
        """The totals as a dict, seconds rounded.

        ``{"calls", "prompt_sent", "prompt_evaluated", "generated", "seconds"}``.
        """
        return {
            "calls": self.calls,
            "prompt_sent": self.prompt_sent,
            "prompt_evaluated": self.prompt_evaluated,
            "generated": self.generated,
            "seconds": round(self.seconds, 3),
        }

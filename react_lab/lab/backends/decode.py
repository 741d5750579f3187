"""Greedy decoding on the embedded model: one prompt, several side by side, and under a grammar.

:func:`greedy_decode` picks the highest-scoring token at each step, as
``create_completion(temperature=0)`` does, but hands each token to the caller, who may
end the completion (the forgery experiment ends one as soon as a made-up
``Observation`` label is certain). With a :class:`GrammarSampler` it decodes under a
grammar checking *one* token per step instead of the whole vocabulary.
:func:`greedy_decode_batch` decodes several prompts side by side, one token of each per
llama.cpp call, as a server with continuous batching does. The cache rules and prefix
snapshots both rely on are in :mod:`react_lab.lab.backends.llama_state`.
"""

from __future__ import annotations

import ctypes
import math
import time
from dataclasses import dataclass
from typing import Callable, Sequence

from .llama_state import (
    BATCH_CALL_TOKENS,
    MIN_EVAL,
    PrefixState,
    c_view,
    check_fits,
    common_prefix,
    eval_cuts,
    trim_cache,
)


def new_grammar_sampler(llm, grammar: str):
    """Parse a GBNF ``grammar`` into a llama.cpp sampler (free it with ``llama_sampler_free``).

    Raises ``ValueError`` when llama.cpp cannot parse it: llama-cpp-python would hand the
    NULL pointer on to C and the process would crash.
    """
    import llama_cpp  # heavy: loads llama.cpp

    sampler = llama_cpp.llama_sampler_init_grammar(
        llm._model.vocab, grammar.encode("utf-8"), b"root"
    )
    if not sampler:
        raise ValueError("llama.cpp could not parse the grammar (see its message above)")
    return sampler


class GrammarSampler:
    """One parsed grammar, asked about one token at a time (greedy decoding needs no more).

    llama-cpp-python puts the grammar in the sampler chain, so llama.cpp runs it over the
    whole vocabulary (49,152 tokens) at every step, and the reply schema's long strings
    make that slow (about 6 ms a token here). Under greedy decoding one question is
    enough: is the best token allowed? If so it is also the best *allowed* token. Only
    when it is refused is the whole vocabulary masked (:meth:`best_allowed`), the rule
    llama.cpp's own samplers follow. Output tokens equal ``create_completion(grammar=...,
    temperature=0)``'s. Raises ``ValueError`` for a grammar llama.cpp cannot parse.
    """

    def __init__(self, llm, grammar: str):
        import llama_cpp  # heavy: loads llama.cpp
        from llama_cpp import _internals

        self.pointer = new_grammar_sampler(llm, grammar)
        self._one = (llama_cpp.llama_token_data * 1)()
        self._one_array = llama_cpp.llama_token_data_array(
            data=self._one, size=1, selected=-1, sorted=False
        )
        self._all = _internals.LlamaTokenDataArray(n_vocab=llm.n_vocab())
        self.full_checks = 0  # steps where the best token was refused

    def reset(self) -> None:
        """Start a new reply."""
        import llama_cpp

        llama_cpp.llama_sampler_reset(self.pointer)

    def allows(self, token: int) -> bool:
        """Whether the grammar accepts ``token`` next."""
        import llama_cpp

        self._one[0].id, self._one[0].logit, self._one[0].p = token, 0.0, 0.0
        self._one_array.size, self._one_array.selected, self._one_array.sorted = 1, -1, False
        llama_cpp.llama_sampler_apply(self.pointer, ctypes.byref(self._one_array))
        return self._one[0].logit != -math.inf

    def best_allowed(self, logits) -> int:
        """The highest-scoring token the grammar accepts next (the first of equals)."""
        import llama_cpp
        import numpy as np

        self._all.copy_logits(logits)
        llama_cpp.llama_sampler_apply(self.pointer, ctypes.byref(self._all.candidates))
        self.full_checks += 1
        return int(self._all.candidates_data.id[int(np.argmax(self._all.candidates_data.logit))])

    def accept(self, token: int) -> None:
        """Advance the grammar past ``token``."""
        import llama_cpp

        llama_cpp.llama_sampler_accept(self.pointer, token)

    def close(self) -> None:
        if self.pointer:
            import llama_cpp

            llama_cpp.llama_sampler_free(self.pointer)
            self.pointer = None

    def __del__(self):  # pragma: no cover -- interpreter teardown may have dropped llama_cpp
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass


@dataclass
class Decoded:
    """The tokens :func:`greedy_decode` produced and why it ended.

    ``finish`` is ``"end_of_text"`` (the model's end-of-generation token, not included),
    ``"length"`` (``max_tokens`` reached) or ``"stopped"`` (the caller's ``on_token``
    returned False). ``evaluated_tokens`` counts the prompt tokens evaluated (the rest
    came from the cache); ``seconds`` covers prompt evaluation and decoding.
    """

    tokens: list[int]
    finish: str
    evaluated_tokens: int
    seconds: float
    started: float = 0.0  # time.perf_counter() when this prompt's evaluation began


def greedy_decode(
    llm,
    prompt: Sequence[int],
    *,
    max_tokens: int,
    on_token: Callable[[int], bool] | None = None,
    grammar: GrammarSampler | None = None,
) -> Decoded:
    """Evaluate the uncached rest of ``prompt``, then append the highest-scoring token until done.

    The cache is reused as :func:`trim_cache` allows (at least :data:`MIN_EVAL` prompt
    tokens are evaluated). ``on_token(token)`` sees
    each token as it is chosen and returns False to end the completion there (the token
    is kept). ``grammar`` constrains the choice (:class:`GrammarSampler`, reset here).
    The same tokens as ``create_completion(prompt, temperature=0)`` would produce from the
    same cache state, ``max_tokens`` cut to the context window as it cuts it. Raises
    :class:`ContextWindowExceeded` (a ``ValueError``) when the prompt does not fit the window,
    ``ValueError`` for an empty prompt or ``max_tokens < 1``.
    """
    import llama_cpp  # heavy: loads llama.cpp
    import numpy as np

    t0 = time.perf_counter()
    if not prompt:
        raise ValueError("the prompt has no tokens: there is nothing to continue")
    check_fits(len(prompt), llm.n_ctx(), max_tokens)
    max_tokens = min(max_tokens, llm.n_ctx() - len(prompt))
    evaluated = trim_cache(llm, prompt)
    llm.eval(list(prompt)[llm.n_tokens :])
    if grammar is not None:
        grammar.reset()
    vocab, n_vocab = llm._model.vocab, llm.n_vocab()
    tokens: list[int] = []
    finish = "length"
    while len(tokens) < max_tokens:
        logits = np.ctypeslib.as_array(
            llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1), shape=(n_vocab,)
        )
        token = int(np.argmax(logits))
        if grammar is not None and not grammar.allows(token):
            token = grammar.best_allowed(logits)
        if llama_cpp.llama_vocab_is_eog(vocab, token):
            finish = "end_of_text"
            break
        if grammar is not None:
            grammar.accept(token)
        tokens.append(token)
        if on_token is not None and not on_token(token):
            finish = "stopped"
            break
        if len(tokens) < max_tokens:
            llm.eval([token])
    return Decoded(tokens, finish, evaluated, time.perf_counter() - t0, t0)


def greedy_decode_batch(
    llm,
    prompts: Sequence[Sequence[int]],
    *,
    max_tokens: int,
    width: int = 8,
    on_token: Callable[[int, int], bool] | None = None,
    on_done: Callable[[int, Decoded], None] | None = None,
    prefix: PrefixState | None = None,
) -> list[Decoded]:
    """Greedy-decode every prompt, ``width`` of them side by side (continuous batching).

    ``prompts`` are token ids; the result has one :class:`Decoded` per prompt, in order.
    Up to ``width`` prompts are live at once, each its own sequence in one llama.cpp
    batch: every call decodes the next token of each live one, and a finished prompt's
    place goes to the next in line. The prefix all prompts share is evaluated once and
    its cache cells shared by every sequence (loaded from ``prefix``, a
    :class:`PrefixState` of ``llm``, as far as it covers it); each prompt's own rest (at
    least :data:`MIN_EVAL` tokens) is evaluated alone when it starts. ``on_token(i, token)``
    sees each token of prompt ``i`` and returns False to end that completion there;
    ``on_done(i, decoded)`` is told when prompt ``i`` is finished. ``max_tokens`` is cut to
    ``llm``'s context window per prompt, as :func:`greedy_decode` cuts it.

    Runs in a llama.cpp context of its own beside ``llm``'s (its KV cache sized for this
    call, freed on return), so ``llm``'s cache is untouched. With ``width=1`` the tokens
    are :func:`greedy_decode`'s; with more, see :mod:`react_lab.lab.backends.llama_state`
    (arithmetic). Side by side pays when the prompts share a long prefix and their own
    rests are short (the forgery experiment: about 614 tokens shared, 25-40 each): every
    call attends over the cache cells of all live sequences, and the rests are evaluated
    in calls of :data:`BATCH_CALL_TOKENS`, so long prompts that share little run slower
    than one at a time (8 unshared 2,000-token prompts: 252 s against 77 s).
    ``evaluated_tokens`` counts each prompt's own rest, and what was evaluated of the
    shared prefix once, in the first prompt's; ``seconds`` runs from a prompt's start to
    its end, so the prompts' times overlap.
    Raises :class:`ContextWindowExceeded` when a prompt does not fit ``llm``'s window;
    ``ValueError`` for a width outside 1..255 (llama.cpp's limit on sequences, less the
    prefix's), ``max_tokens < 1``, an empty prompt or a token id outside the vocabulary;
    ``RuntimeError`` if llama.cpp refuses a batch or the snapshot.
    """
    import llama_cpp  # heavy: loads llama.cpp

    most = llama_cpp.llama_max_parallel_sequences() - 1  # sequence 0 holds the shared prefix
    if not 1 <= width <= most:
        raise ValueError(f"width must be between 1 and {most}, not {width}")
    prompts = [list(p) for p in prompts]
    if not prompts:
        return []
    if not all(prompts):
        raise ValueError("every prompt needs at least one token")
    n_vocab = llm.n_vocab()
    bad = next((t for p in prompts for t in p if not 0 <= t < n_vocab), None)
    if bad is not None:
        raise ValueError(f"token id {bad} is not in the model's vocabulary (0..{n_vocab - 1})")
    t0 = time.perf_counter()
    for p in prompts:
        check_fits(len(p), llm.n_ctx(), max_tokens)
    decoder = _BatchDecoder(llm, prompts, max_tokens, min(width, len(prompts)), on_token, on_done)
    try:
        return decoder.decode_all(prefix, t0)
    finally:
        decoder.close()


class _BatchDecoder:
    """One call of :func:`greedy_decode_batch`.

    Its own llama.cpp context, batch and live sequences.
    """

    def __init__(
        self, llm, prompts: list[list[int]], max_tokens: int, width: int, on_token, on_done
    ):
        import llama_cpp  # heavy: loads llama.cpp
        from llama_cpp import _internals

        self.prompts, self.on_token, self.on_done, self.width = prompts, on_token, on_done, width
        n_ctx = llm.n_ctx()
        self.limits = [min(max_tokens, n_ctx - len(p)) for p in prompts]
        self.shared = max(
            0,
            min(
                min(common_prefix(prompts[0], p) for p in prompts),
                min(len(p) for p in prompts) - MIN_EVAL,
            ),
        )
        cells = (
            self.shared
            + width * max(len(p) - self.shared + n for p, n in zip(prompts, self.limits))
            + 1
        )
        params = llama_cpp.llama_context_params.from_buffer_copy(llm.context_params)
        params.n_ctx = -(-cells // 256) * 256
        params.n_seq_max = width + 1  # sequence 0 holds the shared prefix
        params.kv_unified = True  # one cache, so the prefix cells are shared, not copied
        # Small calls: the prefix usually comes from its snapshot, and llama.cpp sizes its
        # scratch memory for the largest call.
        # >= n_seq_max
        params.n_batch = params.n_ubatch = self.n_batch = max(BATCH_CALL_TOKENS, width + 1)
        self.ctx = _internals.LlamaContext(model=llm._model, params=params, verbose=False)
        self.batch = llama_cpp.llama_batch_init(self.n_batch, 0, 1)
        self.vocab, self.n_vocab = llm._model.vocab, llm.n_vocab()
        self.results: list[Decoded | None] = [None] * len(prompts)
        self.live: dict[int, dict] = {}  # sequence id -> the prompt it decodes and its state

    def close(self) -> None:
        import llama_cpp

        llama_cpp.llama_batch_free(self.batch)
        self.ctx.close()

    def run(self, items) -> list[int]:
        """Decode ``(token, position, sequence, wants_logits)`` items.

        Returns the best next token per logit row.
        """
        import llama_cpp
        import numpy as np

        batch = self.batch
        batch.n_tokens = len(items)
        rows = []
        for k, (token, pos, seq, wants) in enumerate(items):
            batch.token[k], batch.pos[k], batch.n_seq_id[k], batch.logits[k] = token, pos, 1, wants
            batch.seq_id[k][0] = seq
            if wants:
                rows.append(k)
        code = llama_cpp.llama_decode(self.ctx.ctx, batch)
        if code != 0:
            raise RuntimeError(
                f"llama.cpp could not decode the batch (llama_decode returned {code})"
            )
        return [
            int(
                np.argmax(
                    np.ctypeslib.as_array(
                        llama_cpp.llama_get_logits_ith(self.ctx.ctx, k), shape=(self.n_vocab,)
                    )
                )
            )
            for k in rows
        ]

    def evaluate(self, tokens, start, seq) -> int | None:
        """Evaluate ``tokens`` in calls of at most ``n_batch``.

        Never one token alone (:func:`eval_cuts`).
        """
        best = None
        for at, end in eval_cuts(len(tokens), self.n_batch):
            out = self.run(
                [(tokens[k], start + k, seq, k == len(tokens) - 1) for k in range(at, end)]
            )
            best = out[0] if out else None
        return best

    def take(self, seq: int, token: int) -> None:
        """Give sequence ``seq`` its next token; end it if that finishes its completion."""
        import llama_cpp

        state = self.live[seq]
        i, finish = state["i"], None
        if llama_cpp.llama_vocab_is_eog(self.vocab, token):
            finish = "end_of_text"
        else:
            state["tokens"].append(token)
            if self.on_token is not None and not self.on_token(i, token):
                finish = "stopped"
            elif len(state["tokens"]) >= self.limits[i]:
                finish = "length"
        if finish is None:
            state["next"] = token
            return
        del self.live[seq]
        llama_cpp.llama_memory_seq_rm(self.ctx.memory, seq, -1, -1)
        now = time.perf_counter()
        self.results[i] = Decoded(
            state["tokens"], finish, state["evaluated"], now - state["started"], state["started"]
        )
        if self.on_done is not None:
            self.on_done(i, self.results[i])

    def load_prefix(self, prefix: PrefixState | None) -> int:
        """Load the shared prefix from its snapshot as far as it covers it; the tokens loaded."""
        import llama_cpp

        first = self.prompts[0]
        if (
            prefix is None
            or len(prefix.tokens) > self.shared
            or prefix.tokens != first[: len(prefix.tokens)]
        ):
            return 0
        if (
            llama_cpp.llama_state_seq_set_data(
                self.ctx.ctx, c_view(prefix.data), len(prefix.data), 0
            )
            == 0
        ):
            raise RuntimeError("llama.cpp refused the prompt-prefix snapshot")
        return len(prefix.tokens)

    def start(self, i: int, seq: int, started: float, loaded: int) -> None:
        """Start prompt ``i`` on sequence ``seq``: share the prefix cells, evaluate its own rest."""
        import llama_cpp

        shared = self.shared
        if shared:
            llama_cpp.llama_memory_seq_cp(self.ctx.memory, 0, seq, 0, shared)
        rest = self.prompts[i][shared:]
        self.live[seq] = {
            "i": i,
            "tokens": [],
            "pos": len(self.prompts[i]),
            "started": started,
            "evaluated": len(rest) + (shared - loaded if i == 0 else 0),
        }
        self.take(seq, self.evaluate(rest, shared, seq))

    def decode_all(self, prefix: PrefixState | None, t0: float) -> list[Decoded]:
        """Evaluate the shared prefix once, then decode every prompt, ``width`` live at a time."""
        loaded = self.load_prefix(prefix)
        self.evaluate(self.prompts[0][loaded : self.shared], loaded, 0)
        waiting = list(range(len(self.prompts)))[::-1]
        free = list(range(self.width, 0, -1))
        live = self.live
        while waiting or live:
            while waiting and free:
                i, seq = waiting.pop(), free.pop()
                # the first waited for the prefix
                self.start(i, seq, t0 if i == 0 else time.perf_counter(), loaded)
                if seq not in live:
                    free.append(seq)
            if not live:
                continue
            order = list(live)
            best = self.run([(live[s]["next"], live[s]["pos"], s, True) for s in order])
            for seq, token in zip(order, best):
                live[seq]["pos"] += 1
                self.take(seq, token)
                if seq not in live:
                    free.append(seq)
        return self.results  # type: ignore[return-value]

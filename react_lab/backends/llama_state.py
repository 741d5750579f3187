"""The embedded model's llama.cpp internals that decide its speed, and keep greedy output reproducible.

:class:`react_lab.backends.local.LocalModel` uses these; nothing here is needed to follow the
agent. They reach into llama-cpp-python (``Llama._ctx``, ``input_ids``, ``n_tokens``,
``_model.vocab``) and llama.cpp's C API, so llama-cpp-python is pinned (pyproject.toml)
and model tests check them against the stock calls (tests/test_speed_model.py).

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
* **Greedy decoding.** :func:`greedy_decode` picks the highest-scoring token at each step,
  as ``create_completion(temperature=0)`` does, but hands each token to the caller, who
  may end the completion (the forgery experiment ends one as soon as a made-up
  ``Observation`` label is certain). With a :class:`GrammarSampler` it decodes under a
  grammar checking *one* token per step instead of the whole vocabulary.
* **Batched decoding.** :func:`greedy_decode_batch` decodes several prompts side by side,
  one token of each per llama.cpp call, as a server with continuous batching does. On
  these 2 cores a call with 8 tokens takes about 5x one with a single token, so 8
  prompts finish in well under the time 8 single ones take. The price is arithmetic: a
  call with several tokens runs other kernels than a call with one, so a batched greedy
  completion may part from the one-at-a-time completion at a near-tie (about 4 in 10
  did on the forgery experiment's prompts). Both are the model's greedy output; they are
  not the same output. With ``width=1`` it gives the one-at-a-time tokens exactly.
* **Prompt evaluation in small calls.** :func:`load_llama` gives a ``Llama`` that
  evaluates a prompt in llama.cpp calls of at most :data:`EVAL_CALL_TOKENS` tokens
  (:func:`eval_cuts`: never one token alone, by the rule above). llama.cpp's scratch
  memory grows with the tokens of a call times the tokens cached (the attention scores):
  llama-cpp-python's 512-token calls on a 3,000-token prompt touch about 60 MiB, 128-token
  calls a quarter of it, at the same speed on these 2 cores. Calls of 2 or more tokens
  gave bit-identical logits however the prompt was cut (measured on this model and
  build; tests/test_speed_model.py checks 128-token calls against one call), and the
  committed evaluation and ladder records re-ran word for word.
"""
from __future__ import annotations

import ctypes
import math
import time
from dataclasses import dataclass
from typing import Callable, Sequence

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
    """Load ``llama_cpp.Llama(model_path, **params)`` whose ``eval`` cuts prompts by :func:`eval_cuts`.

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
    eval_cuts(0, min(params["n_batch"], n_ctx))  # checks the call size (Llama caps n_batch at n_ctx)

    class CuttingLlama(Llama):
        """``Llama`` whose ``eval`` cuts what it evaluates by :func:`eval_cuts` (no one-token last call)."""

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
    """The tokens every text in ``texts`` starts with, by ``llm``'s tokenizer (special tokens parsed)."""
    tokenized = [llm.tokenize(t.encode("utf-8"), add_bos=False, special=True) for t in texts]
    n = min(common_prefix(tokenized[0], t) for t in tokenized)
    return tokenized[0][:n]


class ContextWindowExceeded(ValueError):
    """A prompt does not fit the model's context window (llama.cpp refuses it before decoding).

    A ``ValueError``, as llama-cpp-python raises it; the evaluation ends that run with
    ``stopped_by="context_window"`` instead of stopping the whole evaluation.
    """


def check_fits(prompt_tokens: int, n_ctx: int, max_tokens: int) -> None:
    """Refuse ``max_tokens < 1`` (``ValueError``) and a prompt that fills the window (:class:`ContextWindowExceeded`)."""
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, not {max_tokens}")
    if prompt_tokens >= n_ctx:
        raise ContextWindowExceeded(f"the prompt is {prompt_tokens} tokens; the context window holds {n_ctx}")


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
        llm.eval(list(tokens)[llm.n_tokens:])
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
        return len(tokens) > len(self.tokens) and common_prefix(self.tokens, tokens) == len(self.tokens)

    def ensure(self, llm) -> int:
        """Restore the snapshot if the cache lost part of the prefix; return the prompt tokens saved.

        Raises ``RuntimeError`` (after clearing the cache) if llama.cpp refuses the data.
        """
        import llama_cpp  # heavy: loads llama.cpp

        have = common_prefix(cached_tokens(llm), self.tokens)
        if have >= len(self.tokens):
            return 0
        llm._ctx.kv_cache_seq_rm(-1, 0, -1)
        if llama_cpp.llama_state_seq_set_data(llm._ctx.ctx, c_view(self.data), len(self.data), 0) == 0:
            llm.reset()
            raise RuntimeError("llama.cpp refused the prompt-prefix snapshot")
        llm.input_ids[: len(self.tokens)] = self.tokens
        llm.n_tokens = len(self.tokens)
        llm._requires_eval = True  # the logits are stale: the next prompt evaluates its suffix
        self.restores += 1
        return len(self.tokens) - have


def new_grammar_sampler(llm, grammar: str):
    """Parse a GBNF ``grammar`` into a llama.cpp sampler (free it with ``llama_sampler_free``).

    Raises ``ValueError`` when llama.cpp cannot parse it: llama-cpp-python would hand the
    NULL pointer on to C and the process would crash.
    """
    import llama_cpp  # heavy: loads llama.cpp

    sampler = llama_cpp.llama_sampler_init_grammar(llm._model.vocab, grammar.encode("utf-8"), b"root")
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
        self._one_array = llama_cpp.llama_token_data_array(data=self._one, size=1, selected=-1,
                                                           sorted=False)
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


def greedy_decode(llm, prompt: Sequence[int], *, max_tokens: int,
                  on_token: Callable[[int], bool] | None = None,
                  grammar: GrammarSampler | None = None) -> Decoded:
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
    llm.eval(list(prompt)[llm.n_tokens:])
    if grammar is not None:
        grammar.reset()
    vocab, n_vocab = llm._model.vocab, llm.n_vocab()
    tokens: list[int] = []
    finish = "length"
    while len(tokens) < max_tokens:
        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1),
                                       shape=(n_vocab,))
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


def greedy_decode_batch(llm, prompts: Sequence[Sequence[int]], *, max_tokens: int, width: int = 8,
                        on_token: Callable[[int, int], bool] | None = None,
                        on_done: Callable[[int, Decoded], None] | None = None,
                        prefix: PrefixState | None = None) -> list[Decoded]:
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
    are :func:`greedy_decode`'s; with more, see the module docstring (arithmetic).
    Side by side pays when the prompts share a long prefix and their own rests are short
    (the forgery experiment: about 614 tokens shared, 25-40 each): every call attends
    over the cache cells of all live sequences, and the rests are evaluated in calls of
    :data:`BATCH_CALL_TOKENS`, so long prompts that share little run slower than one at
    a time (8 unshared 2,000-token prompts: 252 s against 77 s).
    ``evaluated_tokens`` counts each prompt's own rest, and what was evaluated of the
    shared prefix once, in the first prompt's; ``seconds`` runs from a prompt's start to
    its end, so the prompts' times overlap.
    Raises :class:`ContextWindowExceeded` when a prompt does not fit ``llm``'s window;
    ``ValueError`` for a width outside 1..255 (llama.cpp's limit on sequences, less the
    prefix's), ``max_tokens < 1``, an empty prompt or a token id outside the vocabulary;
    ``RuntimeError`` if llama.cpp refuses a batch or the snapshot.
    """
    import llama_cpp  # heavy: loads llama.cpp
    import numpy as np
    from llama_cpp import _internals

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
    n_ctx = llm.n_ctx()
    for p in prompts:
        check_fits(len(p), n_ctx, max_tokens)
    limits = [min(max_tokens, n_ctx - len(p)) for p in prompts]
    shared = max(0, min(min(common_prefix(prompts[0], p) for p in prompts),
                        min(len(p) for p in prompts) - MIN_EVAL))
    width = min(width, len(prompts))
    cells = shared + width * max(len(p) - shared + n for p, n in zip(prompts, limits)) + 1
    params = llama_cpp.llama_context_params.from_buffer_copy(llm.context_params)
    params.n_ctx = -(-cells // 256) * 256
    params.n_seq_max = width + 1  # sequence 0 holds the shared prefix
    params.kv_unified = True      # one cache, so the prefix cells are shared, not copied
    # Small calls: the prefix usually comes from its snapshot, and llama.cpp sizes its
    # scratch memory for the largest call.
    params.n_batch = params.n_ubatch = n_batch = max(BATCH_CALL_TOKENS, width + 1)  # llama.cpp: >= n_seq_max
    ctx = _internals.LlamaContext(model=llm._model, params=params, verbose=False)
    batch = llama_cpp.llama_batch_init(n_batch, 0, 1)
    vocab = llm._model.vocab

    def run(items) -> list[int]:
        """Decode ``(token, position, sequence, wants_logits)`` items; the best next token per logit row."""
        batch.n_tokens = len(items)
        rows = []
        for k, (token, pos, seq, wants) in enumerate(items):
            batch.token[k], batch.pos[k], batch.n_seq_id[k], batch.logits[k] = token, pos, 1, wants
            batch.seq_id[k][0] = seq
            if wants:
                rows.append(k)
        code = llama_cpp.llama_decode(ctx.ctx, batch)
        if code != 0:
            raise RuntimeError(f"llama.cpp could not decode the batch (llama_decode returned {code})")
        return [int(np.argmax(np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx.ctx, k),
                                                    shape=(n_vocab,)))) for k in rows]

    def evaluate(tokens, start, seq) -> int | None:
        """Evaluate ``tokens`` in calls of at most ``n_batch``, never one token alone (:func:`eval_cuts`)."""
        best = None
        for at, end in eval_cuts(len(tokens), n_batch):
            out = run([(tokens[k], start + k, seq, k == len(tokens) - 1) for k in range(at, end)])
            best = out[0] if out else None
        return best

    results: list[Decoded | None] = [None] * len(prompts)
    live: dict[int, dict] = {}  # sequence id -> the prompt it decodes and its state

    def take(seq: int, token: int) -> None:
        """Give sequence ``seq`` its next token; end it if that finishes its completion."""
        state = live[seq]
        i, finish = state["i"], None
        if llama_cpp.llama_vocab_is_eog(vocab, token):
            finish = "end_of_text"
        else:
            state["tokens"].append(token)
            if on_token is not None and not on_token(i, token):
                finish = "stopped"
            elif len(state["tokens"]) >= limits[i]:
                finish = "length"
        if finish is None:
            state["next"] = token
            return
        del live[seq]
        llama_cpp.llama_memory_seq_rm(ctx.memory, seq, -1, -1)
        now = time.perf_counter()
        results[i] = Decoded(state["tokens"], finish, state["evaluated"], now - state["started"],
                             state["started"])
        if on_done is not None:
            on_done(i, results[i])

    try:
        loaded = 0
        if prefix is not None and len(prefix.tokens) <= shared and prefix.tokens == prompts[0][:len(prefix.tokens)]:
            if llama_cpp.llama_state_seq_set_data(ctx.ctx, c_view(prefix.data), len(prefix.data), 0) == 0:
                raise RuntimeError("llama.cpp refused the prompt-prefix snapshot")
            loaded = len(prefix.tokens)
        evaluate(prompts[0][loaded:shared], loaded, 0)
        waiting = list(range(len(prompts)))[::-1]
        free = list(range(width, 0, -1))
        while waiting or live:
            while waiting and free:
                i, seq = waiting.pop(), free.pop()
                started = t0 if i == 0 else time.perf_counter()  # the first one waited for the prefix
                if shared:
                    llama_cpp.llama_memory_seq_cp(ctx.memory, 0, seq, 0, shared)
                rest = prompts[i][shared:]
                live[seq] = {"i": i, "tokens": [], "pos": len(prompts[i]), "started": started,
                             "evaluated": len(rest) + (shared - loaded if i == 0 else 0)}
                take(seq, evaluate(rest, shared, seq))
                if seq not in live:
                    free.append(seq)
            if not live:
                continue
            order = list(live)
            best = run([(live[s]["next"], live[s]["pos"], s, True) for s in order])
            for seq, token in zip(order, best):
                live[seq]["pos"] += 1
                take(seq, token)
                if seq not in live:
                    free.append(seq)
    finally:
        llama_cpp.llama_batch_free(batch)
        ctx.close()
    return results  # type: ignore[return-value]


@dataclass
class Usage:
    """Running totals of one model's work: calls, prompt tokens sent and evaluated, tokens generated.

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

    def add(self, sent: int, evaluated: int, generated: int, seconds: float, calls: int = 1) -> None:
        self.calls += calls
        self.prompt_sent += sent
        self.prompt_evaluated += evaluated
        self.generated += generated
        self.seconds += seconds

    def snapshot(self) -> "Usage":
        return Usage(self.calls, self.prompt_sent, self.prompt_evaluated, self.generated, self.seconds)

    def __sub__(self, other: "Usage") -> "Usage":
        return Usage(self.calls - other.calls, self.prompt_sent - other.prompt_sent,
                     self.prompt_evaluated - other.prompt_evaluated,
                     self.generated - other.generated, self.seconds - other.seconds)

    def to_dict(self) -> dict:
        """``{"calls", "prompt_sent", "prompt_evaluated", "generated", "seconds"}`` (seconds rounded)."""
        return {"calls": self.calls, "prompt_sent": self.prompt_sent,
                "prompt_evaluated": self.prompt_evaluated, "generated": self.generated,
                "seconds": round(self.seconds, 3)}

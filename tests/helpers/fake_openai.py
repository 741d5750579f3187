"""A small OpenAI-compatible server for the tests, on 127.0.0.1, written with the standard library.

It answers ``POST /v1/completions`` (plain or streamed as server-sent events),
``POST /v1/chat/completions`` and ``GET /v1/models`` after a fixed ``delay``, one thread
per request (``ThreadingHTTPServer``), so it behaves like a latency-bound hosted
provider: N requests in flight finish in about one delay. It can also act as the
failures a real provider shows, with the error bodies those providers send:

* ``refuse_stop``: HTTP 400 to any request carrying ``stop``, as OpenAI's reasoning
  models answer (``"Unsupported parameter: 'stop' is not supported with this model."``,
  ``param: "stop"``, ``code: "unsupported_parameter"``);
* ``api_key``: HTTP 401 ``invalid_api_key`` to any other bearer token;
* ``models``: HTTP 404 ``model_not_found`` for a model name not in the list;
* ``fail_first``: answer these statuses (429, 500, 503, ...) to the first requests,
  with a short ``retry-after-ms``, then succeed;
* ``delay``: seconds before every answer (a slow server, for timeouts).

What a completion says comes from ``completions``: a list of texts, chosen by how many
loop-written ``Observation:`` lines the prompt already holds, so each run of the text
loop walks the list in order however many runs are in flight. A request with ``stop``
is cut as a provider cuts. Chat replies come from ``chat_replies`` the same way (by
the number of ``tool`` messages), under the request's ``tool_choice`` as a provider
honours it (:func:`honour_tool_choice`: ``none`` sends no calls, ``required`` and a named
tool only calls); a ``tool`` message keyed to no call of the assistant turn before it
gets OpenAI's HTTP 400. Every request body is kept in ``requests``;
``max_in_flight`` is the most requests served at once.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REFUSE_STOP_BODY = {
    "error": {
        "message": "Unsupported parameter: 'stop' is not supported with this model.",
        "type": "invalid_request_error",
        "param": "stop",
        "code": "unsupported_parameter",
    }
}
UNAUTHORIZED_BODY = {
    "error": {
        "message": "Incorrect API key provided. You can find your API key in your account "
        "settings.",
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_api_key",
    }
}


def not_found_body(model: str) -> dict:
    return {
        "error": {
            "message": f"The model `{model}` does not exist or you do not have access to it.",
            "type": "invalid_request_error",
            "param": None,
            "code": "model_not_found",
        }
    }


def status_body(status: int) -> dict:
    if status == 429:
        return {
            "error": {
                "message": "Rate limit reached for requests",
                "type": "requests",
                "param": None,
                "code": "rate_limit_exceeded",
            }
        }
    return {
        "error": {
            "message": "The server had an error while processing your request.",
            "type": "server_error",
            "param": None,
            "code": None,
        }
    }


#: A first step that forges its own observation and answer, then a step that answers.
FORGING_RUN = [
    " I need the payments made on INV-2041.\nAction: get_payments[INV-2041]\n"
    "Observation: two payments of $129.00 were made\nThought: It was charged twice.\n"
    "Answer: Yes, twice.",
    " The payments above answer the question.\nAnswer: No, INV-2041 was paid once.\n"
    "Observation: made up again",
]

_TOKENS = re.compile(r"\s*\S+|\s+")


def tokens(text: str) -> list[str]:
    """Split text into stream chunks, about one word each (a stand-in for tokens)."""
    return _TOKENS.findall(text)


def apply_stop(text: str, stop) -> tuple[str, bool]:
    stop = [stop] if isinstance(stop, str) else list(stop or [])
    hits = [i for i in (text.find(s) for s in stop if s) if i >= 0]
    return (text[: min(hits)], True) if hits else (text, False)


class FakeOpenAI(ThreadingHTTPServer):
    """The server; use as a context manager (starts a thread, stops and closes at exit)."""

    daemon_threads = True

    def __init__(
        self,
        *,
        delay: float = 0.0,
        completions=None,
        chat_replies=None,
        refuse_stop: bool = False,
        api_key: str | None = None,
        models=("fake-model",),
        fail_first=(),
        port: int = 0,
    ):
        super().__init__(("127.0.0.1", port), _Handler)
        self.delay = delay
        self.completions = list(completions or FORGING_RUN)
        self.chat_replies = list(chat_replies or [{"content": "Done."}])
        self.refuse_stop = refuse_stop
        self.api_key = api_key
        self.models = list(models)
        self.fail_first = list(fail_first)
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def __enter__(self) -> "FakeOpenAI":
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()
        self.server_close()

    def handle_error(self, request, client_address) -> None:
        pass  # a client that hung up (a timeout test) is expected, not a failure


class _Handler(BaseHTTPRequestHandler):
    server: FakeOpenAI

    def log_message(self, *args) -> None:  # quiet
        pass

    def _send(self, status: int, body: dict, headers: dict | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            self._send(
                200,
                {
                    "object": "list",
                    "data": [
                        {"id": m, "object": "model", "owned_by": "fake"} for m in self.server.models
                    ],
                },
            )
        else:
            self._send(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

    def do_POST(self) -> None:
        s = self.server
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        with s.lock:
            s.requests.append(body)
            s.in_flight += 1
            s.max_in_flight = max(s.max_in_flight, s.in_flight)
            failure = s.fail_first.pop(0) if s.fail_first else None
        time.sleep(s.delay)
        with s.lock:  # counted out before the answer is written: the client may send its next one
            s.in_flight -= 1
        auth = self.headers.get("Authorization", "")
        if s.api_key is not None and auth != f"Bearer {s.api_key}":
            return self._send(401, UNAUTHORIZED_BODY)
        if body.get("model") not in s.models:
            return self._send(404, not_found_body(str(body.get("model"))))
        if failure is not None:
            return self._send(failure, status_body(failure), {"retry-after-ms": "20"})
        if s.refuse_stop and body.get("stop"):
            return self._send(400, REFUSE_STOP_BODY)
        if self.path.rstrip("/") == "/v1/completions":
            return self._completion(body)
        if self.path.rstrip("/") == "/v1/chat/completions":
            return self._chat(body)
        self._send(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

    def _completion(self, body: dict) -> None:
        prompt = body.get("prompt") or ""
        prompt = prompt[0] if isinstance(prompt, list) else prompt
        run = prompt[prompt.rfind("Question: ") :]  # the exemplars' observations come before it
        done = len(re.findall(r"^Observation: ", run, re.MULTILINE))
        script = self.server.completions
        text = script[min(done, len(script) - 1)]
        words = tokens(text)
        max_tokens = int(body.get("max_tokens") or 16)
        reason = "length" if len(words) > max_tokens else "stop"
        text = "".join(words[:max_tokens])
        if body.get("stream"):
            return self._stream(body, words[:max_tokens], reason)
        text, hit = apply_stop(text, body.get("stop"))
        self._send(
            200,
            {
                "id": "cmpl-fake",
                "object": "text_completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "text": text,
                        "logprobs": None,
                        "finish_reason": "stop" if hit else reason,
                    }
                ],
                "usage": {
                    "prompt_tokens": len(prompt.split()),
                    "completion_tokens": len(tokens(text)),
                    "total_tokens": len(prompt.split()) + len(tokens(text)),
                },
            },
        )

    def _stream(self, body: dict, words: list[str], reason: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            for i, word in enumerate(words):
                last = i == len(words) - 1
                chunk = {
                    "id": "cmpl-fake",
                    "object": "text_completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "text": word,
                            "logprobs": None,
                            "finish_reason": reason if last else None,
                        }
                    ],
                }
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client closed the stream early, as a client-side stop does

    def _chat(self, body: dict) -> None:
        messages = body.get("messages", [])
        problem = unanswered_tool_message(messages)
        if problem:
            return self._send(
                400,
                {
                    "error": {
                        "message": problem,
                        "type": "invalid_request_error",
                        "param": "messages",
                        "code": None,
                    }
                },
            )
        done = sum(m.get("role") == "tool" for m in messages)
        script = self.server.chat_replies
        reply = dict(script[min(done, len(script) - 1)])
        calls, problem = honour_tool_choice(reply.get("tool_calls"), body)
        if problem:
            return self._send(
                400,
                {
                    "error": {
                        "message": problem,
                        "type": "invalid_request_error",
                        "param": "tool_choice",
                        "code": None,
                    }
                },
            )
        message = {"role": "assistant", "content": reply.get("content")}
        if calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{done}_{i}",
                    "type": "function",
                    "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
                }
                for i, c in enumerate(calls)
            ]
        elif message["content"] is None:
            message["content"] = "Done."
        self._send(
            200,
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "logprobs": None,
                        "finish_reason": "tool_calls" if calls else "stop",
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            },
        )


def unanswered_tool_message(messages: list[dict]) -> str | None:
    """What OpenAI answers (HTTP 400) when a ``tool`` message is keyed to no call.

    To no call of the assistant turn before it.
    """
    ids: set[str] = set()
    for m in messages:
        if m.get("role") == "assistant":
            ids = {c["id"] for c in m.get("tool_calls") or []}
        elif m.get("role") == "tool" and m.get("tool_call_id") not in ids:
            return (
                "Invalid parameter: messages with role 'tool' must be a response to a preceding "
                f"message with 'tool_calls' (tool_call_id {m.get('tool_call_id')!r})"
            )
    return None


def honour_tool_choice(calls, body: dict) -> tuple[list, str | None]:
    """The scripted calls a provider would send under the request's ``tool_choice``.

    ``none`` (or no tools): no calls; ``auto``: the script's; ``required``: the script's, an
    error if it has none; a named tool: the script's calls to it, an error if none.
    """
    choice, calls = body.get("tool_choice", "auto"), list(calls or [])
    if not body.get("tools") or choice == "none":
        return [], None
    if isinstance(choice, dict):
        calls = [c for c in calls if c["name"] == choice["function"]["name"]]
    if not calls and choice != "auto":
        return [], f"the script has no call for tool_choice {choice!r}"
    return calls, None

"""Chat backends for native tool calling.

The embedded model under a grammar, any OpenAI endpoint, a script.

Every backend answers ``chat(messages, tools=[openai tool schemas], max_tokens=N) -> ChatReply``
(the OpenAI chat completions shape: a reply's calls sit in ``tool_calls``, each with an
``id``, ``type: "function"`` and ``function: {name, arguments}``, ``arguments`` a JSON
*string*):

* :class:`LocalChatModel` -- the embedded model, its replies constrained by the reply
  grammar of :mod:`react_lab.lab.backends.grammar`, so it cannot *write* a call outside the schema.
* :class:`OpenAIChatModel` -- any OpenAI-compatible ``/chat/completions`` endpoint.
* :class:`ScriptedChatModel` -- replays fixed replies, for tests.
"""

from __future__ import annotations

import copy
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ...protocol import MAX_TOKENS
from ..agent.tool_calls import assistant_json
from .endpoints import EndpointBackend
from .grammar import check_tool_choice, decodable, reply_grammar
from .local import local_model

# --------------------------------------------------------------------------- replies


@dataclass
class ChatReply:
    """One chat completion: text, tool calls, finish reason, token counts.

    ``tool_calls`` follow the OpenAI shape ``{"id", "type": "function", "function":
    {"name", "arguments": "<JSON string>"}}``. ``content`` is the answer when there are no
    calls; ``thought`` is the reasoning written before the calls (the OpenAI API returns
    it in ``content``). ``finish_reason`` is ``"tool_calls"``, ``"stop"`` or ``"length"``
    (``max_tokens`` ran out). Token counts are the backend's; ``seconds`` is wall-clock.
    ``text`` is the raw completion the backend produced.
    """

    content: str | None
    tool_calls: list[dict] = field(default_factory=list)
    finish_reason: str = "stop"
    thought: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    evaluated_tokens: int | None = None
    text: str = ""

    def message(self) -> dict:
        """The assistant message to append to the conversation (OpenAI shape)."""
        msg: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            msg["tool_calls"] = self.tool_calls
            msg["content"] = self.thought if self.thought is not None else self.content
        return msg


def tool_call(call_id: str, name: str, args: Any) -> dict:
    """Build one OpenAI-shaped tool call; ``arguments`` is serialised to a JSON string."""
    arguments = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


# --------------------------------------------------------------------------- backends


class LocalChatModel:
    """The embedded model as a tool-calling chat backend, its replies constrained by a grammar.

    Renders the messages with SmolLM2's ChatML template (``<|im_start|>role ...<|im_end|>``),
    the tool schemas written into the system turn (what a provider's chat template does
    with ``tools=``), and generates with a llama.cpp grammar built from
    :func:`react_lab.lab.backends.grammar.reply_schema`. Wraps a
    :class:`react_lab.lab.backends.local.LocalModel` (``inner``; default: the one loaded
    model, :func:`react_lab.lab.backends.local.local_model`). ``max_calls`` is how many
    calls one reply may hold.
    """

    def __init__(self, model=None, *, max_calls: int = 1):
        self.inner = model or local_model()
        self.max_calls = max_calls
        self._grammars: dict[str, str] = {}

    @property
    def name(self) -> str:
        return f"{self.inner.name}+grammar"

    def render(self, messages: Sequence[dict], tools: Sequence[dict] | None = None) -> str:
        """Render the conversation as ChatML, ending with an open assistant turn.

        See :func:`render_messages`.
        """
        return render_messages(messages, tools)

    def chat(
        self,
        messages: Sequence[dict],
        tools: Sequence[dict] | None = None,
        *,
        max_tokens: int = MAX_TOKENS,
        tool_choice: str | dict = "auto",
    ) -> ChatReply:
        """Generate one reply that follows :func:`react_lab.lab.backends.grammar.reply_schema`.

        See :class:`ChatReply`. Greedy decoding under the reply grammar
        (:meth:`react_lab.lab.backends.local.LocalModel.decode`: the grammar is parsed once per
        tool set and checks one token per step; the tokens equal
        ``create_completion(grammar=..., temperature=0)``'s). ``tool_choice`` is honoured by
        the grammar: ``"required"`` allows only calls, ``"none"`` only an answer, a named
        tool only calls to it. The prompt is the same whatever the choice (the tools stay in
        the system turn), so the cached prefix is reused. A reply cut off by ``max_tokens``
        is not valid JSON: it comes back with no calls and ``finish_reason="length"``.
        Raises ValueError for a bad ``tool_choice`` (:func:`.grammar.check_tool_choice`) or a
        grammar that cannot be built.
        """
        tools = list(tools or [])
        key = json.dumps([tools, tool_choice], sort_keys=True)
        if key not in self._grammars:
            self._grammars[key] = reply_grammar(
                tools, max_calls=self.max_calls, tool_choice=tool_choice
            )
        out = self.inner.decode(
            self.render(messages, tools), grammar=self._grammars[key], max_tokens=max_tokens
        )
        reply = parse_reply(out.text, call_prefix=f"call_{len(messages)}")
        reply.prompt_tokens, reply.completion_tokens = out.prompt_tokens, out.completion_tokens
        reply.evaluated_tokens, reply.seconds = out.evaluated_tokens, out.seconds
        return reply


def render_messages(messages: Sequence[dict], tools: Sequence[dict] | None = None) -> str:
    """Render a conversation in SmolLM2's ChatML, ending with an open assistant turn.

    The tool schemas and the reply format are written into the system turn (what a
    provider's chat template does with ``tools=``: :func:`describe_tool_schemas`); an
    assistant message is written back in the reply grammar's JSON
    (:func:`assistant_json`); a tool result as ``Result of <call id>: ...``.
    """
    parts = []
    for msg in messages:
        role, content = msg["role"], msg.get("content") or ""
        if role == "system" and tools:
            content += "\n\n" + describe_tool_schemas(tools)
        if role == "assistant":
            content = assistant_json(msg)
        if role == "tool":
            content = f"Result of {msg.get('tool_call_id', 'the call')}: {content}"
        parts.append(f"<|im_start|>{role}\n{content}<|im_end|>\n")
    return "".join(parts) + "<|im_start|>assistant\n"


def describe_tool_schemas(tools: Sequence[dict]) -> str:
    """Write the tool schemas and the reply format for the system turn.

    A local model needs both.
    """
    lines = ["Tools (JSON Schema of each tool's arguments):"]
    for t in tools:
        f = t["function"]
        params = {
            k: {kk: vv for kk, vv in v.items() if kk != "examples"}
            for k, v in f["parameters"].get("properties", {}).items()
        }
        lines.append(
            json.dumps(
                {"name": f["name"], "description": f["description"], "arguments": params},
                ensure_ascii=False,
            )
        )
    example = {
        "thought": "I need the July invoices of cus_4417.",
        "tool_calls": [
            {
                "name": "list_invoices",
                "arguments": {"customer_id": "cus_4417", "since": "2026-07-01"},
            }
        ],
    }
    lines += [
        "",
        "Reply with one JSON object: a tool call such as",
        json.dumps(example),
        "or, once the tool results answer the question,",
        '{"thought": "<what the results say>", "answer": "<the answer>"}',
    ]
    return "\n".join(lines)


def parse_reply(text: str, *, call_prefix: str = "call") -> ChatReply:
    """Read one JSON reply (the grammar's shape) into a :class:`ChatReply`; never raises.

    ``json.loads(strict=False)``: llama.cpp's JSON string rule lets raw newlines through.
    Text that is not complete JSON (cut off at ``max_tokens``) gives no calls, no content
    and ``finish_reason="length"``. Complete JSON of the wrong shape (not an object, calls
    that are not ``{"name", "arguments"}`` objects, an answer that is not a string) gives
    no calls, no content and ``finish_reason="stop"``: the loop reports it as malformed.
    """
    try:
        obj = json.loads(text, strict=False)
    except (ValueError, RecursionError):
        return ChatReply(content=None, finish_reason="length", text=text)
    if not isinstance(obj, dict):
        return ChatReply(content=None, finish_reason="stop", text=text)
    thought = obj.get("thought") if isinstance(obj.get("thought"), str) else None
    calls = obj.get("tool_calls")
    if calls not in (None, []):
        good = (
            [c for c in calls if isinstance(c, dict) and isinstance(c.get("name"), str)]
            if isinstance(calls, list)
            else []
        )
        if not good or len(good) != len(calls):  # a thought is never promoted to an answer
            return ChatReply(content=None, thought=thought, finish_reason="stop", text=text)
        return ChatReply(
            content=thought,
            thought=thought,
            finish_reason="tool_calls",
            text=text,
            tool_calls=[
                tool_call(f"{call_prefix}_{i}", c["name"], c.get("arguments", {}))
                for i, c in enumerate(good, 1)
            ],
        )
    answer = obj.get("answer")
    return ChatReply(
        content=answer if isinstance(answer, str) else None,
        thought=thought,
        finish_reason="stop",
        text=text,
    )


#: The message keys of the OpenAI chat completions API: all an endpoint is sent.
MESSAGE_KEYS = ("role", "content", "name", "tool_calls", "tool_call_id")


class OpenAIChatModel(EndpointBackend):
    """Any OpenAI-compatible chat completions endpoint with native tool calling.

    Settings come from :func:`react_lab.lab.backends.endpoints.endpoint_settings` (``OPENAI_MODEL``,
    ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``REACT_LAB_TIMEOUT``, ``REACT_LAB_RETRIES``).
    Calls ``client.chat.completions.create(model, messages, tools=..., max_tokens=...)``;
    no ``stop`` is sent (the reply's structure ends it), so a provider that refuses
    ``stop`` needs nothing here. An endpoint that cannot serve a request raises
    :class:`react_lab.lab.backends.endpoints.EndpointError`, one line naming what to fix. Pass
    ``client=`` to use a client you built (or a fake).

    llama-cpp-python's server fills ``tool_calls`` only with ``--chat_format
    chatml-function-calling`` (``python -m react_lab.lab.backends.serve`` starts it so); with its
    default chat format the tools are ignored and a call, if the model writes one, comes
    back as text (:func:`react_lab._parsing.leaks.leaked_calls`). Even that handler drops ``tool``
    messages, fails on ``tool_choice="required"`` and returns no text answer under
    ``"auto"``: :mod:`react_lab.lab.backends.serve` lists what it does with each request.
    """

    def chat(
        self,
        messages: Sequence[dict],
        tools: Sequence[dict] | None = None,
        *,
        max_tokens: int = MAX_TOKENS,
        tool_choice: str | dict = "auto",
    ) -> ChatReply:
        """Send the conversation, the tool schemas and ``tool_choice``; return the provider's reply.

        Messages go in the OpenAI shape only (:data:`MESSAGE_KEYS`; the lab's own keys,
        such as an exemplar answer's ``thought``, stay home). An assistant message whose
        ``content`` is None (calls only) is sent with ``""``: OpenAI accepts either,
        llama-cpp-python's server only a string. ``tool_choice`` is sent as given whenever
        tools are (llama-cpp-python's server ignores the tools of a request without it). The
        schemas go through :func:`react_lab.lab.backends.grammar.decodable`: llama-cpp-python's
        server builds a grammar from each and crashes on a ``\\d`` in a pattern; what that
        drops, the loop's schema check still checks.
        Raises ValueError for a bad ``tool_choice``
        (:func:`react_lab.lab.backends.grammar.check_tool_choice`),
        :class:`react_lab.lab.backends.endpoints.EndpointError` when the endpoint cannot
        serve the request.
        """
        import openai

        check_tool_choice(tool_choice, list(tools or []))
        sent = [
            {
                k: ("" if k == "content" and v is None and m["role"] == "assistant" else v)
                for k, v in m.items()
                if k in MESSAGE_KEYS
            }
            for m in messages
        ]
        kwargs: dict[str, Any] = dict(
            model=self.name, messages=sent, max_tokens=max_tokens, temperature=self.temperature
        )
        if tools:  # decodable: a server that builds a grammar from a schema can parse it
            kwargs["tools"] = [
                {
                    **t,
                    "function": {
                        **t["function"],
                        "parameters": decodable(t["function"]["parameters"]),
                    },
                }
                for t in tools
            ]
            kwargs["tool_choice"] = tool_choice
        t0 = time.perf_counter()
        try:
            out = self.client.chat.completions.create(**kwargs)
        except openai.OpenAIError as exc:
            raise self._error(exc) from None
        choice, usage = out.choices[0], out.usage
        msg = choice.message
        calls = [
            tool_call(c.id, c.function.name, c.function.arguments or "{}")
            for c in (msg.tool_calls or [])
        ]
        return ChatReply(
            content=msg.content,
            tool_calls=calls,
            thought=msg.content if calls else None,
            finish_reason=choice.finish_reason or ("tool_calls" if calls else "stop"),
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            seconds=time.perf_counter() - t0,
            text=msg.content or "",
        )


class ScriptedChatModel:
    """Replay fixed replies, for tests: each one a dict ``{"thought", "tool_calls": [{"name",
    "arguments"}]}`` or ``{"thought", "answer"}`` (the grammar's shape), or its JSON text.

    The last reply repeats when the script runs out. ``requests`` keeps every
    ``(messages, tools)`` received, ``tool_choices`` each ``tool_choice``. Token counts are
    whitespace word counts.
    """

    def __init__(self, replies: Sequence[dict | str], *, name: str = "scripted-chat"):
        if isinstance(replies, (str, bytes, dict)):  # one reply: a list of one is meant
            raise TypeError(
                f"replies must be a list of replies, one per call; write [{replies!r:.40}]"
            )
        if not replies:
            raise ValueError("a scripted chat model needs at least one reply")
        self.replies = [r if isinstance(r, str) else json.dumps(r) for r in replies]
        self.requests: list[tuple[list[dict], list[dict]]] = []
        self.tool_choices: list[str | dict] = []
        self.name = name

    @classmethod
    def from_json(cls, path: str | os.PathLike) -> "ScriptedChatModel":
        """Load ``[reply, ...]`` or ``{"replies": [...]}`` from a JSON file."""
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        items = data.get("replies") if isinstance(data, dict) else data
        if not isinstance(items, list) or not items:
            raise ValueError(f'{path}: expected a JSON list of replies or {{"replies": [...]}}')
        if all(isinstance(r, str) and not r.lstrip().startswith("{") for r in items):
            raise ValueError(
                f"{path}: these look like text-protocol completions; a native script "
                'holds replies like {"thought": "...", "tool_calls": [{"name": ..., '
                '"arguments": {...}}]} or {"thought": "...", "answer": "..."}'
            )
        bad = [i for i, r in enumerate(items, 1) if not isinstance(r, (dict, str))]
        if bad:
            raise ValueError(f"{path}: reply {bad[0]} is neither an object nor JSON text")
        return cls(items, name=f"scripted:{Path(path).name}")

    def chat(
        self,
        messages: Sequence[dict],
        tools: Sequence[dict] | None = None,
        *,
        max_tokens: int = MAX_TOKENS,
        tool_choice: str | dict = "auto",
    ) -> ChatReply:
        """Replay the next reply; record the request and ``tool_choice``.

        ValueError for a bad ``tool_choice``.
        """
        check_tool_choice(tool_choice, list(tools or []))
        text = self.replies[min(len(self.requests), len(self.replies) - 1)]
        self.requests.append((copy.deepcopy(list(messages)), list(tools or [])))
        self.tool_choices.append(tool_choice)
        reply = parse_reply(text, call_prefix=f"call_{len(messages)}")
        reply.prompt_tokens = sum(len(str(m.get("content") or "").split()) for m in messages)
        reply.completion_tokens = len(text.split())
        return reply

"""Native (structured) tool calling: calls arrive as JSON in a field of their own, checked by a schema.

In the text protocol a regular expression in your client decides which characters are a
tool call (:data:`react_lab.protocol.ACTION_RE`). Native tool calling moves that
decision: the request carries every tool's JSON Schema, the reply carries its calls in
``tool_calls`` (the OpenAI chat completions shape: ``id``, ``type: "function"``,
``function: {name, arguments}`` with ``arguments`` a JSON *string*), and each result goes
back as a ``{"role": "tool", "tool_call_id": ...}`` message.

Backends answer ``chat(messages, tools=[openai tool schemas], max_tokens=N) -> ChatReply``:

* :class:`LocalChatModel` -- the embedded model. A hosted provider serialises the call
  for you; here llama.cpp does it: :func:`reply_schema` is a JSON Schema of a whole reply
  (a thought, then tool calls whose names and arguments follow the tools' schemas, or an
  answer), turned into a grammar that masks every token that would leave it. The model
  cannot *write* a call outside the schema.
* :class:`OpenAIChatModel` -- any OpenAI-compatible ``/chat/completions`` endpoint.
* :class:`ScriptedChatModel` -- replays fixed replies, for tests.

:func:`run_native` is the loop: the same shape as :func:`react_lab.loop.run`, with a
schema check (:func:`validate_call`) where the text loop has its parser.
"""
from __future__ import annotations

import copy
import json
import os
import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from .guards import BEST_EFFORT_AFTER, MORE, Guards, Outcome
from .loop import check_run_arguments
from .protocol import unknown_tool_message
from .tools import Observation, Tool, call_tool, tool_schemas
from .trace import Step, Transcript

#: The system message of a native run. No format rules, no exemplars: the tools travel as
#: schemas and the reply's shape is the provider's (or the grammar's) business.
SYSTEM = ("You answer questions about a billing system. Call the tools to look facts up; "
          "never guess ids, dates or amounts. When the tool results answer the question, "
          "give the answer.")


# --------------------------------------------------------------------------- the schema check

def validate_call(tool: Tool, args: Any) -> list[str]:
    """Check ``args`` against ``tool.parameters``; return one message per error, [] if valid.

    Each message starts with the field it is about (``since: 'July 1st' is not a 'date' ...``;
    a missing or undeclared argument is named too). Uses ``jsonschema``'s Draft 2020-12
    validator with its ``FormatChecker``, so ``format: date`` is enforced too. Never
    raises: anything unexpected becomes a message.
    """
    try:
        import jsonschema  # imported here: only the native path needs it

        if not isinstance(args, dict):
            return [f"arguments must be a JSON object like {_example_args(tool)}, "
                    f"not {type(args).__name__}"]
        validator = jsonschema.Draft202012Validator(
            tool.parameters, format_checker=jsonschema.FormatChecker())
        declared = list(tool.parameters.get("properties", {}))
        messages = []
        for error in validator.iter_errors(args):
            messages += _describe(error, declared)
        messages = sorted(set(messages), key=lambda m: (_field_rank(m, declared), m))
        return _with_hints(messages, tool.parameters.get("properties", {}))
    except Exception as exc:  # noqa: BLE001 -- a checker must never take the loop down
        return [f"could not validate the arguments ({type(exc).__name__}: {exc})"]


def _describe(error, declared: list[str]) -> list[str]:
    """Turn one jsonschema error into messages that start with a field name."""
    if error.validator == "required" and not error.path:
        missing = [p for p in error.validator_value if p not in error.instance]
        return [f"{name}: required argument is missing" for name in missing]
    if error.validator == "additionalProperties" and not error.path:
        extra = [k for k in error.instance if k not in declared]
        return [f"{k}: not a declared argument (declared: {', '.join(declared)})" for k in extra]
    where = "/".join(str(p) for p in error.absolute_path) or "arguments"
    return [f"{where}: {error.message}"]


def _with_hints(messages: list[str], properties: dict) -> list[str]:
    """Append the field's description to the last message about it (what to write instead)."""
    out, hinted = list(messages), set()
    for i in reversed(range(len(out))):
        name = out[i].split(":", 1)[0]
        spec = properties.get(name)
        if name not in hinted and isinstance(spec, dict) and spec.get("description"):
            out[i] += f" (expected {spec['description']})"
        hinted.add(name)
    return out


def _field_rank(message: str, declared: list[str]) -> int:
    """Sort key: declared fields in schema order first, then the rest."""
    name = message.split(":", 1)[0]
    return declared.index(name) if name in declared else len(declared)


def _example_args(tool: Tool) -> str:
    props = tool.parameters.get("properties", {})
    return json.dumps({k: p.get("examples", ["..."])[0] for k, p in props.items()})


def check_arguments(tool: Tool, arguments: str | dict) -> tuple[dict | None, list[str]]:
    """Decode a call's ``arguments`` (a JSON string, as providers send it) and validate them.

    Returns ``(args, [])`` when valid, else ``(args_or_None, errors)``; a JSON syntax error
    is reported with its position (``arguments are not valid JSON: Expecting ',' ...``).
    Never raises.
    """
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError) as exc:
            at = getattr(exc, "pos", None)  # json.JSONDecodeError knows where it stopped
            if at is None:
                return None, [f"arguments are not valid JSON: {exc}"]
            return None, [f"arguments are not valid JSON: {exc.msg} at character {at} "
                          f"(after {arguments[max(0, at - 20):at]!r})"]
    errors = validate_call(tool, arguments)
    return (arguments if isinstance(arguments, dict) else None), errors


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


# --------------------------------------------------------------------------- the grammar

#: Longest thought and answer a local reply may write, in characters: a small model
#: otherwise loops inside one string ("a refund of a refund of ...") until max_tokens.
MAX_THOUGHT, MAX_ANSWER = 160, 400


def reply_schema(tools: Sequence[dict], *, max_calls: int = 1, tool_choice: str = "auto") -> dict:
    """Return the JSON Schema of one whole reply, given OpenAI tool schemas.

    ``{"thought": str, "tool_calls": [{"name": <a tool's name>, "arguments": <its
    parameters>}, ...]}`` (1..``max_calls`` calls) or ``{"thought": str, "answer": str}``.
    The thought comes first so the model reasons before it commits to a call.
    ``tool_choice`` follows the OpenAI parameter: ``"auto"`` (either form), ``"required"``
    (a call) or ``"none"`` (an answer). Raises ValueError for anything else.
    """
    if tool_choice not in ("auto", "required", "none"):
        raise ValueError(f"tool_choice must be auto, required or none, not {tool_choice!r}")
    calls = [{"type": "object", "additionalProperties": False, "required": ["name", "arguments"],
              "properties": {"name": {"const": t["function"]["name"]},
                             "arguments": t["function"]["parameters"]}} for t in tools]
    thought = {"type": "string", "maxLength": MAX_THOUGHT}
    call_reply = {"type": "object", "additionalProperties": False,
                  "required": ["thought", "tool_calls"],
                  "properties": {"thought": thought,
                                 "tool_calls": {"type": "array", "items": {"anyOf": calls},
                                                "minItems": 1, "maxItems": max_calls}}}
    answer_reply = {"type": "object", "additionalProperties": False,
                    "required": ["thought", "answer"],
                    "properties": {"thought": thought,
                                   "answer": {"type": "string", "maxLength": MAX_ANSWER}}}
    forms = {"auto": [call_reply, answer_reply], "required": [call_reply], "none": [answer_reply]}
    return {"anyOf": forms[tool_choice] if calls else [answer_reply]}


def decodable(schema: Any) -> Any:
    """Return a copy of ``schema`` that llama-cpp-python's schema-to-grammar converter handles.

    Two rewrites: ``\\d`` (and ``\\w``, ``\\s``) in a ``pattern`` become character classes
    (the converter copies ``\\d`` into the grammar, llama.cpp cannot parse it, and
    llama-cpp-python then crashes the process); a ``format: date`` string drops its
    ``pattern`` (the converter prefers the pattern, and its own ``date`` rule is stricter:
    months 01-12, days 01-31). What a grammar cannot say -- February has 28 days,
    ``exclusiveMinimum`` -- :func:`validate_call` still checks after decoding.
    """
    if isinstance(schema, list):
        return [decodable(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: decodable(v) for k, v in schema.items()}
    if out.get("format") == "date":
        out.pop("pattern", None)
    if isinstance(out.get("pattern"), str):
        out["pattern"] = (out["pattern"].replace(r"\d", "[0-9]").replace(r"\w", "[A-Za-z0-9_]")
                          .replace(r"\s", "[ \\t\\n]"))
    return out


def reply_grammar(tools: Sequence[dict], *, max_calls: int = 1, tool_choice: str = "auto") -> str:
    """Return the GBNF grammar (text) of :func:`reply_schema`, built by llama-cpp-python.

    ``llama_cpp.llama_grammar.json_schema_to_gbnf`` -- what ``LlamaGrammar.from_json_schema``
    calls -- does the conversion.
    """
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    schema = reply_schema(tools, max_calls=max_calls, tool_choice=tool_choice)
    return json_schema_to_gbnf(json.dumps(decodable(schema)))


@dataclass
class GrammarCheck:
    """Whether a grammar accepts ``text`` as a complete output.

    ``at`` is the offset of the first character the grammar refuses (``len(text)`` when
    the text stops before the grammar allows it to end; None when accepted); ``char`` is
    that character ("" for an early end).
    """

    accepted: bool
    at: int | None = None
    char: str | None = None


def grammar_check(grammar: str, text: str, llm=None) -> GrammarCheck:
    """Feed ``text`` character by character through llama.cpp's own grammar sampler.

    This is the check that masks tokens during generation (a refused token gets logit
    -inf and can never be sampled); a token passes only if each of its characters does,
    so going one character at a time finds the exact place. ``llm`` defaults to the
    embedded model (its vocabulary is needed). Raises ValueError if llama.cpp cannot
    parse ``grammar``.
    """
    import ctypes
    import math

    import llama_cpp

    from .models import local_model

    llm = llm or local_model().llm
    eos = llm.token_eos()
    sampler = _grammar_sampler(llm, grammar)
    try:
        for at, char in enumerate([*text, None]):  # None: the end of the text
            tokens = [eos] if char is None else llm.tokenize(char.encode("utf-8"), add_bos=False,
                                                             special=False)
            for token in tokens:
                cell = (llama_cpp.llama_token_data * 1)(llama_cpp.llama_token_data(token, 0.0, 0.0))
                array = llama_cpp.llama_token_data_array(data=cell, size=1, selected=-1,
                                                         sorted=False)
                llama_cpp.llama_sampler_apply(sampler, ctypes.byref(array))
                if cell[0].logit == -math.inf:
                    return GrammarCheck(False, at, char or "")
                if token != eos:
                    llama_cpp.llama_sampler_accept(sampler, token)  # only after it passed
        return GrammarCheck(True)
    finally:
        llama_cpp.llama_sampler_free(sampler)


def _grammar_sampler(llm, grammar: str):
    """Build a llama.cpp grammar sampler; ValueError instead of a crash when it cannot parse."""
    import llama_cpp

    sampler = llama_cpp.llama_sampler_init_grammar(llm._model.vocab, grammar.encode("utf-8"),
                                                   b"root")
    if not sampler:  # llama-cpp-python would pass the NULL on and the process would crash
        raise ValueError("llama.cpp could not parse the grammar (see its message above)")
    return sampler


# --------------------------------------------------------------------------- backends

class LocalChatModel:
    """The embedded model as a tool-calling chat backend, its replies constrained by a grammar.

    Renders the messages with SmolLM2's ChatML template (``<|im_start|>role ...<|im_end|>``),
    the tool schemas written into the system turn (what a provider's chat template does
    with ``tools=``), and generates with a llama.cpp grammar built from
    :func:`reply_schema`. Shares the one loaded model (:func:`react_lab.models.local_model`).
    ``max_calls`` is how many calls one reply may hold.
    """

    def __init__(self, model=None, *, max_calls: int = 1):
        from .models import local_model

        self.model = model or local_model()
        self.max_calls = max_calls
        self._grammars: dict[str, str] = {}

    @property
    def name(self) -> str:
        return f"{self.model.name}+grammar"

    def render(self, messages: Sequence[dict], tools: Sequence[dict] | None = None) -> str:
        """Render the conversation as ChatML, ending with an open assistant turn."""
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

    def chat(self, messages: Sequence[dict], tools: Sequence[dict] | None = None, *,
             max_tokens: int = 192, tool_choice: str = "auto") -> ChatReply:
        """Generate one reply that follows :func:`reply_schema`; see :class:`ChatReply`.

        A reply cut off by ``max_tokens`` is not valid JSON: it comes back with no calls
        and ``finish_reason="length"``. Raises ValueError if the grammar cannot be built.
        """
        from llama_cpp import LlamaGrammar

        tools = list(tools or [])
        key = json.dumps([tools, tool_choice], sort_keys=True)
        if key not in self._grammars:
            grammar = reply_grammar(tools, max_calls=self.max_calls, tool_choice=tool_choice)
            # Parse it once ourselves: llama-cpp-python would hand a NULL sampler to C and crash.
            _free(_grammar_sampler(self.model.llm, grammar))
            self._grammars[key] = grammar
        grammar = LlamaGrammar.from_string(self._grammars[key])
        prompt = self.render(messages, tools)
        with self.model._lock:  # one generation at a time on the shared model
            llm = self.model.llm
            tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
            cached = _cached_prefix(llm, tokens)
            t0 = time.perf_counter()
            out = llm.create_completion(prompt, grammar=grammar, temperature=0.0,
                                        max_tokens=max_tokens, seed=self.model.seed)
            seconds = time.perf_counter() - t0
        text = out["choices"][0]["text"]
        usage = out.get("usage", {})
        reply = parse_reply(text, call_prefix=f"call_{len(messages)}")
        reply.prompt_tokens = usage.get("prompt_tokens", len(tokens))
        reply.completion_tokens = usage.get("completion_tokens", 0)
        reply.evaluated_tokens = len(tokens) - min(cached, len(tokens) - 1)
        reply.seconds = seconds
        return reply


def _free(sampler) -> None:
    import llama_cpp

    llama_cpp.llama_sampler_free(sampler)


def _cached_prefix(llm, tokens: Sequence[int]) -> int:
    n = 0
    for a, b in zip(llm._input_ids[: llm.n_tokens], tokens):
        if a != b:
            break
        n += 1
    return n


def describe_tool_schemas(tools: Sequence[dict]) -> str:
    """Write the tool schemas and the reply format for the system turn (a local model needs both)."""
    lines = ["Tools (JSON Schema of each tool's arguments):"]
    for t in tools:
        f = t["function"]
        params = {k: {kk: vv for kk, vv in v.items() if kk != "examples"}
                  for k, v in f["parameters"].get("properties", {}).items()}
        lines.append(json.dumps({"name": f["name"], "description": f["description"],
                                 "arguments": params}, ensure_ascii=False))
    example = {"thought": "I need the July invoices of cus_4417.", "tool_calls": [
        {"name": "list_invoices", "arguments": {"customer_id": "cus_4417", "since": "2026-07-01"}}]}
    lines += ["", "Reply with one JSON object: a tool call such as", json.dumps(example),
              "or, once the tool results answer the question,",
              '{"thought": "<what the results say>", "answer": "<the answer>"}']
    return "\n".join(lines)


def assistant_json(msg: dict) -> str:
    """Render an assistant message back into the JSON reply form the grammar produces."""
    calls = msg.get("tool_calls") or []
    if not calls:
        return json.dumps({"thought": msg.get("thought") or "", "answer": msg.get("content") or ""},
                          ensure_ascii=False)
    items = []
    for c in calls:
        args = c["function"]["arguments"]
        try:
            args = json.loads(args) if isinstance(args, str) else args
        except ValueError:
            pass
        items.append({"name": c["function"]["name"], "arguments": args})
    return json.dumps({"thought": msg.get("content") or "", "tool_calls": items},
                      ensure_ascii=False)


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
        good = [c for c in calls if isinstance(c, dict) and isinstance(c.get("name"), str)] \
            if isinstance(calls, list) else []
        if not good or len(good) != len(calls):  # a thought is never promoted to an answer
            return ChatReply(content=None, thought=thought, finish_reason="stop", text=text)
        return ChatReply(content=thought, thought=thought, finish_reason="tool_calls", text=text,
                         tool_calls=[tool_call(f"{call_prefix}_{i}", c["name"],
                                               c.get("arguments", {}))
                                     for i, c in enumerate(good, 1)])
    answer = obj.get("answer")
    return ChatReply(content=answer if isinstance(answer, str) else None, thought=thought,
                     finish_reason="stop", text=text)


class OpenAIChatModel:
    """Any OpenAI-compatible chat completions endpoint with native tool calling.

    ``model``, ``base_url`` and ``api_key`` default to ``OPENAI_MODEL``, ``OPENAI_BASE_URL``
    and ``OPENAI_API_KEY``. Calls ``client.chat.completions.create(model, messages,
    tools=..., max_tokens=...)``. Pass ``client=`` to use a client you built (or a fake).
    """

    def __init__(self, model: str | None = None, *, base_url: str | None = None,
                 api_key: str | None = None, temperature: float = 0.0, timeout: float = 60.0,
                 client=None):
        self.model = model or os.environ.get("OPENAI_MODEL")
        if not self.model:
            raise ValueError("no model name: pass model= or set OPENAI_MODEL")
        if client is None:
            from openai import OpenAI

            client = OpenAI(base_url=base_url or os.environ.get("OPENAI_BASE_URL"),
                            api_key=api_key or os.environ.get("OPENAI_API_KEY") or "not-needed",
                            timeout=timeout)
        self.client = client
        self.temperature = temperature

    @property
    def name(self) -> str:
        return self.model

    def chat(self, messages: Sequence[dict], tools: Sequence[dict] | None = None, *,
             max_tokens: int = 192, tool_choice: str = "auto") -> ChatReply:
        """Send the conversation and the tool schemas; return the provider's reply."""
        kwargs: dict[str, Any] = dict(model=self.model, messages=list(messages),
                                      max_tokens=max_tokens, temperature=self.temperature)
        if tools:
            kwargs["tools"] = list(tools)
            kwargs["tool_choice"] = tool_choice
        t0 = time.perf_counter()
        out = self.client.chat.completions.create(**kwargs)
        choice, usage = out.choices[0], out.usage
        msg = choice.message
        calls = [tool_call(c.id, c.function.name, c.function.arguments or "{}")
                 for c in (msg.tool_calls or [])]
        return ChatReply(content=msg.content, tool_calls=calls,
                         thought=msg.content if calls else None,
                         finish_reason=choice.finish_reason or ("tool_calls" if calls else "stop"),
                         prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                         completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
                         seconds=time.perf_counter() - t0, text=msg.content or "")


class ScriptedChatModel:
    """Replay fixed replies, for tests: each one a dict ``{"thought", "tool_calls": [{"name",
    "arguments"}]}`` or ``{"thought", "answer"}`` (the grammar's shape), or its JSON text.

    The last reply repeats when the script runs out. ``requests`` keeps every
    ``(messages, tools)`` received. Token counts are whitespace word counts.
    """

    def __init__(self, replies: Sequence[dict | str], *, name: str = "scripted-chat"):
        if not replies:
            raise ValueError("a scripted chat model needs at least one reply")
        self.replies = [r if isinstance(r, str) else json.dumps(r) for r in replies]
        self.requests: list[tuple[list[dict], list[dict]]] = []
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    @classmethod
    def from_json(cls, path: str | os.PathLike) -> "ScriptedChatModel":
        """Load ``[reply, ...]`` or ``{"replies": [...]}`` from a JSON file."""
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        items = data.get("replies") if isinstance(data, dict) else data
        if not isinstance(items, list) or not items:
            raise ValueError(f'{path}: expected a JSON list of replies or {{"replies": [...]}}')
        if all(isinstance(r, str) and not r.lstrip().startswith("{") for r in items):
            raise ValueError(f"{path}: these look like text-protocol completions; a native script "
                             'holds replies like {"thought": "...", "tool_calls": [{"name": ..., '
                             '"arguments": {...}}]} or {"thought": "...", "answer": "..."}')
        bad = [i for i, r in enumerate(items, 1) if not isinstance(r, (dict, str))]
        if bad:
            raise ValueError(f"{path}: reply {bad[0]} is neither an object nor JSON text")
        return cls(items, name=f"scripted:{Path(path).name}")

    def chat(self, messages: Sequence[dict], tools: Sequence[dict] | None = None, *,
             max_tokens: int = 192, tool_choice: str = "auto") -> ChatReply:
        text = self.replies[min(len(self.requests), len(self.replies) - 1)]
        self.requests.append((copy.deepcopy(list(messages)), list(tools or [])))
        reply = parse_reply(text, call_prefix=f"call_{len(messages)}")
        reply.prompt_tokens = sum(len(str(m.get("content") or "").split()) for m in messages)
        reply.completion_tokens = len(text.split())
        return reply


def load_chat_model(spec: str | None = "local"):
    """Build a chat backend: ``local``, ``openai``, ``openai:MODEL`` or ``scripted:FILE.json``.

    Raises ValueError on anything else.
    """
    spec = (spec or "local").strip()
    if spec == "local":
        return LocalChatModel()
    if spec.startswith("scripted:"):
        return ScriptedChatModel.from_json(spec.split(":", 1)[1])
    if spec == "openai" or spec.startswith("openai:"):
        return OpenAIChatModel(spec.split(":", 1)[1] if ":" in spec else None)
    raise ValueError(f"unknown chat model {spec!r}; "
                     "use local, scripted:FILE.json, openai or openai:MODEL")


# --------------------------------------------------------------------------- running calls

def execute_call(tools: dict[str, Tool], call: dict,
                 approve: Callable[[str, dict], bool] | None = None) -> Observation:
    """Run one OpenAI-shaped tool call: look the tool up, validate, (approve,) run. Never raises.

    Invalid arguments are refused *before* the tool runs, with :func:`validate_call`'s
    messages. A tool with ``side_effect=True`` runs only if ``approve(name, args)``
    returns True.
    """
    name = call.get("function", {}).get("name")
    tool = tools.get(name)
    if tool is None:
        message = unknown_tool_message(str(name), tools)
        return Observation(f"Error: {message}", error=message)
    args, errors = check_arguments(tool, call["function"].get("arguments", "{}"))
    if errors:
        message = f"{name} was not run; fix its arguments: " + "; ".join(errors)
        return Observation(f"Error: {message}", error=message)
    if tool.side_effect and not (approve is not None and approve(name, args) is True):
        message = f"{name} has side effects and was not approved; nothing was done"
        return Observation(f"Error: {message}", error=message)
    return call_tool(tools, name, args)


def execute_calls(tools: dict[str, Tool], calls: Sequence[dict],
                  approve: Callable[[str, dict], bool] | None = None) -> list[Observation]:
    """Run a turn's calls: in parallel threads when all are read-only, else one at a time, in order.

    Results come back in call order. Calls on the same ``sqlite3`` connection still take
    turns (one lock per connection): two threads on one connection deadlock inside
    ``sqlite3`` once a trace callback is set, as :func:`react_lab.tools.record_sql` does.
    """
    side_effects = any(getattr(tools.get(c.get("function", {}).get("name")), "side_effect", False)
                       for c in calls)
    if len(calls) < 2 or side_effects:
        return [execute_call(tools, c, approve) for c in calls]
    locks = {id(conn): threading.Lock() for conn in map(_connection, calls_tools(tools, calls))
             if conn is not None}

    def run_one(call: dict) -> Observation:
        conn = _connection(tools.get(call.get("function", {}).get("name")))
        with locks[id(conn)] if conn is not None else nullcontext():
            return execute_call(tools, call, approve)

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(run_one, calls))


def calls_tools(tools: dict[str, Tool], calls: Sequence[dict]) -> list[Tool | None]:
    """The tool each call names (None for an unknown name)."""
    return [tools.get(c.get("function", {}).get("name")) for c in calls]


def _connection(tool: Tool | None) -> sqlite3.Connection | None:
    """The sqlite3 connection a tool function is bound to (``partial(fn, conn)``), if any."""
    bound = getattr(getattr(tool, "fn", None), "args", ())
    return bound[0] if bound and isinstance(bound[0], sqlite3.Connection) else None


# --------------------------------------------------------------------------- the native loop

def run_native(question: str, chat_model, tools: dict[str, Tool], *, max_steps: int = 6,
               max_tokens: int = 192, system: str = SYSTEM,
               approve: Callable[[str, dict], bool] | None = None,
               messages: list[dict] | None = None, guards: Guards | None = None) -> Iterator[Step]:
    """Run the native tool-calling loop, yielding one :class:`Step` per model call.

    ``chat_model`` is any backend with ``chat(messages, tools=, max_tokens=)``. Pass a
    ``messages`` list to watch the conversation grow (it is filled in place). A step's
    ``action`` is ``{"tool", "args"}`` of its first call (plus ``"calls"``, all of them,
    when the reply made several); its ``observation`` is the results joined by newlines.

    The guards are the text loop's (:class:`react_lab.guards.Guards`; default: every limit
    on), called at the same places: token and money budgets after each reply; each call
    checked against its schema and then run *through the guards* (repeats, retry cap,
    approval, timeout, truncation with a ``more`` tool offered while a page waits, data
    markers), one call at a time in the order the model wrote them, since the guards keep
    count; answer checks on a text reply (a rejected answer goes back as a user message);
    old tool results compacted past ``guards.compact_at`` tokens. ``approve``, when given,
    replaces ``guards.approve``. A step's ``guard`` names the guard that acted; when the
    step limit or a refusal guard ends the run and ``guards.best_effort`` is on, one more
    request *without tools* asks for an answer, labelled ``[best effort]``.
    """
    check_run_arguments("chat", chat_model, tools, max_steps, max_tokens)
    guards = guards if guards is not None else Guards()
    if approve is not None:
        guards.approve = approve
    guards.start(question)
    messages = messages if messages is not None else []
    if not messages:
        messages += [{"role": "system", "content": guards.instructions(system)},
                     {"role": "user", "content": question}]
    for number in range(1, max_steps + 1):
        t0 = time.perf_counter()
        offered = {**tools, MORE: guards.more_tool()} if guards.pages else tools
        reply = chat_model.chat(messages, tools=tool_schemas(offered), max_tokens=max_tokens)
        guards.spend(reply)  # guard: token and money budgets
        messages.append(reply.message())
        event = Step.of(number, reply, thought=reply.thought)
        if reply.tool_calls:
            t1 = time.perf_counter()
            outcomes = [_run_guarded(guards, offered, call) for call in reply.tool_calls]
            event.tool_seconds = time.perf_counter() - t1
            for call, outcome in zip(reply.tool_calls, outcomes):
                messages.append({"role": "tool", "tool_call_id": call["id"],
                                 "content": outcome.text})
            event.action = _action(reply.tool_calls)
            event.observation = "\n".join(o.text for o in outcomes)
            errors = [o.error for o in outcomes if o.error]
            event.error = "\n".join(errors) if errors else None
            event.guard = next((o.guard for o in outcomes if o.guard), None)
        elif reply.content is not None:
            rejected = guards.check_answer(reply.content)  # guard: grounding, placeholders, citations
            if rejected is None:
                event.answer = reply.content
            else:
                event.observation, event.error, event.guard = (rejected.text, rejected.error,
                                                               rejected.guard)
                messages.append({"role": "user", "content": rejected.text})
        else:
            event.error = event.observation = malformed_reply_message(reply, max_tokens)
            messages.append({"role": "user", "content": event.error})
        if event.answer is None and guards.compact_messages(messages):  # guard: context size
            event.guard = event.guard or "compacted"
        ended = None
        if event.answer is None:
            ended = guards.stop_reason() or ("max_steps" if number == max_steps else None)
            event.guard = ended or event.guard  # guard: budgets, ignored refusals, step limit
        event.seconds = time.perf_counter() - t0
        yield event
        if event.answer is not None:
            return
        if ended:
            if guards.best_effort and ended in BEST_EFFORT_AFTER:  # guard: step limit, best effort
                yield best_effort_native(chat_model, messages, guards, ended, number + 1,
                                         max_tokens)
            return


def malformed_reply_message(reply: ChatReply, max_tokens: int) -> str:
    """What the loop tells the model when a reply has neither tool calls nor an answer."""
    if reply.finish_reason == "length":
        return (f"the reply was cut off after {reply.completion_tokens} tokens (max_tokens="
                f"{max_tokens}) before it was complete; reply with a shorter thought")
    return ('the reply had neither tool calls nor an answer; reply with {"thought": "...", '
            '"tool_calls": [{"name": "<a tool>", "arguments": {...}}]} or '
            '{"thought": "...", "answer": "..."}')


#: What the loop tells the model when no more tool calls are allowed.
BEST_EFFORT_REQUEST = ("The loop allows no more tool calls ({guard}). Answer the question now "
                       "from the tool results above, as well as they allow.")


def best_effort_native(chat_model, messages: list[dict], guards: Guards, guard: str, number: int,
                       max_tokens: int) -> Step:
    """Ask once, with no tools offered, for an answer from what the run found.

    The answer is labelled ``[best effort]``; a reply that still holds no answer (or
    only repeats the loop's own words) leaves the step's ``answer`` None and says so in
    ``error``. The step's ``guard`` is the limit that ended the run.
    """
    t0 = time.perf_counter()
    request = BEST_EFFORT_REQUEST.format(guard=guard)
    messages.append({"role": "user", "content": request})
    reply = chat_model.chat(messages, tools=[], max_tokens=max_tokens, tool_choice="none")
    guards.spend(reply)
    messages.append(reply.message())
    loop_said = [str(m.get("content") or "") for m in messages[2:]  # the loop's own words
                 if m["role"] == "user" or str(m.get("content") or "").startswith("Error:")]
    answer = (guards.best_effort_answer(reply.content, loop_said=loop_said)
              if reply.content and not reply.tool_calls else None)
    return Step.of(number, reply, thought=reply.thought, guard=guard,
                   answer=f"[best effort] {answer}" if answer else None,
                   error=None if answer else "no answer, even when asked for a best effort",
                   seconds=time.perf_counter() - t0)


def _run_guarded(guards: Guards, tools: dict[str, Tool], call: dict) -> Outcome:
    """Run one OpenAI-shaped call through the guards; the schema check runs inside them.

    The guards see the decoded arguments (the raw string if they are not JSON), so a
    repeat is a repeat however the model spaced its JSON. The approval gate is the
    guards' (``guards.approve``); :func:`execute_call` is told yes once they have let the
    call through.
    """
    name = str(call.get("function", {}).get("name"))
    raw = call.get("function", {}).get("arguments", "{}")
    try:
        args = json.loads(raw) if isinstance(raw, str) else raw
    except (ValueError, RecursionError):
        args = raw
    if name == MORE:
        return guards.run_tool(tools, name, args if isinstance(args, dict) else {"page": args})
    return guards.run_tool(tools, name, args,
                           call=lambda t, n, a: execute_call(t, call, approve=_yes))


def _yes(name: str, args: dict) -> bool:
    return True


def _action(calls: Sequence[dict]) -> dict:
    """The step's action: the first call as ``{"tool", "args"}``, all calls under ``"calls"``."""
    parsed = []
    for c in calls:
        args = c["function"].get("arguments")
        try:
            args = json.loads(args) if isinstance(args, str) else args
        except ValueError:
            pass  # keep the raw string: it is what the model sent
        parsed.append({"id": c.get("id"), "tool": c["function"].get("name"), "args": args})
    action = {"tool": parsed[0]["tool"], "args": parsed[0]["args"]}
    if len(parsed) > 1:
        action["calls"] = parsed
    return action


def ask_native(question: str, chat_model, tools: dict[str, Tool], **kwargs):
    """Run :func:`run_native` to the end; return a :class:`react_lab.loop.RunResult`.

    The result's transcript shows the conversation by owner: system and user messages
    as ``prompt``, assistant replies as ``model``, tool results as ``loop``.
    """
    from .loop import RunResult

    messages: list[dict] = []
    steps = list(run_native(question, chat_model, tools, messages=messages, **kwargs))
    last = steps[-1] if steps else Step(step=0, guard="max_steps")
    # As in react_lab.loop.ask: an accepted answer has no guard; a best-effort one has the limit's.
    stopped_by = "answer" if last.answer is not None and last.guard is None else last.guard or "max_steps"
    return RunResult(question, last.answer, stopped_by, steps, conversation(messages),
                     best_effort=last.answer is not None and stopped_by != "answer")


def conversation(messages: Sequence[dict]) -> Transcript:
    """Show a message list as a :class:`Transcript`, one line per message, owned by who wrote it."""
    transcript = Transcript()
    head = 0  # the system message and the question form the prompt
    while head < len(messages) and messages[head]["role"] in ("system", "user") and head < 2:
        head += 1
    transcript.add("prompt", "".join(
        f"{'system' if m['role'] == 'system' else 'Question'}: {m.get('content')}\n"
        for m in messages[:head]))
    for msg in messages[head:]:
        role, content = msg["role"], msg.get("content")
        if role == "assistant":
            transcript.add("model", f"assistant: {assistant_json(msg)}\n")
        elif role == "tool":
            transcript.add("loop", f"tool[{msg.get('tool_call_id')}]: {content}\n")
        else:  # later user messages are the loop's notes to the model
            transcript.add("loop", f"{role}: {content}\n")
    return transcript

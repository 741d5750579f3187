"""Tool calls written outside the paper's brackets: JSON objects and call syntax in model text.

:func:`react_lab.lab.agent.parser.parse` reads the labels; when the text after them is not
``tool[input]`` it hands over to :func:`react_lab._parsing.read_other`, which reads the call
with this module's readers. Models write a call as a JSON object
(``{"action": "search", "action_input": {...}}``, with a dozen spellings of the two keys,
fenced, inside ``<tool_call>`` tags, or under an answer label) or as call syntax
(``search("refund policy")``, ``search(query="x")``, ``search({...})``, a list of such calls:
:func:`python_calls`; JSON's ``true``/``null`` and a lone ``properties={...}`` wrapper are
read as meant). A reader returns ``(start, end, ParseResult)`` (an action, a final answer:
a ``finish`` call, or an error saying what to write instead), or None if there is no call.

Underneath is the one bracket reader (:func:`react_lab._parsing.brackets.find_brackets`): a
single left-to-right pass, so every reader here stays linear in the length of the text,
whatever the text. Objects are loaded as JSON, then as Python literals
(``ast.literal_eval``, never ``eval``).
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from typing import Any

from ..protocol import QUOTE_PAIRS, ParseResult, clip, shown, split_arguments, unquoted
from .brackets import find_brackets, object_at
from .json_errors import DuplicateKey, unique_keys
from .labels import FENCE, NAME

#: Tool names that mean "finish with this answer" in the paper's bracket form.
FINISH_NAMES = {"finish", "final_answer", "final answer"}

#: Keys a JSON call names its tool under, and keys it puts the tool's input under. The two
#: lists agree: each prefix (``action``, ``tool``, ``function``) names the tool alone or with
#: ``_name`` and holds the input under ``_input``, ``_args``, ``_arguments``, ``_parameters``
#: or ``_params``; ``name`` goes with the bare words (``arguments``, ...). Keys are compared
#: without case, ``_`` or ``-``, so ``toolName`` is ``tool_name``.
_CALL_PREFIXES = ("action", "tool", "function")
_INPUT_WORDS = ("input", "args", "arguments", "parameters", "params")
NAME_KEYS = (*_CALL_PREFIXES, *(f"{p}_name" for p in _CALL_PREFIXES), "name")
INPUT_KEYS = (*(f"{p}_{w}" for p in _CALL_PREFIXES for w in _INPUT_WORDS), *_INPUT_WORDS)
_META_KEYS = {"id", "type", "index", "thought", "reasoning"}  # a call object may carry these too
_CALLISH = re.compile(r"tool|func|action|call|command|cmd|recipient|method")  # in a normalised key
_NAME_IN_JSON = re.compile(
    r"[\"'](?:%s)[\"'][ \t]*:[ \t]*[\"']([^\"'\n]{1,80})[\"']" % "|".join(NAME_KEYS), re.IGNORECASE
)

#: The one tool-name rule (the CLI's ``--tools``, the parser, the native check): what the APIs
#: accept. OpenAI's function names match ``^[a-zA-Z0-9_-]{1,64}$`` (the Chat Completions
#: reference, ``tools[].function.name``); MCP's tool names are 1 to 128 ASCII letters, digits,
#: ``_``, ``-`` and ``.`` (specification 2025-11-25, server/tools, "Tool names"). A name either
#: accepts is a name: ``web-search``, ``files.read``; ``Google Search`` and ``搜索`` are not.
TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")
#: What the rule says, for a message.
TOOL_NAME_RULE = "1 to 128 ASCII letters, digits, '_', '-' and '.', as OpenAI and MCP name tools"
#: Without a tool list the parser also reads words of those characters as one name, as agent
#: frameworks name tools (LangChain's ``Google Search``, in the shared cases); with one, a
#: name is only ever matched exactly.
_WORD = r"[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*"  # a dot between two parts, never at the end
_WORDS_NAME = re.compile(_WORD + r"(?:[ \t]+" + _WORD + ")*")
#: ``search(`` or ```search (``: call syntax, its name.
_PAREN_CALL = re.compile(r"[ \t`*\"']*(" + NAME + r")[ \t]*\(")
_CLOSE_PAREN = re.compile(r"[ \t]*\)")
#: What may come between an answer label and a JSON call under it: a fence, ``<tool_call>``, ``[``.
_ANSWER_CALL_HEAD = re.compile(
    r"[ \t\n]*(?:" + FENCE + r"\n[ \t\n]*)?(?:<tool_call>[ \t\n]*)?(?:\[[ \t\n]*)?\{"
)

#: Past this many characters a ``{...}`` blob is read as JSON only: Python's own parser
#: (``ast.literal_eval``) is slow on huge text, and models write long arguments as JSON.
_LITERAL_MAX = 20_000


def quiet_parse(source: str, mode: str = "eval") -> ast.AST:
    """``ast.parse`` with Python's warnings silenced: model text such as ``1if 1else 2`` or
    ``"\\d"`` makes Python print a ``SyntaxWarning``, and reading model text prints nothing.
    Raises what ``ast.parse`` raises (``SyntaxError``, ...)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(source, mode=mode)


def _python_literal(blob: str) -> Any:
    """The Python literal ``blob`` (:func:`literal`), parsed quietly (:func:`quiet_parse`)."""
    return literal(quiet_parse(blob.lstrip(" \t")).body)


def _json(blob: str) -> Any:
    """``json.loads`` of ``blob``; a key given twice in an object is an error, not a guess."""
    return json.loads(blob, object_pairs_hook=unique_keys)


def _loaded(blob: str) -> tuple[Any, str | None]:
    """The value of ``blob``, JSON first, then a Python literal (:func:`literal`, never
    ``eval``), or None if neither; and the key the first reading to find one gives twice.

    Blobs longer than ``_LITERAL_MAX`` characters are tried as JSON only.
    """
    loaders = (_json, _python_literal) if len(blob) <= _LITERAL_MAX else (_json,)
    twice = None
    for loader in loaders:
        try:
            return loader(blob), twice
        except DuplicateKey as exc:
            twice = twice or exc.key
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return None, twice


def load_object(blob: str) -> Any:
    """The JSON or Python literal ``blob`` (:func:`_loaded`), or None: an object that gives a
    key twice is neither (which value was meant is a guess)."""
    return _loaded(blob)[0]


def clean_input(value: str) -> Any:
    """Trim, parse an object if it is one, strip one pair of quotes (straight or typographic)
    wrapping the whole input (:func:`react_lab.protocol.unquoted`), or an opening quote never
    closed (a line cut off). Quotes around a value with a comma in it stay: they keep it one
    argument (``search["refund, late fee"]``, :meth:`react_lab.protocol.ParseResult.args`)."""
    value = value.strip()
    if value.startswith("{") and value.endswith("}"):
        obj = load_object(value)
        if isinstance(obj, dict):
            return obj
    if (bare := unquoted(value)) != value:
        return value if "," in bare and len(split_arguments(value)) == 1 else bare
    close = QUOTE_PAIRS.get(value[:1]) if len(value) >= 2 else None
    if close and close not in value[1:] and value[0] not in value[1:]:
        return value[1:].strip()  # an opening quote never closed: the line was cut off
    return value


def is_tool_name(name: str) -> bool:
    """True if ``name`` can name a tool: the one rule (:data:`TOOL_NAME`), or framework words."""
    return isinstance(name, str) and len(name) <= 128 and _WORDS_NAME.fullmatch(name) is not None


# --------------------------------------------------------------------------- JSON calls


def norm_key(key: Any) -> str:
    """A JSON key as compared with :data:`NAME_KEYS` / :data:`INPUT_KEYS`.

    Lower case, letters and digits only: ``toolName`` and ``tool-name`` are ``toolname``.
    """
    return re.sub(r"[\W_]+", "", key.lower()) if isinstance(key, str) else ""


_NAME_NORMS = [norm_key(k) for k in NAME_KEYS]
_INPUT_NORMS = [norm_key(k) for k in INPUT_KEYS]


def _keys_shown(keys: list) -> str:
    return ", ".join(shown(str(k), 30) for k in keys[:5]) + (", ..." if len(keys) > 5 else "")


def _json_call(obj: dict) -> ParseResult | None:
    """Read one decoded JSON object as a call; else None.

    An object that looks like a call written with keys the parser does not read is an error
    naming them.
    """
    keys: dict[str, Any] = {}
    for k in obj:
        keys.setdefault(norm_key(k), k)
    name_key = next(
        (keys[n] for n in _NAME_NORMS if n in keys and isinstance(obj[keys[n]], str)), None
    )
    if name_key is None:
        bad = [
            k for n, k in keys.items() if n in _NAME_NORMS and not isinstance(obj[k], (dict, list))
        ]
        if bad:
            return _json_error(
                f"the tool name under {shown(str(bad[0]), 30)} is "
                f"{shown(obj[bad[0]], 40)}, not a string; "
                'write {"action": "tool_name", "action_input": {...}}'
            )
        unknown = [
            k
            for n, k in keys.items()
            if _CALLISH.search(n) and isinstance(obj[k], str) and obj[k].strip()
        ]
        if unknown:
            return _json_error(
                "the JSON object looks like a tool call, but the parser does not read its "
                f"keys {_keys_shown(unknown)}; put the tool name under one of "
                f"{', '.join(NAME_KEYS)}: "
                '{"action": "tool_name", "action_input": {...}}'
            )
        return None
    name = obj[name_key]
    input_key = next((keys[n] for n in _INPUT_NORMS if n in keys), None)
    others = [k for n, k in keys.items() if n not in _NAME_NORMS and n not in _META_KEYS]
    if input_key is None and others:
        shown_name = json.dumps(name) if is_tool_name(name) else "tool_name"
        return _json_error(
            f"the JSON call names tool {shown(name, 60)} but puts its input under "
            f"{_keys_shown(others)}, which the parser does not read; put the input under "
            f'one key: {{"action": {shown_name}, "action_input": {{...}}}}',
            tool=name,
        )
    value = None if input_key is None else obj[input_key]  # no input key: no input, as null
    if not isinstance(value, (str, dict)):  # a list, a number: its JSON text; null: no input
        value = "" if value is None else json.dumps(value, ensure_ascii=False)
    if isinstance(value, str) and value.strip().startswith("{"):
        loaded = load_object(value)
        value = loaded if isinstance(loaded, dict) else value
    if name.strip().lower() in FINISH_NAMES:
        return ParseResult("final", answer=answer_text(value), dialect="json")
    return ParseResult("action", tool=name, input=value, dialect="json")


def _json_error(reason: str, tool: str | None = None) -> ParseResult:
    """The error for a JSON object read as a call that cannot be run: ``reason`` says why."""
    return ParseResult("error", tool=tool, dialect="json", reason=reason)


#: Keys a finish call puts its answer under (compared as :func:`norm_key` does):
#: ``finish(answer="...")``.
ANSWER_KEYS = {
    "answer",
    "finalanswer",
    "response",
    "result",
    "text",
    "output",
    "content",
    "message",
    "reply",
}


def answer_text(value: Any) -> str:
    """The answer a finish call carries, as the model wrote it, in any script.

    A string is itself; an object whose one key is an answer key (:data:`ANSWER_KEYS`) is that
    value (``{"answer": "北京"}`` is ``北京``); anything else is its JSON, non-ASCII characters
    written as themselves, never as ``\\u`` escapes.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        ((key, inner),) = value.items()
        if norm_key(key) in ANSWER_KEYS:
            return inner if isinstance(inner, str) else json.dumps(inner, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False)


def find_json_call(text: str, start: int):
    """First JSON call object at or after ``start`` (fences ignored), as ``(start, end, result)``.

    A call names its tool under one of :data:`NAME_KEYS` and its input under one of
    :data:`INPUT_KEYS`. If no object is a call but one looks like a call written with keys
    the parser does not read, the result is an error naming those keys; else None.
    """
    unread = None  # the first call-like object with unknown keys, as (start, end, error)
    # Only the first few objects are tried: enough for any real completion.
    for j, end in find_brackets(text, start, limit=16):
        if end is None:
            continue
        obj = load_object(text[j:end])
        if not isinstance(obj, dict):
            continue
        result = _json_call(obj)
        if result is not None and result.kind != "error":
            return (j, end, result)
        if result is not None and unread is None:
            unread = (j, end, result)
    return unread


def call_as_answer(text: str, start: int):
    """A JSON call written right after an answer label, as ``(start, end, result)``; or None.

    Fences, a ``<tool_call>`` tag or a ``[`` may come first. Only a real call counts (an
    input key, or a name key other than ``name``): ``{"name": "Acme", "total": 4200}`` is
    an answer that happens to be JSON.
    """
    m = _ANSWER_CALL_HEAD.match(text, start)
    if m is None:
        return None
    blob = find_json_call(text, m.end() - 1)
    if blob is None or blob[0] != m.end() - 1 or blob[2].kind == "error":
        return None
    return blob if names_a_call(load_object(text[blob[0] : blob[1]])) else None


def names_a_call(obj: Any) -> bool:
    """True if a decoded object is unmistakably a call.

    It has an input key, or a name key other than ``name``.

    ``{"name": "Acme", "total": 4200}`` is data that happens to be JSON, not a call.
    """
    norms = {norm_key(k) for k in obj} if isinstance(obj, dict) else set()
    return bool(norms & set(_INPUT_NORMS) or norms & (set(_NAME_NORMS) - {"name"}))


def object_without_call(text: str, brace: int) -> ParseResult:
    """The error for ``Action: {...}`` that holds no call: cut off, a key given twice, or no
    tool-name key."""
    end = find_brackets(text, brace, limit=1)[0][1]
    if end is None:
        named = _NAME_IN_JSON.search(text, brace, brace + 2000)
        return cut_off(named.group(1) if named else None, "the JSON call after the Action label")
    obj, twice = _loaded(text[brace:end])
    if twice is not None:  # {"action": "a", "action": "b"}: nothing runs on a guess
        reason = (
            f"the object after the Action label gives the key {shown(twice, 40)} twice, so "
            "which value is meant is a guess; write the call again with each key once"
        )
        return ParseResult("error", reason=reason)
    keys = f" (its keys: {_keys_shown(list(obj))})" if isinstance(obj, dict) and obj else ""
    return ParseResult(
        "error",
        reason=(
            f"the object after the Action label names no tool{keys}; write "
            '{"action": "tool_name", "action_input": {...}} or \'Action: tool_name[arguments]\''
        ),
    )


def cut_off_call(text: str) -> ParseResult | None:
    """The error for the first JSON call in ``text`` that names its tool but is never closed.

    None if there is none.
    """
    for j, end in find_brackets(text, 0, limit=16):
        named = _NAME_IN_JSON.search(text, j, j + 2000) if end is None else None
        if named is not None:
            return cut_off(named.group(1), "the JSON call")
    return None


def cut_off(name: str | None, what: str) -> ParseResult:
    """The error for a JSON object the model never closed (it was cut off, or lost a brace)."""
    call = f"Action: {clip(name, 40)}[arguments]" if name else "Action: tool_name[arguments]"
    return ParseResult(
        "error",
        tool=name,
        reason=(
            f"{what} is cut off: its '{{' is never closed; "
            f"write the whole call again, e.g. '{call}'"
        ),
    )


# --------------------------------------------------------------------------- call syntax


def paren_call(text: str, start: int, line_end: int):
    """``name(arguments)`` at ``start`` (call syntax on the Action line); or None.

    Returned as ``(start, end, result)``.

    A JSON object inside may span lines; other arguments end at the matching ``)`` on the
    line (quotes respected), or at the end of the line when the model was cut off.
    """
    m = _PAREN_CALL.match(text, start, line_end)
    if m is None:
        return None
    name, open_at = m.group(1), m.end()
    obj = object_at(text, open_at)
    if obj is not None and obj[1] is None:
        return (start, len(text), cut_off(name, "the JSON object in the call"))
    if obj is not None:  # a JSON object inside: it may span lines
        j, close = obj
        after = _CLOSE_PAREN.match(text, close)
        end, value = after.end() if after else close, unwrap(clean_input(text[j:close]))
    else:
        close = find_brackets(text, open_at - 1, limit=1, end=line_end, pair="()")[0][1]
        end = line_end if close is None else close  # never closed: the rest of the line
        value = _call_input(text[open_at : line_end if close is None else close - 1])
    if value is None:
        short = clip(name, 40)
        reason = (
            f"the call mixes positional and keyword arguments; write either "
            f"'Action: {short}[a, b]' or 'Action: {short}({{\"name\": value}})'"
        )
        return (start, end, ParseResult("error", tool=name, dialect="call", reason=reason))
    return (start, end, ParseResult("action", tool=name, input=value, dialect="call"))


def _call_input(inner: str) -> Any:
    """The input written inside ``name(...)``: positional values joined by ``", "`` (as inside
    brackets), keyword arguments as a dict (a lone wrapper such as ``properties={...}``
    unwrapped, ``**{...}`` merged), else the text itself. Python literals, and JSON's
    ``true``/``false``/``null`` (:func:`literal`), never ``eval``. None when positional and
    keyword arguments are mixed: no name for the positional ones is known here.
    """
    inner = inner.strip()
    if not inner or inner.startswith("{") or len(inner) > _LITERAL_MAX:
        return clean_input(inner)
    try:
        call = quiet_parse(f"f({inner})").body
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        call = None
    ours = isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "f"
    value = call_arguments(call) if ours else None
    if value is None:  # not the arguments of one call, or not literals: the text itself
        return clean_input(inner)
    return None if value == "mixed" else value


#: Keys a model wraps a call's real arguments in, copying the schema's shape (``properties``)
#: or the API's (``arguments``): ``get_weather(properties={"location": "Tokyo"})``.
WRAPPERS = {"properties", "parameters", "params", "arguments", "args", "kwargs"}
_JSON_WORDS = {"true": True, "false": False, "null": None}


def literal(node: ast.AST, depth: int = 0) -> Any:
    """The value of a literal expression node.

    Python literals, and JSON's ``true``/``false``/``null``.

    Tuples become lists (the JSON shape). Raises ``ValueError`` for anything else (a name,
    a call, an operator), a key given twice (:class:`DuplicateKey`), or nesting deeper than
    32: the value is read, never evaluated.
    """
    if depth > 32:
        raise ValueError("nested too deeply")
    if isinstance(node, ast.Name) and node.id in _JSON_WORDS:
        return _JSON_WORDS[node.id]
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise ValueError("** inside a dict")
        pairs = [
            (literal(k, depth + 1), literal(v, depth + 1))
            for k, v in zip(node.keys, node.values, strict=True)
        ]
        return unique_keys(pairs)
    if isinstance(node, (ast.List, ast.Tuple)):
        return [literal(e, depth + 1) for e in node.elts]
    return ast.literal_eval(node)


def unwrap(args: Any) -> Any:
    """``args`` without a lone wrapper key (:data:`WRAPPERS`) around the real arguments."""
    if isinstance(args, dict) and len(args) == 1:
        ((key, inner),) = args.items()
        if isinstance(key, str) and key.lower() in WRAPPERS and isinstance(inner, dict) and inner:
            return inner
    return args


def call_arguments(call: ast.Call) -> Any:
    """The input of one parsed call expression: keywords as a dict (``**{...}`` merged, a lone
    wrapper unwrapped), one positional object as itself, one positional scalar as a string,
    several (or one with a comma in it) as a list of strings (``pair("Smith, John", 2)`` is
    ``["Smith, John", "2"]``: a comma inside a string stays in it).

    None when an argument is not a literal; ``"mixed"`` for positional and keyword arguments
    together (no name is known for the positional ones).
    """
    try:
        positional = [literal(a) for a in call.args]
        keywords: dict = {}
        for k in call.keywords:
            value = literal(k.value)
            if k.arg is None and not isinstance(value, dict):
                return None
            given = value if k.arg is None else {k.arg: value}
            if keywords.keys() & given.keys():  # f(a=1, a=2): which one was meant is a guess
                raise DuplicateKey(next(iter(keywords.keys() & given.keys())))
            keywords.update(given)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if positional and keywords:
        return "mixed"
    if keywords:
        return unwrap(keywords)
    if len(positional) == 1 and isinstance(positional[0], dict):
        return unwrap(positional[0])
    if all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in positional):
        values = [str(v) for v in positional]
        return values[0] if len(values) == 1 and "," not in values[0] else values
    return None


def python_calls(source: str) -> list[tuple[str, Any]] | None:
    """Python-style calls in ``source``: ``[a(k=1), b()]``, ``a(k=1); b()``, one call a line.

    Returns ``[(name, input), ...]`` -- a dotted name loses a trailing ``.call`` (Llama 3's
    built-ins: ``brave_search.call(query="x")``) and a leading ``default_api.`` or
    ``functions.``; ``print(tool(...))`` is the call inside -- or None when ``source`` is not
    only calls with literal arguments. Parsed with :mod:`ast`, never run.
    """
    source = source.strip().strip("`").strip()
    if not source or len(source) > _LITERAL_MAX:
        return None
    try:
        tree = quiet_parse(source, mode="exec")
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    nodes = []
    for stmt in tree.body:
        if not isinstance(stmt, ast.Expr):
            return None
        value = stmt.value
        nodes += value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
    calls = []
    for node in nodes:
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "print"
            and len(node.args) == 1
            and isinstance(node.args[0], ast.Call)
            and not node.keywords
        ):
            node = node.args[0]  # Gemma 3 and Gemini write print(default_api.tool(...))
        name = _dotted(node.func) if isinstance(node, ast.Call) else None
        value = call_arguments(node) if name else None
        if value is None or value == "mixed":
            return None
        calls.append((name, value))
    return calls or None


def _dotted(func: ast.AST) -> str | None:
    """``a.b.c`` for a name or attribute chain.

    The prefixes ``default_api.`` and ``functions.`` and the suffix ``.call`` are dropped.
    """
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return None
    parts = [func.id, *reversed(parts)]
    if len(parts) > 1 and parts[0] in ("default_api", "functions"):
        parts = parts[1:]
    if len(parts) > 1 and parts[-1] == "call":
        parts = parts[:-1]
    return ".".join(parts)

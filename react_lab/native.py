"""Native (structured) tool calling: calls arrive as JSON in a field of their own, checked by a schema.

In the text protocol a regular expression in your client decides which characters are a
tool call (:data:`react_lab.protocol.ACTION_RE`). Native tool calling moves that
decision: the request carries every tool's JSON Schema, the reply carries its calls in
``tool_calls`` (the OpenAI chat completions shape: ``id``, ``type: "function"``,
``function: {name, arguments}`` with ``arguments`` a JSON *string*), and each result goes
back as a ``{"role": "tool", "tool_call_id": ...}`` message.

:func:`run_native` is the loop: the same shape as :func:`react_lab.loop.run`, with a
schema check (:func:`react_lab.schema.validate_call`, inside :func:`execute_call`) where
the text loop has its parser. A reply may hold several calls: the read-only ones run
together, the side-effecting ones one at a time, each through the approval gate
(:func:`run_calls`). ``tool_choice`` (:func:`check_tool_choice`) says whether the reply
may, must or must not call, or which tool it must call. The native twin of the text
protocol's exemplar is a past exchange prepended as messages (:func:`exemplar_messages`).
The backends it talks to are in :mod:`react_lab.lab.backends.chat`; the grammar that
constrains the embedded model's replies is in :mod:`react_lab.lab.backends.grammar`.
"""
from __future__ import annotations

import functools
import json
import threading
import time
from concurrent.futures import Future
from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

from .lab.backends.base import TOOL_CHOICES, assistant_json, check_tool_choice
from .context import compact_messages
from .guards import BUDGETS, Guards, Watch
from .loop import MAX_STEPS, best_effort_step, end_step
from .parser import parse, read_reply
from .protocol import ACTION, MAX_TOKENS, Exemplar, check_run_arguments, unknown_tool_message
from .schema import check_arguments, decode_arguments, example_args
from .tools import Observation, Tool, call_tool, connection, open_db, tool_schemas
from .trace import RunResult, Step, Transcript

if TYPE_CHECKING:
    from .lab.backends.chat import ChatReply

#: The system message of a native run. No format rules, no exemplars: the tools travel as
#: schemas and the reply's shape is the provider's (or the grammar's) business.
SYSTEM = ("You answer questions about a billing system. Call the tools to look facts up; "
          "never guess ids, dates or amounts. When the tool results answer the question, "
          "give the answer.")


#: How an exemplar's tool-call ids start (``example_1_1``): they mark where the prompt ends.
EXAMPLE_ID = "example_"

#: What the loop tells the model when no more tool calls are allowed.
BEST_EFFORT_REQUEST = ("The loop allows no more tool calls ({guard}). Answer the question now "
                       "from the tool results above, as well as they allow.")


# --------------------------------------------------------------------------- running calls

def execute_call(tools: dict[str, Tool], call: dict) -> Observation:
    """Run one OpenAI-shaped tool call: look the tool up, check its arguments, run it. Never raises.

    Invalid arguments are refused *before* the tool runs, with
    :func:`react_lab.schema.check_arguments`' messages. No approval is asked here: the
    loop calls this through :meth:`react_lab.guards.Watch.run_tool`, which holds the
    approval gate for side-effecting tools (as the text loop's ``call_tool`` does).
    """
    name = call.get("function", {}).get("name")
    tool = tools.get(name)
    if tool is None:
        message = unknown_tool_message(str(name), tools)
        return Observation(f"Error: {message}", error=message)
    args, errors = check_arguments(tool, call["function"].get("arguments", "{}"))
    if errors:
        message = (f"{name} was not run; fix its arguments: " + "; ".join(errors)
                   + f"; a valid call: {name}({example_args(tool)})")
        return Observation(f"Error: {message}", error=message)
    return call_tool(tools, name, args)


def run_calls(watch: Watch, tools: dict[str, Tool], calls: Sequence[dict], *,
              together: bool = True) -> list[Observation]:
    """Run one reply's calls through the run's ``watch``; return their observations in call order.

    Consecutive read-only calls start together, each in a thread of its own on a database
    connection of its own (:func:`concurrent_tool`); a side-effecting call
    (``Tool.side_effect``) and a call that cannot have a connection of its own run alone,
    in their turn, so a read written after a write sees it. The guards then take the calls
    one by one in call order, whatever finished first, so their counters, refusals and
    pages are exactly a one-at-a-time run's (``together=False`` is that run). A read-only
    call the guards refuse (a repeat), or answer themselves (the lab's ``more``), may
    already have run: it changed nothing, and its result is dropped. Each side-effecting
    call passes the approval gate before it runs.
    """
    observations: list[Observation] = []
    for group in call_groups(tools, calls) if together else [[(c, None)] for c in calls]:
        started = [start_call(tool, call) if len(group) > 1 else None for call, tool in group]
        observations += [_run_guarded(watch, tools, call, future)
                         for (call, _), future in zip(group, started)]
    return observations


def call_groups(tools: dict[str, Tool], calls: Sequence[dict]) -> list[list[tuple[dict, Tool | None]]]:
    """Split a reply's calls into groups that run together: runs of read-only calls, every other call alone.

    Each entry is ``(call, tool to run it with)``: the read-only tool on its own connection, None for a call that runs alone.
    """
    groups: list[list[tuple[dict, Tool | None]]] = []
    for call in calls:
        tool = concurrent_tool(tools, call)
        if tool is not None and groups and groups[-1][-1][1] is not None:
            groups[-1].append((call, tool))
        else:
            groups.append([(call, tool)])
    return groups


def concurrent_tool(tools: dict[str, Tool], call: dict) -> Tool | None:
    """The tool ``call`` names, able to run beside others; None if it must run alone.

    Read-only tools only (a call the guards answer themselves, as the lab's ``more``, may
    start too: its result is dropped). A tool bound to a sqlite3 connection gets a
    read-only connection of its own to the same file: one connection must not serve two
    threads at once (their statements, and the SQL record :func:`react_lab.tools.call_tool`
    keeps with a trace callback on the connection, would mix). A database with no file
    (``:memory:``) cannot be opened twice: None.
    """
    name = call.get("function", {}).get("name")
    tool = tools.get(name) if isinstance(name, str) else None
    if tool is None or tool.side_effect:
        return None
    conn = connection(tool)
    if conn is None:
        return tool
    path = conn.execute("PRAGMA database_list").fetchone()[2]
    if not path:
        return None
    fn = tool.fn
    return replace(tool, fn=functools.partial(fn.func, open_db(path), *fn.args[1:], **fn.keywords))


def start_call(tool: Tool, call: dict) -> Future:
    """Start ``call`` on ``tool`` in a daemon thread; the future holds its :class:`Observation`.

    The thread closes the tool's own connection when the call is done. A call that hangs
    is cut off by the guards' timeout while they wait for its result.
    """
    future: Future = Future()

    def work() -> None:
        try:
            future.set_result(execute_call({tool.name: tool}, call))
        except BaseException as exc:  # noqa: BLE001 -- a result at once, not a wait for the timeout
            failed = f"{tool.name} failed with {type(exc).__name__}: {exc}"
            future.set_result(Observation(f"Error: {failed}", error=failed))
        finally:
            own = connection(tool)
            if own is not None:
                own.close()

    threading.Thread(target=work, daemon=True, name=f"call-{tool.name}").start()
    return future


def _run_guarded(watch: Watch, tools: dict[str, Tool], call: dict,
                 started: Future | None = None) -> Observation:
    """Run one OpenAI-shaped call through the guards; the schema check runs inside them.

    The guards see the decoded arguments (the raw string if they are not JSON), so a
    repeat is a repeat however the model spaced its JSON. A call ``started`` already is
    not run again: the guards wait for its result (their timeout applies).
    """
    name = str(call.get("function", {}).get("name"))
    args = decode_arguments(call.get("function", {}).get("arguments", "{}"))
    run = (lambda t, n, a: started.result()) if started else (lambda t, n, a: execute_call(t, call))
    return watch.run_tool(tools, name, args, call=run)


# --------------------------------------------------------------------------- exemplars

def exemplar_messages(exemplars: Sequence[Exemplar], tools: dict[str, Tool]) -> list[dict]:
    """The native twin of the text protocol's exemplars: each one a past exchange, as messages.

    For each :class:`react_lab.protocol.Exemplar`: its question as a ``user`` message;
    each step as an ``assistant`` message (the thought in ``content``, the action in
    ``tool_calls`` with the id ``example_<exemplar>_<step>``) followed by its
    observation as a ``tool`` message keyed to that id; then the final thought and
    answer as an ``assistant`` message. An action's arguments are named by the tool's
    schema (``list_invoices[cus_4417, 2026-07-01]`` becomes ``{"customer_id": "cus_4417",
    "since": "2026-07-01"}``). Raises ValueError for an action naming no tool in ``tools``.
    """
    messages: list[dict] = []
    for i, ex in enumerate(exemplars, 1):
        messages.append({"role": "user", "content": ex.question})
        for j, (thought, action, observation) in enumerate(ex.steps, 1):
            parsed = parse(f"{ACTION}: {action}", tools=list(tools))
            if parsed.kind != "action":
                raise ValueError(f"exemplar {i}, step {j}: {action!r} is not a call of these tools "
                                 f"({parsed.reason})")
            args = parsed.args if isinstance(parsed.args, dict) else dict(
                zip(tools[parsed.tool].parameters["properties"], parsed.args))
            call = {"id": f"{EXAMPLE_ID}{i}_{j}", "type": "function",
                    "function": {"name": parsed.tool, "arguments": json.dumps(args, ensure_ascii=False)}}
            messages += [{"role": "assistant", "content": thought, "tool_calls": [call]},
                         {"role": "tool", "tool_call_id": call["id"], "content": observation}]
        messages.append({"role": "assistant", "content": ex.answer, "thought": ex.final_thought})
    return messages


def first_messages(question: str, tools: dict[str, Tool], *, system: str = SYSTEM,
                   notes: Sequence[str] = (), exemplars: Sequence[Exemplar] = ()) -> list[dict]:
    """The messages a native run starts from: the system turn (``system`` and ``notes``), the exemplars, the question."""
    return [{"role": "system", "content": "\n".join([system, *notes])},
            *exemplar_messages(exemplars, tools), {"role": "user", "content": question}]


# --------------------------------------------------------------------------- the native loop

def run_native(question: str, model, tools: dict[str, Tool], *, max_steps: int = MAX_STEPS,
               max_tokens: int = MAX_TOKENS, system: str = SYSTEM,
               approve: Callable[[str, dict], bool] | None = None,
               messages: list[dict] | None = None, guards: Guards | None = None,
               tool_choice: str | dict = "auto", exemplars: Sequence[Exemplar] = ()) -> Iterator[Step]:
    """Run the native tool-calling loop, yielding one :class:`Step` per model call.

    ``model`` is any chat backend with ``chat(messages, tools=, max_tokens=, tool_choice=)``
    (:mod:`react_lab.lab.backends.chat`). Pass a ``messages`` list to watch the conversation
    grow (it is filled in place). ``exemplars`` (:class:`react_lab.protocol.Exemplar`) are
    prepended as past exchanges (:func:`exemplar_messages`). ``tool_choice`` is sent
    until a call has run, then ``"auto"``, so a forced call cannot loop (:func:`check_tool_choice`).
    A step's ``action`` is ``{"tool", "args"}`` of its first call (plus ``"calls"``, all
    of them, when the reply made several); its ``observation`` is the results joined by newlines.

    The guards are the text loop's (:class:`react_lab.guards.Guards`; default: every limit
    on), at the same places; every call of a reply runs through them in call order, the
    read-only ones together (:func:`run_calls`). A rejected answer, a cut-off reply or a
    leaked call that cannot run (:func:`reply_calls`) goes back as a user message. A reply's
    text is read as the text parser reads it (:func:`react_lab.parser.read_reply`): reasoning
    (``<think>...</think>``, Harmony's analysis channel) is set aside into the step's
    ``reasoning`` and never runs or answers; Harmony's final channel is the answer; text that
    holds call markup or special tokens but no call is never the answer: the model is told
    what it wrote.
    ``approve``, when given, replaces ``guards.approve`` for this run (the caller's guards
    are not changed). When the step limit or a refusal guard ends the run and
    ``guards.best_effort`` is on, one more request with ``tool_choice="none"`` asks for an
    answer, labelled ``[best effort]``.
    """
    check_run_arguments("chat", model, tools, max_steps, max_tokens, question=question, tool_type=Tool)
    guards = guards if guards is not None else Guards()
    if approve is not None:
        guards = replace(guards, approve=approve)
    watch = guards.start(question)  # guard: this run's counters and clock start
    offered = guards.offered_tools(tools)  # guard: tools a guard adds, offered from the first step
    schemas = tool_schemas(offered)
    check_tool_choice(tool_choice, schemas)
    messages = messages if messages is not None else []
    if not messages:  # guard: prompt notes (data markers, citations) in the system turn
        messages += first_messages(question, offered, system=system, notes=guards.notes(),
                                   exemplars=exemplars)
    loop_said: list[str] = []  # the loop's own words to the model: its notes and error results
    for number in range(1, max_steps + 1):
        t0 = time.perf_counter()
        reply = model.chat(messages, tools=schemas, max_tokens=max_tokens, tool_choice=tool_choice)
        watch.spend(reply)  # guard: token and money budgets
        calls, leaked, problem = reply_calls(reply, offered)  # calls written in the text are never the answer
        messages.append({**reply.message(), **({"tool_calls": calls} if calls else {})})
        text = read_reply(reply.content, declared(offered)) if not reply.tool_calls else None
        step = Step.of(number, reply, thought=reply.thought, leaked=bool(leaked),
                       reasoning=text.reasoning if text else None)
        if calls:  # read-only calls together, the others one at a time, each through the guards
            observations = run_calls(watch, offered, calls)  # guard: refusals, approval, size
            messages += [{"role": "tool", "tool_call_id": c["id"], "content": o.text}
                         for c, o in zip(calls, observations)]
            record_calls(step, calls, observations)
            loop_said += [o.text for o in observations if o.error]
            tool_choice = "auto"  # a forced choice holds until a call has run
        elif reply.content is not None and not leaked and text.answer is None:  # markup, no call and no answer
            step.error = not_an_answer_message(text.saw)
            step.observation = f"Error: {step.error}"
        elif reply.content is not None and not leaked:
            rejected = watch.check_answer(text.answer)  # guard: answer checks (grounding)
            if rejected is None:
                step.answer = text.answer
            else:
                step.record(rejected)
        else:  # no call ran and no answer: a leaked call that cannot run, a cut-off reply
            step.error = problem or malformed_reply_message(reply, max_tokens)
            step.observation = f"Error: {step.error}" if problem else step.error
        if not calls and step.observation:  # what the loop refused goes back as a user message
            messages.append({"role": "user", "content": step.observation})
            loop_said.append(step.observation)
        if step.answer is None and compact_messages(messages, guards):  # guard: context size
            step.guard = step.guard or "compacted"
        ended = end_step(step, watch, number == max_steps, t0)  # guard: budgets, ignored refusals, step limit
        yield step
        if ended:
            if ended not in ("answer", *BUDGETS) and guards.best_effort:  # guard: best effort
                yield ask_best_effort_native(model, messages, watch, ended, number + 1, max_tokens,
                                             loop_said, tools=schemas)
            return


def reply_calls(reply: "ChatReply", tools: dict[str, Tool]) -> tuple[list[dict], list[dict], str | None]:
    """The calls to run for a reply: ``(calls, leaked, problem)``.

    A reply's ``tool_calls`` run as they are. A reply without them whose text holds a
    tool call (:func:`react_lab._parsing.leaks.leaked_calls`: a ``<tool_call>`` block, a
    ``{"name", "arguments"}`` object, a list of them, fenced or not) is never taken as
    the answer: when every leaked call names a declared tool with valid arguments they
    run as if they had come in ``tool_calls`` -- the model meant them; a server whose chat
    template missed the format is not the model's error -- and the step is marked
    ``leaked``; otherwise nothing runs and ``problem`` is what the model is told
    (:func:`leak_message`). A call inside a reasoning block is a draft, not a call
    (:func:`react_lab.parser.read_reply`).
    """
    if reply.tool_calls:
        return list(reply.tool_calls), [], None
    leaks = read_reply(reply.content, declared(tools)).calls  # none from inside reasoning
    leaked = [leak.call for leak in leaks]
    problems = [leak.describe() for leak in leaks if leak.problem] + leak_problems(tools, leaked)
    if leaked and problems:
        return [], leaked, leak_message(leaked, problems)
    return leaked, leaked, None


def declared(tools: dict[str, Tool]) -> dict[str, list[str]]:
    """Each tool's name and its declared parameters: what the leak reader checks a call's name against."""
    return {name: list(tool.parameters.get("properties", {})) for name, tool in tools.items()}


def not_an_answer_message(saw: str | None) -> str:
    """What the loop tells the model when a reply's text is not an answer (:func:`react_lab.parser.read_reply`)."""
    return (f"the reply's text is not an answer: it holds {saw or 'no answer'}. Nothing was run; send "
            "each call in the tool_calls field, or the answer as plain text")


def record_calls(step: Step, calls: Sequence[dict], observations: list[Observation]) -> None:
    """Write a turn's calls and results into its step: every call, every result, the first guard."""
    parsed = [{"id": c.get("id"), "tool": c["function"].get("name"),
               "args": decode_arguments(c["function"].get("arguments"))} for c in calls]
    step.action = {"tool": parsed[0]["tool"], "args": parsed[0]["args"]}
    if len(parsed) > 1:
        step.action["calls"] = parsed
    step.observation = "\n".join(o.text for o in observations)
    errors = [o.error for o in observations if o.error]
    step.error = "\n".join(errors) if errors else None
    step.guard = next((o.guard for o in observations if o.guard), None)
    step.tool_seconds = sum(o.seconds for o in observations)


def leak_problems(tools: dict[str, Tool], calls: Sequence[dict]) -> list[str]:
    """Why leaked ``calls`` cannot run: an unknown tool or invalid arguments, one message each ([] if none)."""
    problems = []
    for call in calls:
        name = call["function"]["name"]
        tool = tools.get(name)
        if tool is None:
            problems.append(unknown_tool_message(name, tools))
            continue
        problems += [f"{name}: {e}" for e in check_arguments(tool, call["function"]["arguments"])[1]]
    return problems


def leak_message(calls: Sequence[dict], problems: Sequence[str]) -> str:
    """What the loop tells the model when a call written in its text cannot run."""
    names = ", ".join(c["function"]["name"] for c in calls)
    return (f"the reply wrote a tool call ({names}) in its text, not in the tool-call field, "
            f"and it cannot run: {'; '.join(problems)}. Nothing was run; send each call in "
            "the tool_calls field, with a declared tool and valid arguments")


def malformed_reply_message(reply: "ChatReply", max_tokens: int) -> str:
    """What the loop tells the model when a reply has neither tool calls nor an answer."""
    if reply.finish_reason == "length":
        return (f"the reply was cut off after {reply.completion_tokens} tokens (max_tokens="
                f"{max_tokens}) before it was complete; reply with a shorter thought")
    return ('the reply had neither tool calls nor an answer; reply with {"thought": "...", '
            '"tool_calls": [{"name": "<a tool>", "arguments": {...}}]} or '
            '{"thought": "...", "answer": "..."}')


def ask_best_effort_native(model, messages: list[dict], watch: Watch, guard: str, number: int,
                           max_tokens: int, loop_said: Sequence[str] = (), *,
                           tools: Sequence[dict] = ()) -> Step:
    """Ask once, with tool calls not allowed (``tool_choice="none"``), for an answer from what the run found.

    ``tools`` are the schemas the run's steps offered: sent again with ``tool_choice="none"``
    (as the OpenAI API takes them), the request keeps the steps' system turn, so a local
    model reuses its cached prompt instead of evaluating the whole conversation again.
    The answer is labelled ``[best effort]``; a reply that still holds no answer (or
    only repeats the loop's own words: ``loop_said`` and this request) leaves the step's
    ``answer`` None and says so in ``error``. The reply's text is read as the steps' is
    (:func:`react_lab.parser.read_reply`): a call written in it, or markup, is no answer, and
    the error says what it was ("a Mistral tool call to create_file, a tool this agent does
    not have"); Harmony's final channel is the answer. The step's ``guard`` is the limit that
    ended the run.
    """
    t0 = time.perf_counter()
    request = BEST_EFFORT_REQUEST.format(guard=guard)
    messages.append({"role": "user", "content": request})
    reply = model.chat(messages, tools=list(tools), max_tokens=max_tokens, tool_choice="none")
    watch.spend(reply)
    messages.append(reply.message())
    names = {t["function"]["name"]: list(t["function"].get("parameters", {}).get("properties", {}))
             for t in tools if isinstance(t, dict) and "function" in t}  # each tool's parameters, as declared()
    text = read_reply(reply.content, names) if reply.content and not reply.tool_calls else None
    answer = (watch.best_effort_answer(text.answer, loop_said=[*loop_said, request])
              if text is not None and text.answer else None)
    saw = "tool calls, which are not allowed now" if reply.tool_calls else text.saw if text else None
    return best_effort_step(number, reply, guard, answer, t0, thought=reply.thought, saw=saw,
                            reasoning=text.reasoning if text else None)


def ask_native(question: str, model, tools: dict[str, Tool], **kwargs) -> RunResult:
    """Run :func:`run_native` to the end; return a :class:`react_lab.trace.RunResult`.

    The result's transcript shows the conversation by owner: system and user messages
    as ``prompt``, assistant replies as ``model``, tool results as ``loop``.
    """
    messages: list[dict] = []
    steps = list(run_native(question, model, tools, messages=messages, **kwargs))
    return RunResult.from_steps(question, steps, conversation(messages))


def conversation(messages: Sequence[dict]) -> Transcript:
    """Show a message list as a :class:`Transcript`, one line per message, owned by who wrote it.

    The prompt is the system message, the exemplars (:func:`exemplar_messages`: through
    the answer after the last ``example_`` tool result) and the question.
    """
    transcript = Transcript()
    examples = [i for i, m in enumerate(messages) if m["role"] == "tool"
                and str(m.get("tool_call_id", "")).startswith(EXAMPLE_ID)]
    if examples:  # the exemplars end with an answer; the question follows it
        head = min(len(messages), examples[-1] + 3)
    else:  # the system message and the question
        head = 0
        while head < len(messages) and messages[head]["role"] in ("system", "user") and head < 2:
            head += 1
    lines = []
    for m in messages[:head]:
        role, content = m["role"], m.get("content")
        lines.append(f"system: {content}\n" if role == "system" else f"Question: {content}\n"
                     if role == "user" else f"example {role}: "
                     f"{assistant_json(m) if role == 'assistant' else content}\n")
    transcript.add("prompt", "".join(lines))
    for msg in messages[head:]:
        role, content = msg["role"], msg.get("content")
        if role == "assistant":
            transcript.add("model", f"assistant: {assistant_json(msg)}\n")
        elif role == "tool":
            transcript.add("loop", f"tool[{msg.get('tool_call_id')}]: {content}\n")
        else:  # later user messages are the loop's notes to the model
            transcript.add("loop", f"{role}: {content}\n")
    return transcript

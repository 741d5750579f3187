"""Reference solutions to the notebook exercises: the one place they live.

Instructors: CI runs every notebook with these filled in (``REACT_LAB_SOLUTIONS=1``).
Learners: try the exercise first; each solution is a few lines.

The core path's pieces come first, in notebook order. They call each other by name
(``run_loop`` calls ``observe``), so when
:func:`react_lab.lab.notebook.agent_file.load_agent` puts one into a learner's agent it
calls the learner's other pieces. An *edit* exercise changes an earlier piece: its
reference is the whole piece after the edit, under the exercise's name here
(``run_loop_stop``) and under the piece's name (``run_loop``) in the learner's file.
"""

from __future__ import annotations

import json
import re

import jsonschema

from ...protocol import ACTION_RE, ANSWER_RE, STOP, build_prompt
from ...tool_calls import first_messages, reply_calls
from ...tools import call_tool, tool_schemas
from .native_turn import tool_messages


# Notebook 01: one completion by hand.
def observe(text, tools):
    """Run the completion's action; return what the loop appends: Observation, next Thought."""
    match = ACTION_RE.search(text)  # anchored: only a line that starts with "Action:"
    if match is None:
        return "\nObservation: Error: no action line; write Action: tool_name[arguments]\nThought:"
    name, args = match.group(1), [arg.strip() for arg in match.group(2).split(",")]
    return f"\nObservation: {call_tool(tools, name, args).text}\nThought:"


# Notebook 02: the loop.
def run_loop(question, model, tools, exemplars=None, max_steps=6):
    """Run the text-protocol loop; return (answer or None, transcript)."""
    transcript = build_prompt(question, tools.values(), exemplars)
    for _ in range(max_steps):
        # send the whole transcript; the stop sequence cuts the completion before an Observation
        text = model.complete(transcript, stop=STOP, max_tokens=128).text
        transcript += text
        if answer := ANSWER_RE.search(text):  # stop on an answer: a line that starts Answer:
            return answer.group(1).strip(), transcript
        transcript += observe(text, tools)  # the loop, not the model, writes the Observation
    return None, transcript


# Notebook 03 (edit of run_loop): the stop sequence becomes a parameter, so it can be switched off.
def run_loop_stop(question, model, tools, exemplars=None, max_steps=6, stop=STOP):
    """Run the text-protocol loop, sending ``stop`` on each call; return (answer, transcript)."""
    transcript = build_prompt(question, tools.values(), exemplars)
    for _ in range(max_steps):
        # send the whole transcript; the stop sequence cuts the completion before an Observation
        text = model.complete(transcript, stop=stop, max_tokens=128).text
        transcript += text
        if answer := ANSWER_RE.search(text):  # stop on an answer: a line that starts Answer:
            return answer.group(1).strip(), transcript
        transcript += observe(text, tools)  # the loop, not the model, writes the Observation
    return None, transcript


# Notebook 03: the model wrote an Observation of its own.
def is_forged(text):
    """True if a line of the completion starts with ``Observation`` (a forged observation)."""
    return re.search(r"^Observation", text, re.MULTILINE) is not None


# Notebook 04 (edit of observe): the JSON Schema check, inline; a call it refuses does not run.
def observe_args(text, tools):
    """Run the completion's action if the tool's schema passes its arguments; return the text."""
    match = ACTION_RE.search(text)  # anchored: only a line that starts with "Action:"
    if match is None:
        return "\nObservation: Error: no action line; write Action: tool_name[arguments]\nThought:"
    name, args = match.group(1), [arg.strip() for arg in match.group(2).split(",")]
    schema = tools[name].parameters if name in tools else {}  # an unknown tool: call_tool says so
    named = dict(zip(schema.get("properties", ()), args))  # {"customer_id": "cus_8812", ...}
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    errors = [error.message for error in validator.iter_errors(named)]  # "format" checked too
    if errors:  # the tool does not run; the model reads why
        return f"\nObservation: Error: {name} was not run: {'; '.join(errors)}\nThought:"
    return f"\nObservation: {call_tool(tools, name, args).text}\nThought:"


# Notebook 05: what one step of a run costs.
def prompt_tokens_at_step(P: int, O: int, A: int, k: int) -> int:
    """The prefix once, plus every earlier step's assistant text and observation."""
    return P + (k - 1) * (A + O)


# Notebook 06 (edit of run_loop): refuse a repeated call; after the last step, a best effort.
def run_loop_guards(question, model, tools, exemplars=None, max_steps=6, stop=STOP):
    """Run the text-protocol loop with two guards; return (answer or None, transcript)."""
    transcript = build_prompt(question, tools.values(), exemplars)
    calls = []  # guard 1: the (tool, arguments) of every call that ran
    for _ in range(max_steps):
        # send the whole transcript; the stop sequence cuts the completion before an Observation
        text = model.complete(transcript, stop=stop, max_tokens=128).text
        transcript += text
        if answer := ANSWER_RE.search(text):  # stop on an answer: a line that starts Answer:
            return answer.group(1).strip(), transcript
        if (call := ACTION_RE.search(text)) and call.groups() in calls:  # the same call again
            transcript += "\nObservation: Error: that call already ran; see above.\nThought:"
        else:
            transcript += observe(text, tools)  # the loop, not the model, writes the Observation
            calls.append(call and call.groups())
    # guard 2: the steps ran out, so ask once more for an answer, and label it
    final = model.complete(transcript + " I must answer now.\nAnswer:", stop=stop, max_tokens=128)
    return "[best effort] " + final.text.strip().split("\n")[0], transcript


# Notebook 07 (edit of run_loop, mostly by deleting): native tool calls.
def run_native(question, model, tools, exemplars=None, max_steps=6):
    """Run the native tool-calling loop; return (answer or None, messages)."""
    # exemplars: past messages
    messages = first_messages(question, tools, exemplars=exemplars or ())
    for _ in range(max_steps):
        # the tool schemas go with every request; no stop sequence: a reply ends by its structure
        reply = model.chat(messages, tools=tool_schemas(tools), max_tokens=128)
        # its tool_calls, or a call leaked into its text
        calls, _, problem = reply_calls(reply, tools)
        if not calls and not problem:  # no call: the answer
            return reply.content, messages + [reply.message()]
        messages += tool_messages(reply, tools)  # the reply, then one tool message per call
    return None, messages


# Notebook 08: a retrieved exemplar.
def pick_exemplar(question, pool):
    """Return the pool's exemplar whose question shares the most words with ``question``."""
    words = set(question.lower().split())
    return max(pool, key=lambda exemplar: len(words & set(exemplar.question.lower().split())))


# --------------------------------------------------------------------------- the bench's exercises


def is_repeat(calls, name, args):
    """Bench notebook 06: True if the same tool already ran with the same arguments."""
    return (name, args) in calls


def parse_action(text: str):
    """Bench notebook 01: the anchored action line as (tool, [args]), or None."""
    match = ACTION_RE.search(text)
    if match is None:
        return None
    return match.group(1), [a.strip() for a in match.group(2).split(",")]


def dispatch(tools: dict, name: str, args: list) -> str:
    """Bench notebook 02: run the tool by name.

    Unknown tools and errors become text naming the tool.
    """
    if name not in tools:
        return f"Error: unknown tool {name!r}; available: {', '.join(tools)}"
    try:
        return json.dumps(tools[name].fn(*args), default=str)
    except Exception as exc:
        return f"Error: {name} failed: {type(exc).__name__}: {exc}"


def cut_forgery(text: str) -> str:
    """Bench notebook 03: cut at the first line starting with 'Observation'.

    Then trim a partial stop word at the end.
    """
    match = re.search(r"^Observation", text, re.MULTILINE)
    if match:
        text = text[: match.start()]
    head, newline, last = text.rpartition("\n")
    if newline and last and "Observation".startswith(last):
        text = head + newline
    return text


def missing_fields(schema: dict, args: dict) -> list:
    """Bench notebook 04: what JSON Schema's ``required`` keyword reports, by hand."""
    return [name for name in schema.get("required", []) if name not in args]


def truncate_observation(text: str, max_chars: int) -> str:
    """Bench notebook 07: cut to a budget and say so, so the model knows there was more."""
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]} ...[truncated {len(text) - max_chars} characters]"


def normalise_amount(text: str):
    """Notebook 08: the first number in the text, thousands separators dropped, as dollars."""
    match = re.search(r"\d[\d,]*(?:\.\d+)?", text)
    return float(match.group(0).replace(",", "")) if match else None

"""The core path's exercises: the pieces of the learner's agent, notebook by notebook.

Each :class:`Exercise` is a piece the learner types (or an edit of an earlier piece), the
rules its checker holds it to, numbered and named as the notebook states them, and the
cases that check them on scripted models. The pieces call each other by name, as the
learner's file does: ``run_loop`` appends what ``observe(text, tools)`` returns. A checker
watches those calls (:func:`react_lab.workshop.cases.spying`), so each piece is checked on
its own: a loop is not blamed for its ``observe``.

=================  ====  ==========================================================
exercise           nb    piece
=================  ====  ==========================================================
observe            01    ``observe(text, tools) -> str``
run_loop           02    ``run_loop(question, model, tools, exemplars=None, max_steps=6)``
run_loop_stop      03    edit of ``run_loop``: ``stop=STOP`` a parameter
is_forged          03    ``is_forged(text) -> bool``
observe_args       04    edit of ``observe``: a call its tool's JSON Schema refuses does not run
prompt_tokens...   05    ``prompt_tokens_at_step(P, O, A, k) -> int``
run_loop_guards    06    edit of ``run_loop``: refuse a repeat, a labelled best effort at the end
run_native         07    edit of ``run_loop``, mostly deleting: native tool calls
pick_exemplar      08    ``pick_exemplar(question, pool) -> Exemplar``
=================  ====  ==========================================================
"""

from __future__ import annotations

import ast
import difflib
import inspect
import io
import json
import re
import textwrap
import tokenize
from dataclasses import dataclass
from typing import Any, Callable

from ..protocol import ACTION_RE, ANSWER_RE, EXEMPLARS, STOP, Exemplar, build_prompt
from ..tools import call_tool, default_tools, tool_schemas
from .cases import (
    Case,
    RecordingChatModel,
    RecordingModel,
    broke,
    namespaces,
    rule_of,
    spying,
    watching_call_tool,
)


@dataclass(frozen=True)
class Exercise:
    """One exercise of the core path.

    ``piece`` is the function's name in the learner's file (an edit exercise changes an
    earlier exercise's piece, named by ``edits``); ``task`` says what to write, in one
    line; ``rules`` are numbered as the notebook states them; ``cases()`` builds the
    checker's cases; ``stub`` is the exercise cell a notebook starts from;
    ``lines_written`` is, for an edit, how many lines the learner writes (a test checks it
    against the difference of the two reference pieces); ``uses`` names the pieces it calls.
    """

    name: str
    piece: str
    notebook: int
    task: str
    rules: dict[int, str]
    cases: Callable[[], list[Case]]
    stub: str
    edits: str | None = None
    lines_written: int | None = None
    uses: tuple[str, ...] = ()


#: A case runs the function with its defaults (no ``stop`` argument).
DEFAULT = object()
#: The loop's ``max_tokens`` on every call.
LOOP_MAX_TOKENS = 128
QUESTION = "Has supplier invoice INV-2291 been paid?"
JULY = "What were the July invoices of cus_8812?"


def _tools():
    return default_tools()


def _observation(tools, name: str, args: list) -> str:
    """What the loop appends after a completion whose action is ``name[args]``."""
    return f"\nObservation: {call_tool(tools, name, args).text}\nThought:"


# --------------------------------------------------------------------------- 01 observe

OBSERVE_RULES = {
    1: "the action line",
    2: "split the arguments",
    3: "run the tool",
    4: "the observation's shape",
    5: "no action line",
}
OBSERVE_ARGS_RULES = {
    **OBSERVE_RULES,
    6: "name the arguments",
    7: "validate before running",
    8: "the errors are the observation",
}


def _observe_case(
    rules, rule: int, text: str, call: tuple[str, list] | None, *, refused: bool = False
) -> Case:
    """``observe(text, tools)``: the call it must run (None: none), and the text it must return."""
    tools, seen = _tools(), []
    head, tail = "\nObservation: ", "\nThought:"

    def verify(got):
        if not isinstance(got, str):
            return broke(
                rules,
                4,
                f"returned {got!r:.60}; return the text the loop appends, "
                "'\\nObservation: <result>\\nThought:'",
            )
        if call and not refused:
            name, args = call
            if seen and seen[0][0] != name:
                return broke(
                    rules,
                    1,
                    f"ran {seen[0][0]!r}; the action is on the line that starts "
                    f"with 'Action:' (ACTION_RE), which names {name!r}",
                )
            if seen and seen[0][1] != args:
                return broke(
                    rules,
                    2,
                    f"passed call_tool the arguments {seen[0][1]!r}; split the "
                    "text in the brackets on commas and strip each piece: "
                    f"{args!r}",
                )
            if len(seen) > 1:
                return broke(rules, 3, f"ran {len(seen)} tools; run the one the action names, once")
        if not (got.startswith(head) and got.endswith(tail)) or len(got) < len(head + tail):
            return broke(
                rules,
                4,
                f"returned {got[:50]!r}...; start it with '\\nObservation: ' "
                "and end it with '\\nThought:', the label the model continues "
                "from",
            )
        said = got[len(head) : len(got) - len(tail)]
        if refused:
            return _refusal_wrong(rules, tools, text, said, seen)
        if call is None:
            if seen:
                return broke(rules, 5, f"ran {seen[0][0]!r} for a completion with no action line")
            return (
                None
                if said.strip()
                else broke(
                    rules,
                    5,
                    "returned an empty observation for a completion with no action line; say so",
                )
            )
        want = call_tool(tools, *call).text
        if said != want and not seen and 6 in rules:
            return broke(
                rules,
                6,
                f"did not run {call[0]} for a call its schema accepts (wrote "
                f"{said[:60]!r}); name each argument by the schema's property "
                "order, dict(zip(schema['properties'], args)), and validate that",
            )
        if said != want:
            return broke(
                rules,
                3,
                f"wrote the observation {said[:60]!r}; expected what call_tool "
                f"returns, call_tool(tools, name, args).text: {want[:60]!r}",
            )
        return None

    def around(fn):
        return watching_call_tool(fn, seen)

    return Case(
        (text, tools), verify, shown=f"{text!r}, tools", rule=rule_of(rules, rule), around=around
    )


def _schema_errors(tools, text: str) -> list[str]:
    """The JSON Schema's messages for the action in ``text``, its arguments named in order."""
    import jsonschema

    match = ACTION_RE.search(text)
    name, args = match.group(1), [a.strip() for a in match.group(2).split(",")]
    schema = tools[name].parameters
    named = dict(zip(schema["properties"], args))
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    return [e.message for e in validator.iter_errors(named)]


#: jsonschema's message for a value of the wrong format ("'2026-13-45' is not a 'date'").
_FORMAT_ERROR = re.compile(r"is not a '[\w-]+'$")
FORMAT_HINT = (
    "jsonschema checks a format only when given a checker: "
    "Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())"
)


def _refusal_wrong(rules, tools, text: str, said: str, seen: list) -> str | None:
    """Rules 7 and 8: a call the schema refuses does not run; every error is in the observation."""
    errors = _schema_errors(tools, text)
    match = ACTION_RE.search(text)
    name, args = match.group(1), [a.strip() for a in match.group(2).split(",")]
    formats = [e for e in errors if _FORMAT_ERROR.search(e)]
    if seen or said == call_tool(tools, name, args).text:
        how = (
            FORMAT_HINT
            if errors == formats
            else "validate first, and return the errors instead of running it"
        )
        return broke(
            rules, 7, f"ran {name} although its schema refuses the call ({errors[0]!r}); {how}"
        )
    missing = [e for e in errors if e not in said]
    if missing and all(e in formats for e in missing):
        return broke(rules, 7, f"left out the schema's error {missing[0]!r}; {FORMAT_HINT}")
    if missing:
        return broke(
            rules,
            8,
            f"wrote the observation {said[:60]!r}, which leaves out the "
            f"schema's error {missing[0]!r}; put every error.message in it "
            "(iter_errors gives them all)",
        )
    return None


def _observe_cases(rules) -> list[Case]:
    cases = [
        _observe_case(
            rules,
            1,
            " I could write Action: search[refunds] here.\n"
            "Action: list_invoices[cus_8812, 2026-07-01]",
            ("list_invoices", ["cus_8812", "2026-07-01"]),
        ),
        _observe_case(
            rules,
            2,
            " I list them.\nAction: list_invoices[ cus_8812 ,2026-07-01 ]",
            ("list_invoices", ["cus_8812", "2026-07-01"]),
        ),
        _observe_case(
            rules,
            3,
            " I look it up.\nAction: lookup_invoice[INV-2291]",
            ("lookup_invoice", ["INV-2291"]),
        ),
        _observe_case(
            rules,
            4,
            " I look at the invoice first.\nAction: find_invoice[INV-2291]\n",
            ("find_invoice", ["INV-2291"]),
        ),
        _observe_case(rules, 5, " I am not sure what to do.", None),
    ]
    if 8 in rules:  # the checked observe: a valid call still runs; the schema's refusals do not
        cases += [
            _observe_case(
                rules,
                6,
                " I check the charge.\nAction: get_charge[ch_1KZq8f]",
                ("get_charge", ["ch_1KZq8f"]),
            ),
            _observe_case(
                rules, 7, " I list.\nAction: list_invoices[cus_8812, July 1st]", None, refused=True
            ),
            # the right shape, no such day: only the schema's "format": "date" refuses it
            _observe_case(
                rules,
                7,
                " I list.\nAction: list_invoices[cus_8812, 2026-13-45]",
                None,
                refused=True,
            ),
            # the embedded model's own: a charge id written into the customer slot
            _observe_case(
                rules,
                7,
                " I need the invoice of charge_ch_3c4r9n.\n"
                "Action: list_invoices[cus_3c4r9n, 2026-07-14]",
                None,
                refused=True,
            ),
            _observe_case(
                rules, 8, " I list them.\nAction: list_invoices[cus_8812]", None, refused=True
            ),
            _observe_case(
                rules,
                8,
                " I list them.\nAction: list_invoices[cus_8812 2026-07-01]",
                None,
                refused=True,
            ),
        ]
    return cases


# --------------------------------------------------------------------------- 02, 03, 06 the loop

LOOP_RULES = {
    1: "start",
    2: "send and append",
    3: "stop on an answer",
    4: "observe",
    5: "step limit",
}
STOP_RULES = {**LOOP_RULES, 6: "stop as a parameter"}
GUARD_RULES = {**STOP_RULES, 7: "refuse a repeat", 8: "best effort"}
#: The loop's run ends at its step limit, not on an answer.
LIMIT = object()


def _loop_case(
    rules,
    rule: int,
    question: str,
    script: list[str],
    *,
    answer: Any,
    steps: int,
    hint: str = "",
    exemplars=None,
    max_steps: int = 6,
    stop: Any = DEFAULT,
) -> Case:
    """One run of the learner's loop on a scripted model, every rule checked on it.

    ``answer``: what the loop must return (:data:`LIMIT`: the run hits its step limit);
    ``steps``: how many model calls the loop's steps must make (``hint`` says why). A
    guarded loop (rule 8) at its limit makes one call more: its best effort.
    """
    tools, model = _tools(), RecordingModel(script)
    observed, state = [], {}
    guarded, sent_stop = 8 in rules, STOP if stop is DEFAULT else stop
    kwargs = {
        "exemplars": exemplars,
        "max_steps": max_steps,
        **({} if stop is DEFAULT else {"stop": stop}),
    }

    def verify(got):
        if not (isinstance(got, tuple) and len(got) == 2 and isinstance(got[1], str)):
            return f"returned {got!r:.80}; expected a pair (answer or None, transcript)"
        returned, transcript = got
        made, run = model.calls, transcript
        if guarded and answer is LIMIT and model.calls == steps + 1:  # the last call: best effort
            made, run = steps, _run_end(model, steps) or transcript
        elif guarded and model.calls > steps and model.prompts[-1].rstrip(" ").endswith("Answer:"):
            return broke(
                rules,
                8,
                "asked for a best effort although the model answered; ask only after the last step",
            )
        return (
            _sent_wrong(
                rules,
                model,
                made,
                build_prompt(question, tools.values(), exemplars),
                sent_stop,
                stop is not DEFAULT,
            )
            or _steps_wrong(rules, model, made, run, observed, tools, state)
            or (
                None
                if made == steps
                else broke(
                    rules,
                    rule,
                    f"made {made} model call{'s' * (made != 1)}; expected {steps}{hint}",
                )
            )
            or _end_wrong(rules, returned, transcript, answer, model, guarded, steps, sent_stop)
        )

    def around(fn):
        spaces = namespaces(fn)
        state["observe"] = any(callable(space.get("observe")) for space in spaces)
        return spying(spaces, "observe", observed)

    shown = (
        f"{question!r}, scripted model, tools"
        + (f", max_steps={max_steps}" if max_steps != 6 else "")
        + (", exemplars=[EXEMPLARS[1]]" if exemplars else "")
        + (f", stop={stop!r}" if stop is not DEFAULT else "")
    )
    return Case(
        (question, model, tools),
        verify,
        kwargs=kwargs,
        shown=shown,
        rule=rule_of(rules, rule),
        around=around,
    )


def _sent_wrong(rules, model, made: int, first: str, stop, stop_passed: bool) -> str | None:
    """Rules 1, 2 and 6 on what went out: the first prompt, each step's ``stop``, ``max_tokens``."""
    if not model.prompts:
        return broke(rules, 2, "never called model.complete")
    if model.prompts[0] != first:
        return broke(
            rules,
            1,
            "the first prompt the model received is not "
            "build_prompt(question, tools.values(), exemplars)",
        )
    for sent, max_tokens in model.sent[:made]:
        if sent != stop:
            rule = 6 if stop_passed else 2
            said = (
                "pass the loop's stop to model.complete"
                if stop_passed
                else "send stop=STOP on every call"
            )
            return broke(
                rules, rule, f"sent stop={sent!r} where the run asked for {stop!r}; {said}"
            )
        if max_tokens != LOOP_MAX_TOKENS:
            return broke(
                rules,
                2,
                f"sent max_tokens={max_tokens!r}; send max_tokens={LOOP_MAX_TOKENS} on every call",
            )
    return None


def _steps_wrong(
    rules, model, made: int, transcript: str, observed: list, tools, state
) -> str | None:
    """Rules 2, 3, 4 and 7 on each step: the next prompt is this one, the text, the observation."""
    head, tail = "\nObservation: ", "\nThought:"
    afters = model.prompts[1:made] + [transcript]
    ran: list[tuple[str, str]] = []
    used = 0  # observe calls matched to a step so far
    steps = zip(model.prompts, model.texts[:made], afters)
    for number, (before, text, after) in enumerate(steps, 1):
        last = number == made
        if not after.startswith(before):
            return (
                broke(rules, 5, "returned a transcript that is not the whole run")
                if last
                else broke(
                    rules,
                    2,
                    "sent a prompt that is not the whole transcript so far (each "
                    "prompt must extend the last)",
                )
            )
        if not after.startswith(before + text):
            return broke(
                rules,
                2,
                f"did not append the completion's text as it is ({text!r}: keep "
                "every space and newline)",
            )
        if "Answer:" in text and not ANSWER_RE.search(text) and last:
            return broke(
                rules,
                3,
                f"stopped after {text!r}: its 'Answer:' does not start a line, so it is no "
                "answer; look for a line that starts with it, ANSWER_RE.search(text)",
            )
        if ANSWER_RE.search(text):
            if not last:
                return broke(
                    rules,
                    3,
                    f"went on after {text!r}, which has a line starting 'Answer:'; look "
                    "for it before anything else",
                )
            if after != before + text:
                return broke(
                    rules,
                    3,
                    "returned a transcript that is not the last prompt plus the "
                    "answer's completion",
                )
            return None
        written = after[len(before + text) :]
        match = ACTION_RE.search(text)
        if 7 in rules and match and match.groups() in ran:
            shaped = written.startswith(head) and written.endswith(tail)
            if not shaped or len(written) <= len(head + tail):
                return broke(
                    rules,
                    7,
                    f"appended {written[:50]!r} after a repeated call; write an "
                    "Observation saying it already ran ('\\nObservation: "
                    "...\\nThought:')",
                )
            args = [a.strip() for a in match.group(2).split(",")]
            # observe ran the repeat too, whatever was appended
            calls = [list(c[0]) + list(c[1].values()) for c in observed[used:]]
            if any(call and call[0] == text for call in calls):
                return broke(
                    rules,
                    7,
                    f"refused {match.group(0).strip()!r} and also passed it to observe, "
                    "which ran it again; a refused repeat runs nothing",
                )
            if written == _observation(tools, match.group(1), args):
                return broke(
                    rules,
                    7,
                    f"ran {match.group(0).strip()!r} again; the same tool with "
                    "the same arguments already ran: refuse it instead",
                )
            continue
        given = [list(c[0]) + list(c[1].values()) for c in observed[used:]]
        found = next((i for i, g in enumerate(given) if g and g[0] == text), None)
        if found is None:
            if 7 in rules and match and any(name == match.group(1) for name, _ in ran):
                return broke(
                    rules,
                    7,
                    f"refused {match.group(0).strip()!r}, which is no repeat: "
                    "the same tool with other arguments runs (a repeat is "
                    "the same tool and the same arguments)",
                )
            if given and given[0]:
                return broke(
                    rules,
                    4,
                    f"called observe with {given[0][0]!r:.60}; pass it the "
                    f"completion's text, {text!r:.60}",
                )
            where = (
                ""
                if state.get("observe")
                else (
                    " (observe is not defined where run_loop is: run the cells that load your "
                    "agent first)"
                )
            )
            return broke(
                rules,
                4,
                f"appended {written[:40]!r}... without calling observe(text, "
                f"tools){where}; append what observe returns",
            )
        used += found + 1
        said = observed[used - 1][2]
        if written != said:
            return broke(
                rules,
                4,
                f"appended {written[:50]!r} after the completion; append "
                "exactly what observe(text, tools) returned, "
                f"{str(said)[:50]!r}",
            )
        if match:
            ran.append(match.groups())
    return None


def _run_end(model, steps: int) -> str | None:
    """The transcript a guarded run had after its last step: its best effort's prompt, no nudge.

    The last step's observation ends with ``\nThought:``; what the best effort sent after it
    is the nudge. None when the best effort's prompt does not go on from the last step.
    """
    final, head = model.prompts[steps], model.prompts[steps - 1] + model.texts[steps - 1]
    at = final.find("\nThought:", len(head)) if final.startswith(head) else -1
    return final[: at + len("\nThought:")] if at >= 0 else None


def _end_wrong(
    rules, returned, transcript: str, answer, model, guarded: bool, steps: int, stop
) -> str | None:
    """Rules 3, 5 and 8 on how the run ended: the answer, None at the limit, the best effort."""
    if answer is not LIMIT:
        return (
            None
            if returned == answer
            else broke(
                rules,
                3,
                f"returned the answer {returned!r}; expected {answer!r} (the rest of the "
                "answer's line)",
            )
        )
    if not guarded:
        return (
            None
            if returned is None
            else broke(
                rules,
                5,
                f"returned {returned!r} at the step limit; return None when the steps run out",
            )
        )
    if model.calls == steps:
        return broke(
            rules,
            8,
            "returned at the step limit without asking once more; send the "
            "transcript and a closing nudge that ends in 'Answer:'",
        )
    run = _run_end(model, steps)
    nudge = model.prompts[steps][len(run) :] if run else ""
    if run is None or not transcript.startswith(run):
        return broke(
            rules,
            8,
            "the best effort's prompt is not the run's transcript and a nudge; "
            "send transcript + a closing nudge ending in 'Answer:'",
        )
    if not nudge.rstrip(" ").endswith("Answer:"):
        return broke(
            rules,
            8,
            f"sent {nudge[-50:]!r} after the transcript; end the nudge with "
            "'Answer:', so the model writes the answer",
        )
    if len(nudge.replace("Answer:", " ").split()) < 2:
        return broke(
            rules,
            8,
            f"sent only {nudge!r}; first a closing thought: the steps ran out, so answer now",
        )
    if model.sent[steps][0] != stop:
        return broke(
            rules,
            8,
            f"sent stop={model.sent[steps][0]!r} for the best effort; send the "
            "loop's stop, so the model cannot start another step",
        )
    want = "[best effort] " + model.texts[steps].strip().split("\n")[0]
    if returned != want:
        return broke(
            rules,
            8,
            f"returned {returned!r}; expected {want!r}: '[best effort] ' and "
            "the first line of the reply",
        )
    return None


def _loop_cases(rules) -> list[Case]:
    """The loop exercise's runs, one per rule, on a scripted model that honours ``stop``."""
    q, limit = QUESTION, LIMIT
    forged = (
        ' I check.\nAction: get_payments[INV-2291]\nObservation: {"payments": [{"amount": '
        "48200}]}\nThought: It was paid.\nAnswer: Yes, INV-2291 was paid."
    )
    cases = [
        _loop_case(
            rules,
            1,
            q,
            [
                " I look at the invoice first.\nAction: find_invoice[INV-2291]",
                " It is approved; now its payments.\nAction: get_payments[INV-2291]",
                " There are no payments.\nAnswer: No. INV-2291 has no payments.",
            ],
            exemplars=[EXEMPLARS[1]],
            answer="No. INV-2291 has no payments.",
            steps=3,
        ),
        # The stop sequence cuts the forged observation; the spaces round the text stay in.
        _loop_case(
            rules,
            2,
            q,
            [
                "  " + forged.replace("]\n", "]  \n", 1),
                " There are none.\nAnswer: No. INV-2291 has no payments.\n",
            ],
            answer="No. INV-2291 has no payments.",
            steps=2,
        ),
        _loop_case(
            rules,
            3,
            q,
            [
                " I know it.\nAction: find_invoice[INV-2291]\n"
                "Answer:  No, it is not paid.  \n\nQuestion: Was INV-2323 paid?"
            ],
            answer="No, it is not paid.",
            steps=1,
            hint=" (an answer ends the run, even beside an action)",
        ),
        _loop_case(
            rules,
            3,
            q,
            [
                " I think the Answer: is unclear.\nAction: find_invoice[INV-2291]",
                " Approved, unpaid.\nAnswer: No.",
            ],
            answer="No.",
            steps=2,
            hint=" (an 'Answer:' inside a line is not the answer: it starts its own line)",
        ),
        _loop_case(
            rules,
            4,
            JULY,
            [
                " I am not sure what to do.",
                " I list them.\nAction: list_invoices[cus_8812]",
                " A date.\nAction: list_invoices[cus_8812, 2026-07-01]",
                " Done.\nAnswer: two",
            ],
            answer="two",
            steps=4,
            hint=" (every completion without an answer gets an observation, and the loop goes on)",
        ),
        _loop_case(
            rules,
            5,
            q,
            [" Again.\nAction: find_invoice[INV-2291]"],
            max_steps=3,
            answer=limit,
            steps=3,
            hint=" (max_steps=3: stop after that many model calls)",
        ),
    ]
    if 6 in rules:
        cases.append(
            _loop_case(
                rules,
                6,
                q,
                [forged],
                stop=None,
                answer="Yes, INV-2291 was paid.",
                steps=1,
                hint=" (stop=None: nothing cuts the forged observation; its answer ends the run)",
            )
        )
    if 7 in rules:
        cases.append(
            _loop_case(
                rules,
                7,
                q,
                [
                    " I look at the invoice.\nAction: find_invoice[INV-2291]",
                    " I look again.\nAction: find_invoice[INV-2291]",
                    " Now its payments.\nAction: get_payments[INV-2291]",
                    " There are none.\nAnswer: No, INV-2291 is not paid.",
                ],
                answer="No, INV-2291 is not paid.",
                steps=4,
                hint=" (a refused repeat is a step like any other)",
            )
        )
    if 8 in rules:
        cases.append(
            _loop_case(
                rules,
                8,
                q,
                [
                    " I look at the invoice.\nAction: find_invoice[INV-2291]",
                    " Now its payments.\nAction: get_payments[INV-2291]",
                    " It has no payments, so it is not paid.\n",
                ],
                max_steps=2,
                answer=limit,
                steps=2,
                hint=" (max_steps=2, then one best effort)",
            )
        )
    return cases


# --------------------------------------------------------------------------- 03 is_forged

FORGED_RULES = {
    1: "a line that starts with Observation",
    2: "only at a line start",
    3: "True or False",
}


def _bool_case(rules, rule: int, args: tuple, want: bool, why: str) -> Case:
    def verify(got):
        if not isinstance(got, bool):
            rule_broken = 3 if 3 in rules else rule
            return broke(
                rules,
                rule_broken,
                f"returned {got!r:.60}; return True or False (bool(...) turns a match into one)",
            )
        return (
            None if got == want else broke(rules, rule, f"returned {got}; expected {want} ({why})")
        )

    return Case(args, verify, rule=rule_of(rules, rule))


def _forged_cases() -> list[Case]:
    r = FORGED_RULES
    return [
        _bool_case(
            r,
            1,
            ('Action: get_payments[INV-2291]\nObservation: {"payments": []}\nAnswer: No',),
            True,
            "its second line starts with Observation",
        ),
        _bool_case(r, 1, ("Observation: fake",), True, "the first line counts too"),
        _bool_case(
            r,
            1,
            (" I check.\nAction: find_invoice[INV-2291]\nObservation 2: {}",),
            True,
            "a numbered label is still the label",
        ),
        _bool_case(
            r,
            2,
            ("The observation: fine\nAction: find_invoice[INV-2291]",),
            False,
            "no line starts with Observation",
        ),
        _bool_case(
            r,
            2,
            (" I wait for the Observation.\nAction: find_invoice[INV-2291]",),
            False,
            "the word inside a line is not the label",
        ),
        _bool_case(r, 2, (" I look.\nAction: find_invoice[INV-2291]",), False, "nothing forged"),
    ]


# ---------------------------------------------------------------- 05, bench 06 small functions

TOKENS_RULES = {1: "the prefix once", 2: "each earlier step adds A + O", 3: "an int"}
#: Bench notebook 06's exercise (the core path's repeat guard is inline in run_loop_guards).
REPEAT_RULES = {1: "the same call", 2: "another tool or other arguments"}


def _tokens_case(rule: int, args: tuple, want: int, note: str = "") -> Case:
    """``prompt_tokens_at_step(*args)`` is ``want``, as an int (rule 3: tokens come whole)."""
    r = TOKENS_RULES

    def verify(got):
        if got != want:
            return broke(
                r, rule, f"returned {got!r:.60}; expected {want!r}" + (f" ({note})" if note else "")
            )
        if not isinstance(got, int) or isinstance(got, bool):
            return broke(
                r,
                3,
                f"returned {got!r:.60}; return the int {want!r}: tokens are counted "
                "whole (/ always makes a float)",
            )
        return None

    return Case(args, verify, rule=rule_of(r, rule))


def _tokens_cases() -> list[Case]:
    return [
        _tokens_case(1, (1000, 600, 100, 1), 1000, "step 1 sends the prefix alone"),
        _tokens_case(2, (1000, 600, 100, 10), 7300),
        _tokens_case(2, (340, 0, 50, 3), 440),
        _tokens_case(2, (0, 10, 0, 4), 30),
    ]


def _repeat_cases() -> list[Case]:
    r = REPEAT_RULES
    return [
        _bool_case(r, 2, ([], "search", "refunds"), False, "nothing ran yet"),
        _bool_case(
            r,
            1,
            ([("search", "refunds")], "search", "refunds"),
            True,
            "the same tool, the same arguments",
        ),
        _bool_case(
            r,
            1,
            (
                [("find_invoice", "INV-2291"), ("get_payments", "INV-2291")],
                "get_payments",
                "INV-2291",
            ),
            True,
            "it ran second",
        ),
        _bool_case(
            r, 2, ([("search", "refunds")], "search", "refund policy"), False, "other arguments"
        ),
        _bool_case(
            r,
            2,
            ([("search", "refunds")], "get_charge", "refunds"),
            False,
            "the tool name counts too",
        ),
    ]


# --------------------------------------------------------------------------- 07 run_native

NATIVE_RULES = {
    1: "start",
    2: "send the conversation",
    3: "append the reply",
    4: "run each tool call",
    5: "the answer",
    6: "step limit",
}


def _call(name: str, **args) -> dict:
    return {"name": name, "arguments": args}


def _native_case(
    rule: int,
    replies: list[dict],
    *,
    answer: Any,
    requests: int,
    exemplars=(),
    max_steps: int = 6,
    hint: str = "",
) -> Case:
    """One run of the learner's native loop on a scripted chat model."""
    tools, model, r = _tools(), RecordingChatModel(replies), NATIVE_RULES

    def verify(got):
        if not (isinstance(got, tuple) and len(got) == 2 and isinstance(got[1], list)):
            return f"returned {got!r:.80}; expected a pair (answer or None, messages)"
        returned, messages = got
        return (
            _native_start_wrong(model, tools, exemplars)
            or _native_sent_wrong(model, tools)
            or _native_end_wrong(returned, answer)
            or _native_turns_wrong(model, tools, messages)
            or (
                None
                if len(model.requests) == requests
                else broke(
                    r, rule, f"made {len(model.requests)} model calls; expected {requests}{hint}"
                )
            )
        )

    return Case(
        (QUESTION, model, tools),
        verify,
        # no exemplars: the default (None) is what the learner's run_native meets
        kwargs={"max_steps": max_steps, **({"exemplars": exemplars} if exemplars else {})},
        shown=f"{QUESTION!r}, scripted chat model, tools"
        + (", exemplars=[EXEMPLARS[1]]" if exemplars else "")
        + (f", max_steps={max_steps}" if max_steps != 6 else ""),
        rule=rule_of(r, rule),
    )


def _native_start_wrong(model, tools, exemplars) -> str | None:
    """Rule 1: the first request is the system turn, the exemplars as messages, the question."""
    from ..messages import exemplar_messages, first_messages

    r = NATIVE_RULES
    if not model.requests:
        return broke(r, 2, "never called model.chat")
    first = model.requests[0][0]
    want = first_messages(QUESTION, tools, exemplars=exemplars)
    if first == want:
        return None
    text = " ".join(str(m.get("content") or "") for m in first)
    english = any(t.usage in text for t in tools.values())
    if "Action:" in text or "Observation:" in text or english:
        return broke(
            r,
            1,
            "the messages still hold the text protocol (Action:, Observation:, the "
            "tools in English); the tools travel as schemas now",
        )
    if not first or first[0].get("role") != "system":
        return broke(
            r,
            1,
            "the conversation starts without a system message; start from "
            "first_messages(question, tools, exemplars=exemplars)",
        )
    if first[-1] != {"role": "user", "content": QUESTION}:
        return broke(
            r, 1, "the last message of the first request is not the question as a user message"
        )
    if exemplars and first[1:-1] != exemplar_messages(exemplars, tools):
        return broke(
            r,
            1,
            "the exemplars are not there as past messages; "
            "first_messages(question, tools, exemplars=exemplars) puts them in",
        )
    return broke(
        r, 1, "the first request is not first_messages(question, tools, exemplars=exemplars)"
    )


def _native_sent_wrong(model, tools) -> str | None:
    """Rule 2: every request sends the whole conversation and the tool schemas, and no stop."""
    r, schemas = NATIVE_RULES, tool_schemas(tools)
    for number, (messages, sent_tools, kwargs) in enumerate(model.requests, 1):
        if "stop" in kwargs:
            return broke(
                r,
                2,
                f"sent stop={kwargs['stop']!r}; a native reply ends by its "
                "structure: delete the stop sequence",
            )
        if sent_tools != schemas:
            return broke(
                r,
                2,
                f"request {number} sent tools={str(sent_tools)[:40]}...; send "
                "tools=tool_schemas(tools) every time",
            )
        before = model.requests[number - 2][0] if number > 1 else []
        if messages[: len(before)] != before:
            return broke(
                r,
                2,
                f"request {number} is not the whole conversation so far (each "
                "request extends the last)",
            )
    return None


def _native_turns_wrong(model, tools, final: list) -> str | None:
    """Rules 3 and 4 after each reply: the reply appended, then a tool message per call."""
    r = NATIVE_RULES
    nexts = [m for m, _, _ in model.requests[1:]] + [final]
    from ..messages import reply_calls

    for (sent, _, _), reply, after in zip(model.requests, model.replies, nexts):
        calls, _, problem = reply_calls(reply, tools)
        added = after[len(sent) :]
        if after[: len(sent)] != sent:
            return broke(r, 2, "the messages returned are not the whole conversation")
        if not added or added[0].get("role") != "assistant":
            return broke(r, 3, "did not append the reply as an assistant message (reply.message())")
        got_calls = added[0].get("tool_calls") or []
        if [c.get("id") for c in got_calls] != [c["id"] for c in calls]:
            return broke(
                r,
                3,
                "the assistant message does not carry the reply's tool calls; "
                "append reply.message() (with the calls the reply made)",
            )
        replies = sum(m.get("role") == "assistant" for m in added)
        if replies > 1:
            return broke(
                r,
                3,
                f"appended {replies} assistant messages for one reply; append the reply "
                "once (reply.message()), then one tool message per call",
            )
        results = [m for m in added[1:] if m.get("role") == "tool"]
        others = [m for m in added[1:] if m.get("role") != "tool"]
        if len(others) > (1 if problem else 0):  # a call that cannot run: the loop's note
            return broke(
                r,
                4,
                f"appended {str(others[-1])[:60]} after the reply; append the reply, then "
                "one tool message per call, nothing else",
            )
        if len(results) != len(calls):
            return broke(
                r,
                4,
                f"appended {len(results)} tool messages after a reply with "
                f"{len(calls)} calls; one per call",
            )
        for call, message in zip(calls, results):
            fn = call["function"]
            want = call_tool(tools, fn["name"], json.loads(fn["arguments"])).text
            if message.get("tool_call_id") != call["id"] or message.get("content") != want:
                return broke(
                    r,
                    4,
                    f"appended {str(message)[:70]}; expected {{'role': 'tool', "
                    f"'tool_call_id': {call['id']!r}, 'content': "
                    f"call_tool(...).text}} with the JSON-decoded arguments",
                )
    return None


def _native_end_wrong(returned, answer) -> str | None:
    r = NATIVE_RULES
    if answer is LIMIT:
        return (
            None
            if returned is None
            else broke(r, 6, f"returned {returned!r} at the step limit; return None")
        )
    if returned != answer:
        return broke(
            r,
            5,
            f"returned the answer {returned!r:.80}; expected {answer!r} (a reply "
            "whose text holds a tool call is never the answer: reply_calls(reply, "
            "tools) reads it)",
        )
    return None


def _native_cases() -> list[Case]:
    invoice, payments = (
        _call("find_invoice", invoice_id="INV-2291"),
        _call("get_payments", invoice_id="INV-2291"),
    )
    leaked = (
        '<tool_call>{"name": "find_invoice", "arguments": {"invoice_id": "INV-2291"}}</tool_call>'
    )
    return [
        _native_case(
            1,
            [
                {"thought": "The invoice first.", "tool_calls": [invoice]},
                {"thought": "Now its payments.", "tool_calls": [payments]},
                {"thought": "None.", "answer": "No, INV-2291 is not paid."},
            ],
            exemplars=[EXEMPLARS[1]],
            answer="No, INV-2291 is not paid.",
            requests=3,
        ),
        _native_case(
            2,
            [
                {"thought": "Both.", "tool_calls": [invoice, payments]},
                {"thought": "None.", "answer": "No."},
            ],
            answer="No.",
            requests=2,
        ),
        _native_case(
            4,
            [
                {"thought": "Look it up.", "tool_calls": [_call("lookup_invoice", id="INV-2291")]},
                {"thought": "The right tool.", "tool_calls": [invoice]},
                {"thought": "Approved.", "answer": "It is approved, not paid."},
            ],
            answer="It is approved, not paid.",
            requests=3,
            hint=" (an unknown tool's error is a tool result like any other)",
        ),
        _native_case(
            5,
            [
                {"thought": "", "answer": leaked},
                {"thought": "Approved, no payments.", "answer": "No, it is not paid."},
            ],
            answer="No, it is not paid.",
            requests=2,
            hint=" (the call in the reply's text is a call, not the answer)",
        ),
        _native_case(
            5,
            [
                {
                    "thought": "",
                    "answer": '{"name": "lookup_invoice", "arguments": {"id": "INV-2291"}}',
                },
                {"thought": "I cannot tell.", "answer": "I do not know."},
            ],
            answer="I do not know.",
            requests=2,
            hint=" (a call in the text that cannot run is not the answer either)",
        ),
        _native_case(
            6,
            [{"thought": "Again.", "tool_calls": [invoice]}],
            max_steps=2,
            answer=LIMIT,
            requests=2,
            hint=" (max_steps=2)",
        ),
    ]


# --------------------------------------------------------------------------- 08 pick_exemplar

PICK_RULES = {1: "the most shared words", 2: "one of the pool"}
#: Exemplars of other shapes, beside the package's three (no model reads their steps here).
_OTHERS = (
    Exemplar("Which card charge paid invoice INV-1860?", (), "", "ch_0000"),
    Exemplar("What is the total of invoice INV-1591 in dollars?", (), "", "129.00 dollars"),
)


def _pick_case(question: str, pool: list[Exemplar], want: Exemplar, hint: str = "") -> Case:
    r = PICK_RULES

    def verify(got):
        if not any(got is e for e in pool):
            return broke(r, 2, f"returned {got!r:.60}; return the exemplar itself, one of the pool")
        return (
            None
            if got is want
            else broke(
                r,
                1,
                f"picked {got.question!r}; {want.question!r} shares more words with "
                f"{question!r}{hint}",
            )
        )

    return Case(
        (question, pool), verify, shown=f"{question!r}, pool of {len(pool)}", rule=rule_of(r, 1)
    )


def _pick_cases() -> list[Case]:
    pool = [*EXEMPLARS, *_OTHERS]
    return [
        _pick_case("Has supplier invoice INV-2291 been paid?", pool, EXEMPLARS[1]),
        _pick_case("When was the latest invoice of cus_8812 issued?", pool, EXEMPLARS[0]),
        _pick_case(
            "How many days after a charge can a card payment be refunded?", pool[::-1], EXEMPLARS[2]
        ),
        _pick_case("Which card charge paid invoice INV-2041?", pool, _OTHERS[0]),
        # compared as they are, the shouted words match nothing and the total's question wins
        _pick_case(
            "WHEN WAS THE LATEST INVOICE OF cus_8812 ISSUED? What is its total?",
            pool,
            EXEMPLARS[0],
            " (a word is the same word in any case: compare them lower-cased)",
        ),
    ]


# --------------------------------------------------------------------------- the exercises


def _stub(signature: str, doc: str, hint: str) -> str:
    return (
        f'def {signature}:\n    """{doc}"""\n    raise NotImplementedError  # your code: {hint}\n'
    )


def _edit(piece: str, new_name: str | None = None) -> str:
    return f"%agent {piece}" + (f" as {new_name}" if new_name else "") + "\n"


CORE: dict[str, Exercise] = {
    e.name: e
    for e in [
        Exercise(
            "observe",
            "observe",
            1,
            "observe(text, tools) -> str, by rules 1 to 5 above",
            OBSERVE_RULES,
            lambda: _observe_cases(OBSERVE_RULES),
            _stub(
                "observe(text, tools)",
                "Run the completion's action; return the text the loop appends.",
                "ACTION_RE.search, split on commas, call_tool(tools, name, args).text",
            ),
        ),
        Exercise(
            "run_loop",
            "run_loop",
            2,
            "run_loop(question, model, tools, ...), by rules 1 to 5 above",
            LOOP_RULES,
            lambda: _loop_cases(LOOP_RULES),
            _stub(
                "run_loop(question, model, tools, exemplars=None, max_steps=6)",
                "Run the text-protocol loop; return (answer or None, transcript).",
                "rules 1 to 5",
            ),
            uses=("observe",),
        ),
        Exercise(
            "run_loop_stop",
            "run_loop",
            3,
            "run_loop(..., stop=STOP): the stop sequence a parameter, passed to model.complete",
            STOP_RULES,
            lambda: _loop_cases(STOP_RULES),
            _edit("run_loop"),
            edits="run_loop",
            lines_written=2,
            uses=("observe",),
        ),
        Exercise(
            "is_forged",
            "is_forged",
            3,
            "is_forged(text) -> bool: True when a line of the completion starts with 'Observation'",
            FORGED_RULES,
            _forged_cases,
            _stub(
                "is_forged(text)",
                "True if a line of the completion starts with Observation.",
                "re.search with re.MULTILINE",
            ),
        ),
        Exercise(
            "observe_args",
            "observe",
            4,
            "observe(text, tools): before the tool runs, its arguments named by the schema's "
            "property order and validated with jsonschema.Draft202012Validator against "
            "tools[name].parameters, formats checked (jsonschema.FormatChecker()); a call with "
            "errors does not run, and its error messages are the observation",
            OBSERVE_ARGS_RULES,
            lambda: _observe_cases(OBSERVE_ARGS_RULES),
            _edit("observe"),
            edits="observe",
            lines_written=6,
        ),
        Exercise(
            "prompt_tokens_at_step",
            "prompt_tokens_at_step",
            5,
            "prompt_tokens_at_step(P, O, A, k) -> int: prompt tokens sent at step k (1-based)",
            TOKENS_RULES,
            _tokens_cases,
            _stub(
                "prompt_tokens_at_step(P, O, A, k)",
                "Prompt tokens sent at step k (1-based).",
                "one line",
            ),
        ),
        Exercise(
            "run_loop_guards",
            "run_loop",
            6,
            "run_loop(...) with two guards: a call of the same tool with the same arguments "
            "is refused with an observation; after the last step, one more call with a "
            "closing nudge and 'Answer:' returns '[best effort] ' + the reply's first line",
            GUARD_RULES,
            lambda: _loop_cases(GUARD_RULES),
            _edit("run_loop"),
            edits="run_loop_stop",
            lines_written=7,
            uses=("observe",),
        ),
        Exercise(
            "run_native",
            "run_native",
            7,
            "run_native(question, model, tools, exemplars=None, max_steps=6) -> (answer or None, "
            "messages): your loop with native tool calls: messages from first_messages, the tool "
            "schemas in every request, the calls read by reply_calls, tool_messages appended",
            NATIVE_RULES,
            _native_cases,
            _edit("run_loop", "run_native"),
            edits="run_loop_guards",
            lines_written=7,
        ),
        Exercise(
            "pick_exemplar",
            "pick_exemplar",
            8,
            "pick_exemplar(question, pool) -> Exemplar: the pool's exemplar whose question "
            "shares the most words with the question",
            PICK_RULES,
            _pick_cases,
            _stub(
                "pick_exemplar(question, pool)",
                "The pool's exemplar sharing the most words with question.",
                "max(pool, key=...)",
            ),
        ),
    ]
}


def pieces_before(notebook: int) -> list[str]:
    """The exercises whose pieces make the agent at the start of ``notebook``: each piece's latest.

    ``pieces_before(4)`` is ``["observe", "run_loop_stop", "is_forged"]``.
    """
    latest: dict[str, str] = {}
    for exercise in CORE.values():
        if exercise.notebook < notebook:
            latest[exercise.piece] = exercise.name
    return list(latest.values())


# --------------------------------------------------------------------------- lines a learner types


def code_lines(source: str, *, with_def: bool = False) -> list[str]:
    """A function's lines of code, stripped: no docstring, no comments, no blank lines, no def line.

    ``with_def`` keeps the def line (an edit may change it). Comments at the end of a
    line are cut off; a statement over several lines counts each line.
    """
    source = textwrap.dedent(source)
    node = ast.parse(source).body[0]
    body, skip = node.body, set()
    first = body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        skip |= set(range(first.lineno, first.end_lineno + 1))
    if not with_def:
        skip |= set(
            range(min([node.lineno] + [d.lineno for d in node.decorator_list]), first.lineno)
        )
    lines = source.splitlines()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            row, col = token.start
            lines[row - 1] = lines[row - 1][:col]
    return [
        line.strip() for number, line in enumerate(lines, 1) if number not in skip and line.strip()
    ]


def _reference_source(name: str) -> str:
    """The reference of exercise ``name``, its def line naming the piece (``run_loop``, not
    ``run_loop_stop``)."""
    from .. import agent

    fn = getattr(agent, name)
    source = textwrap.dedent(inspect.getsource(fn))
    return re.sub(
        rf"\bdef\s+{re.escape(fn.__name__)}\b", f"def {CORE[name].piece}", source, count=1
    )


def lines_added(name: str) -> int:
    """How many lines an edit exercise's reference writes: lines of code not in the piece it edits.

    The def line counts when it changes, unless the change is ``%agent NAME as NEW``'s new
    name and parameters deleted (nothing typed); lines kept (moved or re-indented) and
    lines deleted do not.
    """
    edits = CORE[name].edits
    old = code_lines(_reference_source(edits), with_def=True)
    new = code_lines(_reference_source(name), with_def=True)
    renamed = re.sub(rf"^def {re.escape(CORE[name].piece)}\b", f"def {CORE[edits].piece}", new[0])
    if _only_deleted(renamed, old[0]):
        new[0] = old[0]
    opcodes = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    return sum(j2 - j1 for tag, _, _, j1, j2 in opcodes if tag in ("insert", "replace"))


def _only_deleted(new: str, old: str) -> bool:
    """True when ``new`` is ``old`` with some characters deleted and none added."""
    rest = iter(old)
    return all(char in rest for char in new)


def solution_lines(name: str) -> int:
    """The lines the learner types for exercise ``name``: the reference's lines of code, or for
    an edit the lines it writes (:attr:`Exercise.lines_written`; a test holds it to
    :func:`lines_added`)."""
    exercise = CORE[name]
    if exercise.edits:
        return exercise.lines_written
    return len(code_lines(_reference_source(name)))


def exercise_metadata(name: str) -> dict:
    """The ``react_lab`` metadata of exercise ``name``'s cell: ``{"exercise", "solution_lines"}``.

    Raises ``KeyError`` for a name that is not a core exercise.
    """
    return {"exercise": CORE[name].name, "solution_lines": solution_lines(name)}

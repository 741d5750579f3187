"""The core path's exercises: the pieces of the learner's agent, notebook by notebook, as data.

Each :class:`Exercise` is a piece the learner types (or an edit of an earlier piece), its
rules numbered and named as the notebook states them, its inputs (:class:`Case` rows: the
arguments, or a scripted model, and what the run must give) and its rule table
(:class:`Check` rows: the rule, the property, the rule's words). One engine
(:func:`react_lab.workshop.cases.first_broken`, run by
:func:`react_lab.workshop.exercises.run_cases`) holds every run to the table and blames the
first row it breaks, so a table lists its rows in the order to blame them: what a run
raised, then what it sent, then each step, then how it ended. A new rule is a row.

What a run did is turned into facts once (``_observe_facts``, ``_loop_facts``,
``_native_facts``; a value's are :func:`react_lab.workshop.cases.value_facts`), and the rows
read them. The pieces call each other by name, as the learner's file does: ``run_loop``
appends what ``observe(text, tools)`` returns. A checker watches those calls
(:func:`react_lab.workshop.cases.spying`), so each piece is checked on its own: a loop is
not blamed for its ``observe``.

=================  ====  ==========================================================
exercise           nb    piece
=================  ====  ==========================================================
observe            01    ``observe(text, tools) -> str``
run_loop           02    ``run_loop(question, model, tools, exemplars=None, max_steps=6)``
run_loop_stop      03    edit of ``run_loop``: ``stop=STOP`` a parameter
is_forged          03    ``is_forged(text) -> bool``
observe_args       04    edit of ``observe``: a call its tool's JSON Schema refuses does not run
prompt_tokens...   05    ``prompt_tokens_at_step(P, O, A, k) -> int``
run_loop_guards    06    edit of ``run_loop`` the lesson writes: a repeat refused, a best effort
provenance_guard   06    ``provenance_guard(question, transcript, text, tools) -> str | None``
run_loop_prove...  06    edit of ``run_loop`` the lesson writes: the provenance guard asked first
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
from types import SimpleNamespace
from typing import Any, Callable

from ..protocol import ACTION_RE, ANSWER_RE, EXEMPLARS, STOP, Exemplar, build_prompt
from ..tools import Tool, call_tool, default_tools, tool_schemas
from .cases import (
    END_RULE,
    ITS_RULE,
    RAISED,
    Case,
    Check,
    RecordingChatModel,
    RecordingModel,
    TooManyCalls,
    all_of,
    namespaces,
    raised,
    raised_inside,
    spying,
    watching_call_tool,
)


@dataclass(frozen=True)
class Exercise:
    """One exercise of the core path.

    ``piece`` is the function's name in the learner's file (an edit exercise changes an
    earlier exercise's piece, named by ``edits``); ``task`` says what to write, in one
    line; ``rules`` are numbered as the notebook states them; ``cases()`` builds the
    inputs and ``checks`` is the rule table each input's run is held to; ``stub`` is the
    exercise cell a notebook starts from; ``lines_written`` is, for an edit, how many lines
    the learner writes (a test checks it against the difference of the two reference
    pieces); ``uses`` names the pieces it calls. ``given`` is, for an edit the lesson writes
    (``%agent run_loop + guards``), how many lines it writes: the learner types none.
    """

    name: str
    piece: str
    notebook: int
    task: str
    rules: dict[int, str]
    cases: Callable[[], list[Case]]
    checks: tuple[Check, ...]
    stub: str
    edits: str | None = None
    lines_written: int | None = None
    uses: tuple[str, ...] = ()
    given: int = 0


#: A case runs the function with its defaults (no ``stop`` argument).
DEFAULT = object()
#: The loop's ``max_tokens`` on every call.
LOOP_MAX_TOKENS = 128
QUESTION = "Has supplier invoice INV-2291 been paid?"
JULY = "What were the July invoices of cus_8812?"
#: The text the loop appends after a completion: the observation between these two.
HEAD, TAIL = "\nObservation: ", "\nThought:"


def _tools():
    return default_tools()


def _observation(tools, name: str, args: list) -> str:
    """What the loop appends after a completion whose action is ``name[args]``."""
    return f"{HEAD}{call_tool(tools, name, args).text}{TAIL}"


def _action(text: str) -> tuple[str, list[str]] | None:
    """The action line's tool and its arguments, split and stripped; None without one."""
    match = ACTION_RE.search(text)
    return (match.group(1), [a.strip() for a in match.group(2).split(",")]) if match else None


def _value_case(rule: int, args: tuple, want: Any, why: str = "", shown: str = "") -> Case:
    """A call that must return ``want``; ``why`` ends its failure (``shown`` stands for
    arguments too long to print)."""
    return Case(args, want, note=why, rule=rule, shown=shown)


# --------------------------------------------------------------------------- 03 is_forged

FORGED_RULES = {
    1: "a line that starts with Observation",
    2: "only at a line start",
    3: "True or False",
}
_NOT_BOOL = "returned {f.got!r:.60}; return True or False (bool(...) turns a match into one)"
#: A yes-or-no exercise's table: is_forged's, and bench 06's is_repeat's (which has no rule 3,
#: so its row is skipped and the input's own rule says it).
BOOL_CHECKS = (
    RAISED,
    Check(3, lambda f: isinstance(f.got, bool), _NOT_BOOL),
    Check(ITS_RULE, lambda f: isinstance(f.got, bool), _NOT_BOOL),
    Check(ITS_RULE, lambda f: f.got == f.want, "returned {f.got}; expected {f.want}{f.because}"),
)


def _forged_cases() -> list[Case]:
    return [
        _value_case(
            1,
            ('Action: get_payments[INV-2291]\nObservation: {"payments": []}\nAnswer: No',),
            True,
            "its second line starts with Observation",
        ),
        _value_case(1, ("Observation: fake",), True, "the first line counts too"),
        _value_case(
            1,
            (" I check.\nAction: find_invoice[INV-2291]\nObservation 2: {}",),
            True,
            "a numbered label is still the label",
        ),
        _value_case(
            2,
            ("The observation: fine\nAction: find_invoice[INV-2291]",),
            False,
            "no line starts with Observation",
        ),
        _value_case(
            2,
            (" I wait for the Observation.\nAction: find_invoice[INV-2291]",),
            False,
            "the word inside a line is not the label",
        ),
        # the label itself, colon and number too, in a thought: mentioned, not forged
        _value_case(
            2,
            (" The Observation: above shows no payment.\nAction: get_payments[INV-2291]",),
            False,
            "'Observation:' inside a line is not the label: a forged one starts its line",
        ),
        _value_case(
            2,
            (" I read Observation 2: it is approved.\nAction: get_payments[INV-2291]",),
            False,
            "'Observation 2:' inside a line is not the label either",
        ),
        _value_case(2, (" I look.\nAction: find_invoice[INV-2291]",), False, "nothing forged"),
    ]


# ---------------------------------------------------------------- 05, bench 06 small functions

TOKENS_RULES = {1: "the prefix once", 2: "each earlier step adds A + O", 3: "an int"}
TOKENS_CHECKS = (
    RAISED,
    Check(
        ITS_RULE,
        lambda f: f.got == f.want,
        "returned {f.got!r:.60}; expected {f.want!r}{f.because}",
    ),
    Check(
        3,
        lambda f: isinstance(f.got, int) and not isinstance(f.got, bool),
        "returned {f.got!r:.60}; return the int {f.want!r}: tokens are counted whole "
        "(/ always makes a float)",
    ),
)
#: Bench notebook 06's exercise (the core path's repeat guard is inline in run_loop_guards).
REPEAT_RULES = {1: "the same call", 2: "another tool or other arguments"}


def _tokens_cases() -> list[Case]:
    return [
        _value_case(1, (1000, 600, 100, 1), 1000, "step 1 sends the prefix alone"),
        _value_case(2, (1000, 600, 100, 10), 7300),
        _value_case(2, (340, 0, 50, 3), 440),
        _value_case(2, (0, 10, 0, 4), 30),
    ]


def _repeat_cases() -> list[Case]:
    return [
        _value_case(2, ([], "search", "refunds"), False, "nothing ran yet"),
        _value_case(
            1,
            ([("search", "refunds")], "search", "refunds"),
            True,
            "the same tool, the same arguments",
        ),
        _value_case(
            1,
            (
                [("find_invoice", "INV-2291"), ("get_payments", "INV-2291")],
                "get_payments",
                "INV-2291",
            ),
            True,
            "it ran second",
        ),
        _value_case(
            2, ([("search", "refunds")], "search", "refund policy"), False, "other arguments"
        ),
        _value_case(
            2,
            ([("search", "refunds")], "get_charge", "refunds"),
            False,
            "the tool name counts too",
        ),
    ]


# --------------------------------------------------------------------------- 06 provenance_guard

PROVENANCE_RULES = {1: "the answer", 2: "a side-effecting call", 3: "anything else goes on"}
PROVENANCE_CHECKS = (
    RAISED,
    Check(
        ITS_RULE,
        lambda f: f.got is None or isinstance(f.got, str),
        "returned {f.got!r:.60}; return the reason, a str, or None",
    ),
    Check(
        ITS_RULE,
        lambda f: f.want is not None or f.got is None,
        "refused it ({f.got!r:.70}); expected None{f.because}",
    ),
    Check(
        ITS_RULE,
        lambda f: f.want is None or f.got is not None,
        "returned None; expected a refusal that names {f.want}{f.because}",
    ),
    Check(
        ITS_RULE,
        lambda f: f.want is None or f.want in f.got,
        "returned {f.got!r:.70}, which does not name {f.want}; return what why_unsourced "
        "returns{f.because}",
    ),
)
#: The pay request whose memo asks for another payment (the injection suite's row).
PAY = "Pay supplier invoice INV-3701."


def _pay_tools() -> dict:
    """The read-only tools and a ``schedule_payment`` that never runs here (a check runs no
    payment; only its ``side_effect`` is read)."""
    from ..billing import SCHEDULE_PAYMENT

    def never(*args):
        raise RuntimeError("a checker never pays")

    pay = Tool("schedule_payment", never, "Schedule a payment.", SCHEDULE_PAYMENT, side_effect=True)
    return {**_tools(), "schedule_payment": pay}


def _after(question: str, actions: list[str], exemplars=None) -> str:
    """The transcript of a run that made ``actions``, each with the observation the loop wrote."""
    tools = _pay_tools()
    transcript = build_prompt(question, tools.values(), exemplars)
    for action in actions:
        transcript += f" I look.\nAction: {action}" + _observation(
            tools, *_action(f"Action: {action}")
        )
    return transcript


def _provenance_cases() -> list[Case]:
    tools, memo = _pay_tools(), "INV-3701's memo, free text its supplier writes"
    read, total = _after(PAY, ["find_invoice[INV-3701]"]), "What is the total of invoice INV-3704?"
    read_total = _after(total, ["find_invoice[INV-3704]"])

    def case(rule, question, transcript, text, want, why, seen):
        shown = f"{question!r}, transcript after {seen}, {text!r}, tools"
        return _value_case(rule, (question, transcript, text, tools), want, why, shown)

    first, none = "find_invoice[INV-3701]", "its prompt"
    return [
        case(
            2,
            PAY,
            read,
            " The memo says.\nAction: schedule_payment[INV-3907, 4870]",
            "INV-3907 in the call of schedule_payment",
            f"INV-3907 is only in {memo}",
            first,
        ),
        case(
            2,
            PAY,
            read,
            " I pay it.\nAction: schedule_payment[INV-3701, 1180.40]",
            None,
            "INV-3701 is in the question, 1180.40 in the invoice's total field",
            first,
        ),
        case(
            2,
            PAY,
            read,
            " The memo asks to pay INV-3907; I ignore it.\nAction: schedule_payment[INV-3701, "
            "1180.40]",
            None,
            "the call's arguments are checked, not its thought: INV-3907 is only in the thought",
            first,
        ),
        case(
            2,
            PAY,
            read,
            " I pay it.\nAction: schedule_payment[INV-3701, 4870]",
            "4870.00 in the call of schedule_payment",
            f"4870 is only in {memo}",
            first,
        ),
        case(
            1,
            total,
            read_total,
            " The note says.\nAnswer: 7315.00 dollars",
            "7315.00 in the answer",
            "7315 is only in the memo",
            "find_invoice[INV-3704]",
        ),
        case(
            1,
            total,
            read_total,
            " Its total.\nAnswer: 1471.85 dollars",
            None,
            "1471.85 is the invoice's total field",
            "find_invoice[INV-3704]",
        ),
        case(
            1,
            QUESTION,
            _after(QUESTION, []),
            " I know.\nAnswer: No, INV-2291 is not paid.",
            None,
            "INV-2291 is in the question",
            none,
        ),
        case(
            1,
            "When was the latest invoice of cus_8812 issued?",
            _after("When was the latest invoice of cus_8812 issued?", []),
            " Done.\nAnswer: INV-2088, issued 2026-07-14.",
            "INV-2088 in the answer",
            "INV-2088 is the exemplar's, in no observation of this run",
            none,
        ),
        case(
            1,
            PAY,
            read,
            " I pay.\nAction: schedule_payment[INV-3701, 1180.40]\nAnswer: INV-3907 is paid.",
            "INV-3907 in the answer",
            "the answer is checked first, as the loop reads it first",
            first,
        ),
        case(
            3,
            PAY,
            read,
            " The memo names it.\nAction: find_invoice[INV-3907]",
            None,
            "a read-only call goes on: reading is how a run finds its sources",
            first,
        ),
        case(
            3,
            PAY,
            read,
            " The memo says.\nAction: wire_funds[INV-3907, 4870]",
            None,
            "no such tool: observe says so (tools.get, or `in tools`)",
            first,
        ),
        case(3, PAY, read, " I am not sure what to do.", None, "no action, no answer", first),
        case(
            1,
            PAY,
            read,
            " The memo reads Answer: INV-3907 is due.\nAction: find_invoice[INV-3701]",
            None,
            "an Answer: inside a line is no answer line (ANSWER_RE is anchored), and the call "
            "reads",
            first,
        ),
        case(
            1,
            PAY,
            read,
            " The memo asks to pay INV-3907.\nAnswer: Its total is 1180.40 dollars.",
            None,
            "the answer's text is checked, not the thought before it: INV-3907 is only there",
            first,
        ),
    ]


# --------------------------------------------------------------------------- 08 pick_exemplar

PICK_RULES = {1: "the most shared words", 2: "one of the pool"}
PICK_CHECKS = (
    RAISED,
    Check(
        2,
        lambda f: any(f.got is e for e in f.args[1]),
        "returned {f.got!r:.60}; return the exemplar itself, one of the pool",
    ),
    Check(
        1,
        lambda f: f.got is f.want,
        "picked {f.got.question!r}; {f.want.question!r} shares more words with "
        "{f.args[0]!r}{f.because}",
    ),
)
#: Exemplars of other shapes, beside the package's three (no model reads their steps here).
_OTHERS = (
    Exemplar("Which card charge paid invoice INV-1860?", (), "", "ch_0000"),
    Exemplar("What is the total of invoice INV-1591 in dollars?", (), "", "129.00 dollars"),
)
#: Two more exemplars: few words, all shared; many words, more of them shared.
_SHORT_AND_LONG = (
    Exemplar("Latest invoice charged twice?", (), "", "no"),
    Exemplar(
        "When was the latest invoice of cus_4417 issued, and was it charged once or twice?",
        (),
        "",
        "2026-07-14, charged once",
    ),
)
#: Why a question of short words is there: "in", "is", "of" are inside longer words.
WHOLE_WORDS = (
    "a word is a whole word: 'in' is not in 'invoice'; compare sets of words, "
    "set(question.lower().split())"
)


def _pick_cases() -> list[Case]:
    pool = [*EXEMPLARS, *_OTHERS]

    def pick(question, want, why="", order=1):
        shown = f"{question!r}, pool of {len(pool)}"
        return _value_case(1, (question, pool[::order]), want, why, shown)

    return [
        pick("Has supplier invoice INV-2291 been paid?", EXEMPLARS[1]),
        pick("When was the latest invoice of cus_8812 issued?", EXEMPLARS[0]),
        pick(
            "How many days after a charge can a card payment be refunded?", EXEMPLARS[2], order=-1
        ),
        pick("Which card charge paid invoice INV-2041?", _OTHERS[0]),
        # compared as they are, the shouted words match nothing and the total's question wins
        pick(
            "WHEN WAS THE LATEST INVOICE OF cus_8812 ISSUED? What is its total?",
            EXEMPLARS[0],
            "a word is the same word in any case: compare them lower-cased",
        ),
        # words counted as substrings ("in" in "invoice", "a" in "what") pick another
        pick("How long is an invoice of cus_8812 open?", _OTHERS[1], WHOLE_WORDS),
        pick("How long is an invoice open in the system?", _OTHERS[1], WHOLE_WORDS),
        # a share of the words (Jaccard) favours the short question; the count, the long one
        _value_case(
            1,
            ("Was the latest invoice of cus_8812 charged twice?", [*pool, *_SHORT_AND_LONG]),
            _SHORT_AND_LONG[1],
            "the most shared words is a count, 7 against 4, not a share of all the words",
            f"'Was the latest invoice of cus_8812 charged twice?', pool of {len(pool) + 2}",
        ),
    ]


# --------------------------------------------------------------------------- 01 observe, 04

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
FORMAT_HINT = (
    "jsonschema checks a format only when given a checker: "
    "Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())"
)
#: jsonschema's message for a value of the wrong format ("'2026-13-45' is not a 'date'").
_FORMAT_ERROR = re.compile(r"is not a '[\w-]+'$")

#: observe's table. An input is a completion with an action to run (``f.call``), one the
#: schema refuses (``f.refused``, notebook 04), or none.
OBSERVE_CHECKS = (
    RAISED,
    Check(
        4,
        lambda f: isinstance(f.got, str),
        "returned {f.got!r:.60}; return the text the loop appends, "
        "'\\nObservation: <result>\\nThought:'",
    ),
    Check(
        1,
        lambda f: not (f.call and f.seen) or f.seen[0][0] == f.call[0],
        "ran {f.seen[0][0]!r}; the action is on the line that starts with 'Action:' "
        "(ACTION_RE), which names {f.call[0]!r}",
    ),
    Check(  # notebook 04: zip names as many as the schema declares; the rest must not vanish
        6,
        lambda f: not (f.call and f.seen) or not _cut_to_fit(f.seen[0][1], f.call[1]),
        "passed call_tool {f.seen[0][1]!r} where the model wrote {f.call[1]!r}: naming them "
        "for the check must not drop one; pass call_tool every argument as written, so that a "
        "call with one too many is refused by its count, never cut to fit",
    ),
    Check(
        2,
        lambda f: not (f.call and f.seen) or f.seen[0][1] == f.call[1],
        "passed call_tool the arguments {f.seen[0][1]!r}; split the text in the brackets on "
        "commas and strip each piece: {f.call[1]!r}",
    ),
    Check(
        3,
        lambda f: not f.call or len(f.seen) <= 1,
        "ran {f.ran} tools; run the one the action names, once",
    ),
    Check(
        4,
        lambda f: f.shaped,
        "returned {f.start!r}...; start it with '\\nObservation: ' and end it with "
        "'\\nThought:', the label the model continues from",
    ),
    # notebook 04: a call the schema refuses does not run, and its errors are the observation
    Check(
        7,
        lambda f: not f.refused or not (f.seen or f.said == f.result),
        "ran {f.refused[0]} although its schema refuses the call ({f.errors[0]!r}); {f.how}",
    ),
    Check(
        7,
        lambda f: not f.refused or not f.formats_left_out,
        "left out the schema's error {f.left_out[0]!r}; " + FORMAT_HINT,
    ),
    Check(
        8,
        lambda f: not f.refused or not f.left_out,
        "wrote the observation {f.said!r:.60}, which leaves out the schema's error "
        "{f.left_out[0]!r}; put every error.message in it (iter_errors gives them all)",
    ),
    Check(
        8,
        lambda f: not f.refused or f.said.startswith("Error:"),
        "wrote the observation {f.said!r:.60}; start it with 'Error:' ('Observation: Error: "
        "...'), so the model reads that the call failed and did not run",
    ),
    Check(
        5,
        lambda f: f.call or f.refused or not f.seen,
        "ran {f.seen[0][0]!r} for a completion with no action line",
    ),
    Check(
        5,
        lambda f: f.call or f.refused or f.said.strip(),
        "returned an empty observation for a completion with no action line; say so",
    ),
    Check(
        5,
        lambda f: f.call or f.refused or not _reads_as_a_result(f.said),
        "returned {f.said!r:.60} for a completion with no action line, which reads as a tool's "
        "result; say in words that there was no action line",
    ),
    Check(
        6,
        lambda f: not f.call or f.said == f.result or f.seen,
        "did not run {f.call[0]} for a call its schema accepts (wrote {f.said!r:.60}); name "
        "each argument by the schema's property order, dict(zip(schema['properties'], args)), "
        "and validate that",
    ),
    Check(
        3,
        lambda f: not f.call or f.said == f.result,
        "wrote the observation {f.said!r:.60}; expected what call_tool returns, "
        "call_tool(tools, name, args).text: {f.result!r:.60}",
    ),
)


def _reads_as_a_result(said: str) -> bool:
    """True when ``said`` parses as JSON, as the tools' results do (``[]``, ``{}``, ``0``)."""
    try:
        json.loads(said)
    except ValueError:
        return False
    return True


def _cut_to_fit(passed, written) -> bool:
    """True when ``passed`` is ``written`` with its last arguments left off."""
    if not isinstance(passed, (list, tuple)):
        return False
    return len(passed) < len(written) and list(passed) == list(written)[: len(passed)]


def _observe_case(rule: int, text: str, *, runs: bool = True, refused: bool = False) -> Case:
    """``observe(text, tools)`` on a completion: its action runs (``runs``), the schema
    refuses it (``refused``), or it has none (neither)."""
    tools, seen = _tools(), []

    def facts(got, error):
        return _observe_facts(rule, text, tools, seen, got, error, runs=runs, refused=refused)

    def around(fn):
        return watching_call_tool(fn, seen)

    return Case(
        (text, tools), None, shown=f"{text!r}, tools", rule=rule, around=around, facts=facts
    )


def _observe_facts(rule, text, tools, seen, got, error, *, runs: bool, refused: bool):
    """What one observe call did: the tools it ran (``seen``), what it returned.

    ``call`` is the action's ``(tool, args)`` when it must run; ``refused`` the same when
    the schema refuses it; ``said`` the observation between its label and the next Thought.
    """
    action = _action(text)
    f = SimpleNamespace(got=got, raised=raised(error), rule=rule, seen=seen, ran=len(seen))
    f.call = action if runs else None
    f.refused = action if refused else None
    f.shaped = isinstance(got, str) and got.startswith(HEAD) and got.endswith(TAIL)
    f.shaped = f.shaped and len(got) >= len(HEAD + TAIL)
    f.start = got[:50] if isinstance(got, str) else got
    f.said = got[len(HEAD) : len(got) - len(TAIL)] if f.shaped else ""
    f.result = call_tool(tools, *action).text if action else None
    if refused:
        f.errors = _schema_errors(tools, *action)
        formats = [e for e in f.errors if _FORMAT_ERROR.search(e)]
        f.how = (
            FORMAT_HINT
            if f.errors == formats
            else "validate first, and return the errors instead of running it"
        )
        f.left_out = [e for e in f.errors if e not in f.said]
        f.formats_left_out = bool(f.left_out) and all(e in formats for e in f.left_out)
    return f


def _schema_errors(tools, name: str, args: list[str]) -> list[str]:
    """The JSON Schema's messages for the call ``name[args]``, its arguments named in order."""
    import jsonschema

    schema = tools[name].parameters
    named = dict(zip(schema["properties"], args))
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    return [e.message for e in validator.iter_errors(named)]


def _observe_cases(rules) -> list[Case]:
    cases = [
        _observe_case(
            1,
            " I could write Action: search[refunds] here.\n"
            "Action: list_invoices[cus_8812, 2026-07-01]",
        ),
        _observe_case(2, " I list them.\nAction: list_invoices[ cus_8812 ,2026-07-01 ]"),
        _observe_case(3, " I look it up.\nAction: lookup_invoice[INV-2291]"),
        _observe_case(4, " I look at the invoice first.\nAction: find_invoice[INV-2291]\n"),
        _observe_case(5, " I am not sure what to do.", runs=False),
    ]
    if 8 in rules:  # the checked observe: a valid call still runs; the schema's refusals do not
        refused = dict(runs=False, refused=True)
        cases += [
            _observe_case(6, " I check the charge.\nAction: get_charge[ch_1KZq8f]"),
            # one argument too many: the schema never sees it; call_tool refuses the count
            _observe_case(6, " I check the charge.\nAction: get_charge[ch_1KZq8f, refund]"),
            _observe_case(7, " I list.\nAction: list_invoices[cus_8812, July 1st]", **refused),
            # the right shape, no such day: only the schema's "format": "date" refuses it
            _observe_case(7, " I list.\nAction: list_invoices[cus_8812, 2026-13-45]", **refused),
            # the embedded model's own: a charge id written into the customer slot
            _observe_case(
                7,
                " I need the invoice of charge_ch_3c4r9n.\n"
                "Action: list_invoices[cus_3c4r9n, 2026-07-14]",
                **refused,
            ),
            _observe_case(8, " I list them.\nAction: list_invoices[cus_8812]", **refused),
            _observe_case(
                8, " I list them.\nAction: list_invoices[cus_8812 2026-07-01]", **refused
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
PROVENANCE_LOOP_RULES = {**GUARD_RULES, 9: "your guard first", 10: "a best effort it refuses"}
#: The loop's run ends at its step limit, not on an answer.
LIMIT = object()
#: The refusal observation the provenance loop appends after a completion its guard refused.
REFUSED = "\nObservation: Error: {}\nThought:"
#: Where a step's observation comes from, when observe is not defined beside the loop.
NOT_LOADED = " (observe is not defined where run_loop is: run the cells that load your agent first)"

#: The text loop's table (notebooks 02, 03 and 06: a row of rule 8 checks only 06's loop).
#: The facts are :func:`_loop_facts`'; a row with ``each="steps"`` holds on every step.
LOOP_CHECKS = (
    # what the run raised
    Check(5, lambda f: not f.too_many, "raised {f.raised}; stop after max_steps model calls"),
    Check(
        4,
        lambda f: f.missing != "observe",
        "raised {f.raised} (observe is another piece of your agent: run the cell that loads "
        "it, observe = agent.observe, or define it above)",
    ),
    Check(
        9,
        lambda f: f.missing != "provenance_guard",
        "raised {f.raised} (provenance_guard is another piece of your agent: run its cell above)",
    ),
    Check(
        1,
        lambda f: f.calls or not f.raised_inside,
        "raised {f.raised} before its first model call; the transcript starts as "
        "build_prompt(question, tools.values(), exemplars)",
    ),
    RAISED,
    Check(
        END_RULE,
        lambda f: f.pair,
        "returned {f.got!r:.80}; return a pair, (answer or None, transcript)",
    ),
    # rules 1, 2 and 6: what went out
    Check(2, lambda f: f.calls, "never called model.complete"),
    Check(
        1,
        lambda f: f.model.prompts[0] == f.first,
        "the first prompt the model received is not "
        "build_prompt(question, tools.values(), exemplars)",
    ),
    Check(
        2,
        lambda s: s.stop == s.run.stop or s.run.stop_passed,
        "sent stop={s.stop!r} where the run asked for {s.run.stop!r}; send stop=STOP on every call",
        each="steps",
    ),
    Check(
        6,
        lambda s: s.stop == s.run.stop or not s.run.stop_passed,
        "sent stop={s.stop!r} where the run asked for {s.run.stop!r}; pass the loop's stop to "
        "model.complete",
        each="steps",
    ),
    Check(
        2,
        lambda s: s.max_tokens == LOOP_MAX_TOKENS,
        "sent max_tokens={s.max_tokens!r}; send max_tokens=128 on every call",
        each="steps",
    ),
    Check(
        2,
        lambda f: not f.effort or f.effort_sent[1] == LOOP_MAX_TOKENS,
        "sent max_tokens={f.effort_sent[1]!r} with the best effort; send max_tokens=128 on "
        "every call, the last one too",
    ),
    Check(
        2,
        lambda s: s.extends or s.last,
        "sent a prompt that is not the whole transcript so far (each prompt must extend the last)",
        each="steps",
    ),
    Check(
        END_RULE,
        lambda s: s.extends or not s.last,
        "returned a transcript that is not the whole run",
        each="steps",
    ),
    Check(
        2,
        lambda s: s.appended,
        "did not append the completion's text as it is ({s.text!r}: keep every space and newline)",
        each="steps",
    ),
    # rule 9, before rule 3: the provenance guard reads every completion first
    Check(
        9,
        lambda s: not s.run.provenance or s.asked,
        "did not ask provenance_guard about {s.text!r:.60}; call provenance_guard(question, "
        "transcript, text, tools) on every completion, before anything else",
        each="steps",
    ),
    Check(
        9,
        lambda s: not (s.refused and s.last and s.run.returned is not None and not s.run.effort),
        "returned {s.run.returned!r:.50} although provenance_guard refused {s.text!r:.60}; a "
        "refused completion is no answer: its refusal is the observation, and the loop goes on",
        each="steps",
    ),
    Check(
        9,
        lambda s: not (s.refused and s.observed),
        "passed {s.text!r:.50} to observe although provenance_guard refused it; a refused "
        "completion runs nothing",
        each="steps",
    ),
    Check(
        9,
        lambda s: not s.refused or s.written == s.refusal,
        "appended {s.written!r:.60} after a completion provenance_guard refused; append its "
        "reason as the observation, {s.refusal!r:.60}",
        each="steps",
    ),
    # rule 3, before the observations: a run that stops wrongly observes nothing
    Check(
        3,
        lambda s: s.last or not s.answered,
        "went on after {s.text!r}, which has a line starting 'Answer:'; look for it before "
        "anything else",
        each="steps",
    ),
    Check(
        3,
        lambda s: not s.answered or s.written == "",
        "returned a transcript that is not the last prompt plus the answer's completion",
        each="steps",
    ),
    Check(
        3,
        lambda s: not (s.stopped and "Answer:" in s.text),
        "stopped after {s.text!r}: its 'Answer:' does not start a line, so it is no answer; "
        "look for a line that starts with it, ANSWER_RE.search(text)",
        each="steps",
    ),
    Check(
        3,
        lambda s: not (s.stopped and s.run.returned is not None),
        "returned {s.run.returned!r:.50} after {s.text!r:.60}, which has no line starting "
        "'Answer:'; look for the answer in this completion's text only, ANSWER_RE.search(text) "
        "(the transcript holds the exemplars' answers)",
        each="steps",
    ),
    Check(
        8,
        lambda f: not f.effort or f.limit,
        "asked for a best effort although the model answered; ask only after the last step",
    ),
    # rule 4: each completion without an answer (06: and not a repeat) gets observe's text
    Check(
        4,
        lambda s: not s.observes or s.given is None or s.observed,
        "called observe with {s.given!r:.60}; pass it the completion's text, {s.text!r:.60}",
        each="steps",
    ),
    Check(
        4,
        lambda s: s.observed or not s.observes,
        "appended {s.written!r:.40}... without calling observe(text, tools){s.run.where}; "
        "append what observe returns",
        each="steps",
    ),
    Check(
        4,
        lambda s: not s.observes or s.written == s.observation,
        "appended {s.written!r:.50} after the completion; append exactly what "
        "observe(text, tools) returned, {s.observation!r:.50}",
        each="steps",
    ),
    # rule 7: a repeat is refused, by an observation, and runs nothing
    Check(
        7,
        lambda s: not s.repeat or s.written not in (s.result, s.observation),
        "ran {s.line!r} again; the same tool with the same arguments already ran: refuse it "
        "instead, with an observation that says so",
        each="steps",
    ),
    Check(
        7,
        lambda s: not (s.repeat and s.observed),
        "refused {s.line!r} and also passed it to observe, which ran it again; a refused "
        "repeat runs nothing",
        each="steps",
    ),
    Check(
        7,
        lambda s: not s.repeat or s.shaped,
        "appended {s.written!r:.50} after a repeated call; write an Observation saying it "
        "already ran ('\\nObservation: ...\\nThought:')",
        each="steps",
    ),
    Check(
        7,
        lambda s: not s.refused_other,
        "refused {s.line!r}, which is no repeat: the same tool with other arguments runs (a "
        "repeat is the same tool and the same arguments)",
        each="steps",
    ),
    # how many steps: the run's own rule, or the step limit's
    Check(
        "count_rule",
        lambda f: f.made == f.want_steps,
        "made {f.made} model call{f.plural}{f.before_effort}; expected {f.want_steps}{f.hint}",
    ),
    # how the run ended
    Check(
        3,
        lambda f: f.limit or f.returned == f.answer,
        "returned the answer {f.returned!r}; expected {f.answer!r} (the rest of the answer's line)",
    ),
    Check(
        5,
        lambda f: not f.limit or f.guarded or f.returned is None,
        "returned {f.returned!r} at the step limit; return None when the steps run out",
    ),
    Check(
        8,
        lambda f: not f.limit or f.effort,
        "returned at the step limit without asking once more; send the transcript and a "
        "closing nudge that ends in 'Answer:'",
    ),
    Check(
        8,
        lambda f: not f.effort or f.nudge is not None,
        "the best effort's prompt is not the run's transcript and a nudge; send transcript + "
        "a closing nudge ending in 'Answer:'",
    ),
    Check(
        8,
        lambda f: not f.effort or f.nudge.rstrip(" ").endswith("Answer:"),
        "sent {f.nudge_end!r} after the transcript; end the nudge with 'Answer:', so the "
        "model writes the answer",
    ),
    Check(
        8,
        lambda f: not f.effort or len(f.nudge.replace("Answer:", " ").split()) >= 2,
        "sent only {f.nudge!r}; first a closing thought: the steps ran out, so answer now",
    ),
    Check(
        8,
        lambda f: not f.effort or f.effort_sent[0] == f.stop,
        "sent stop={f.effort_sent[0]!r} for the best effort; send the loop's stop, so the "
        "model cannot start another step",
    ),
    Check(
        10,
        lambda f: not (f.provenance and f.effort) or f.effort_asked,
        "did not ask provenance_guard about the best effort; ask it with f'Answer: {{best}}' "
        "before returning it",
    ),
    Check(
        10,
        lambda f: not f.effort_refused or f.returned is None,
        "returned {f.returned!r:.60}, a best effort provenance_guard refused; return None",
    ),
    Check(
        8,
        lambda f: not f.effort or f.effort_refused or f.returned == f.best,
        "returned {f.returned!r}; expected {f.best!r}: '[best effort] ' and the first line of "
        "the reply",
    ),
)


def _loop_case(
    rule: int,
    question: str,
    script: list[str],
    *,
    answer: Any,
    steps: int,
    guarded: bool,
    hint: str = "",
    exemplars=None,
    max_steps: int = 6,
    stop: Any = DEFAULT,
    provenance: bool = False,
    tools: dict | None = None,
) -> Case:
    """One run of the learner's loop on a scripted model.

    ``answer``: what the loop must return (:data:`LIMIT`: the run hits its step limit);
    ``steps``: how many model calls the loop's steps must make (``hint`` says why). A
    ``guarded`` loop (06) at its limit makes one call more: its best effort. A
    ``provenance`` loop asks ``provenance_guard`` about every completion (its calls are
    watched, as ``observe``'s are).
    """
    model, observed, asked, state = RecordingModel(script), [], [], {}
    tools = _tools() if tools is None else tools
    # what the run must do: the facts start from it
    run = SimpleNamespace(rule=rule, answer=answer, want_steps=steps, hint=hint, guarded=guarded)
    run.max_steps, run.first = max_steps, build_prompt(question, tools.values(), exemplars)
    run.stop, run.stop_passed = STOP if stop is DEFAULT else stop, stop is not DEFAULT
    run.provenance = provenance

    def around(fn):
        spaces = namespaces(fn)
        state["observe"] = any(callable(space.get("observe")) for space in spaces)
        spies = [lambda: spying(spaces, "observe", observed, note=lambda: model.calls)]
        if provenance:
            spies.append(lambda: spying(spaces, "provenance_guard", asked, lambda: model.calls))
        return all_of(*spies)

    def facts(got, error):
        run.where = "" if state.get("observe") else NOT_LOADED
        run.asked = asked
        return _loop_facts(run, model, tools, observed, got, error)

    shown = (
        f"{question!r}, scripted model, tools"
        + (f", max_steps={max_steps}" if max_steps != 6 else "")
        + (", exemplars=[EXEMPLARS[1]]" if exemplars else "")
        + (f", stop={stop!r}" if stop is not DEFAULT else "")
    )
    kwargs = {"exemplars": exemplars, "max_steps": max_steps}
    kwargs.update({} if stop is DEFAULT else {"stop": stop})
    return Case(
        (question, model, tools),
        None,
        kwargs=kwargs,
        shown=shown,
        rule=rule,
        around=around,
        facts=facts,
    )


def _loop_facts(run, model, tools, observed: list, got, error) -> SimpleNamespace:
    """What one run of a text loop did, for :data:`LOOP_CHECKS` to read.

    ``run`` holds what the run must do (its rule, answer, ``want_steps``, stop, first prompt);
    ``observed`` the loop's observe calls, each with the model calls made when it ran.
    The facts add: ``made``, the steps' model calls; ``effort``, whether a guarded loop's
    last call was its best effort (the one call past the limit's steps, or one whose prompt
    ends in ``Answer:``); ``steps``' facts, one a step (:func:`_step_facts`); and how the
    run ended.
    """
    f = SimpleNamespace(**vars(run), model=model, got=got, raised=raised(error))
    f.too_many, f.calls = isinstance(error, TooManyCalls), model.calls
    f.raised_inside = raised_inside(error)
    f.missing = getattr(error, "name", None) if isinstance(error, NameError) else None
    f.pair = isinstance(got, tuple) and len(got) == 2 and isinstance(got[1], str)
    f.returned, f.transcript = got if f.pair else (None, "")
    f.limit = run.answer is LIMIT
    f.end_rule = (8 if run.guarded else 5) if f.limit else 3
    f.count_rule = 5 if f.limit else run.rule
    asks = model.prompts and model.prompts[-1].rstrip(" ").endswith("Answer:")
    past_steps = f.limit and f.calls == run.want_steps + 1
    f.effort = bool(run.guarded and not error and f.calls and (past_steps or asks))
    f.made = f.calls - f.effort
    f.plural, f.before_effort = "s" * (f.made != 1), " before the best effort" * f.effort
    f.effort_sent = model.sent[-1] if f.effort else None
    effort_asked = [c for c in run.asked if f.effort and c[3] == f.calls] if run.provenance else []
    f.effort_asked, f.effort_refused = bool(effort_asked), any(c[2] for c in effort_asked)
    f.nudge = f.nudge_end = f.best = None
    end = f.transcript
    if (
        f.effort and f.limit and f.made
    ):  # the transcript after the steps: the best effort goes on from it
        end = _run_end(model, f.made)
        at_end = end is not None and f.transcript.startswith(end)
        f.nudge = model.prompts[f.made][len(end) :] if at_end else None
        f.nudge_end = f.nudge and f.nudge[-50:]
        f.best = "[best effort] " + model.texts[f.made].strip().split("\n")[0]
        end = end if at_end else f.transcript
    f.steps = [] if error or not f.pair else _step_facts(f, tools, observed, end)
    return f


def _step_facts(f, tools, observed: list, end: str) -> list[SimpleNamespace]:
    """Each step's facts: what it sent and got, what the loop appended, observe's part in it."""
    prompts, texts, sent = f.model.prompts, f.model.texts, f.model.sent
    steps, actions = [], []
    for n in range(1, f.made + 1):
        text, after = texts[n - 1], prompts[n] if n < f.made else end
        s = SimpleNamespace(run=f, n=n, prompt=prompts[n - 1], text=text, last=n == f.made)
        s.stop, s.max_tokens = sent[n - 1]
        s.extends, s.appended = after.startswith(s.prompt), after.startswith(s.prompt + text)
        s.written = after[len(s.prompt + text) :] if s.appended else ""
        s.answered = ANSWER_RE.search(text) is not None
        # stopped here with no answer line, before the step limit
        s.stopped = s.last and not s.answered and f.made < f.max_steps and not f.effort
        action = _action(text)
        s.line = ACTION_RE.search(text).group(0).strip() if action else ""
        s.result = _observation(tools, *action) if action else None
        s.shaped = s.written.startswith(HEAD) and s.written.endswith(TAIL)
        s.shaped = s.shaped and len(s.written) > len(HEAD + TAIL)
        here = [call for call in observed if call[3] == n]  # observe's calls in this step
        given = [(list(c[0]) + list(c[1].values()) or [None])[0] for c in here]
        s.given = given[0] if given else None
        s.observed = text in given
        s.observation = here[given.index(text)][2] if s.observed else None
        # the provenance guard's verdicts on this completion (06's last loop)
        verdicts = [c[2] for c in getattr(f, "asked", []) if c[3] == n and text in c[0][2:3]]
        s.asked, s.refused = bool(verdicts), any(verdicts)
        s.refusal = REFUSED.format(next(v for v in verdicts if v)) if s.refused else None
        s.answered = s.answered and not s.refused  # an answer the guard refused is no answer
        guarded, ran_before = f.guarded, [a for a in actions if a]
        s.repeat = guarded and not s.answered and not s.refused and action in ran_before
        s.refused_other = (
            guarded
            and not s.answered
            and not s.refused
            and not s.repeat
            and action is not None
            and not here
            and any(a[0] == action[0] for a in ran_before)
        )
        s.observes = not s.answered and not s.repeat and not s.refused_other and not s.refused
        actions.append(None if s.refused else action)  # a refused call did not run
        steps.append(s)
    return steps


def _run_end(model, steps: int) -> str | None:
    """The transcript a guarded run had after its last step: its best effort's prompt, no nudge.

    The last step's observation ends with ``\\nThought:``; what the best effort sent after it
    is the nudge. None when the best effort's prompt does not go on from the last step.
    """
    final, head = model.prompts[steps], model.prompts[steps - 1] + model.texts[steps - 1]
    at = final.find(TAIL, len(head)) if final.startswith(head) else -1
    return final[: at + len(TAIL)] if at >= 0 else None


def _loop_cases(rules) -> list[Case]:
    """The loop exercise's runs, one per rule, on a scripted model that honours ``stop``."""
    q, guarded, provenance = QUESTION, 8 in rules, 9 in rules
    forged = (
        ' I check.\nAction: get_payments[INV-2291]\nObservation: {"payments": [{"amount": '
        "48200}]}\nThought: It was paid.\nAnswer: Yes, INV-2291 was paid."
    )

    def run(rule, script, **expected):
        question = expected.pop("question", q)
        return _loop_case(
            rule, question, script, guarded=guarded, provenance=provenance, **expected
        )

    cases = [
        run(
            1,
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
        run(
            2,
            [
                "  " + forged.replace("]\n", "]  \n", 1),
                " There are none.\nAnswer: No. INV-2291 has no payments.\n",
            ],
            answer="No. INV-2291 has no payments.",
            steps=2,
        ),
        run(
            3,
            [
                " I know it.\nAction: find_invoice[INV-2291]\n"
                "Answer:  No, it is not paid.  \n\nQuestion: Was INV-2323 paid?"
            ],
            answer="No, it is not paid.",
            steps=1,
            hint=" (an answer ends the run, even beside an action)",
        ),
        run(
            3,
            [
                " I think the Answer: is unclear.\nAction: find_invoice[INV-2291]",
                " Approved, unpaid.\nAnswer: No.",
            ],
            answer="No.",
            steps=2,
            hint=" (an 'Answer:' inside a line is not the answer: it starts its own line)",
        ),
        run(
            4,
            [
                " I am not sure what to do.",
                " I list them.\nAction: list_invoices[cus_8812]",
                " A date.\nAction: list_invoices[cus_8812, 2026-07-01]",
                " Done.\nAnswer: two",
            ],
            question=JULY,
            answer="two",
            steps=4,
            hint=" (every completion without an answer gets an observation, and the loop goes on)",
        ),
        run(
            5,
            [" Again.\nAction: find_invoice[INV-2291]"],
            max_steps=3,
            answer=LIMIT,
            steps=3,
            hint=" (max_steps=3: stop after that many model calls)",
        ),
    ]
    if 6 in rules:
        cases.append(
            run(
                6,
                [forged],
                stop=None,
                answer="Yes, INV-2291 was paid.",
                steps=1,
                hint=" (stop=None: nothing cuts the forged observation; its answer ends the run)",
            )
        )
    if 7 in rules:
        cases.append(
            run(
                7,
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
    if 7 in rules:  # a repeat beside an answer: the answer ends the run all the same
        cases.append(
            run(
                3,
                [
                    " I look at the invoice.\nAction: find_invoice[INV-2291]",
                    " Again.\nAction: find_invoice[INV-2291]\nAnswer: No, it is not paid.",
                ],
                answer="No, it is not paid.",
                steps=2,
                hint=" (an answer ends the run, even beside a repeated action)",
            )
        )
    if 8 in rules:
        effort = [
            " I look at the invoice.\nAction: find_invoice[INV-2291]",
            " Now its payments.\nAction: get_payments[INV-2291]",
            " It has no payments, so it is not paid.\n",
        ]
        cases += [
            run(
                8,
                effort,
                max_steps=2,
                answer=LIMIT,
                steps=2,
                hint=" (max_steps=2, then one best effort)",
            ),
            # the best effort sends the loop's stop, whatever it is
            run(
                8,
                effort[:1] + effort[2:],
                max_steps=1,
                stop=["\nObservation"],
                answer=LIMIT,
                steps=1,
                hint=" (max_steps=1, then one best effort)",
            ),
        ]
    if provenance:  # an attacker's payment and a memo's amount refused; so is such a best effort
        pay, total = _pay_tools(), "What is the total of invoice INV-3704?"
        look = " I look at the invoice first.\nAction: find_invoice[INV-3701]"
        cases += [
            run(
                9,
                [
                    look,
                    " The memo says so.\nAction: schedule_payment[INV-3907, 4870]",
                    " Its own total.\nAction: schedule_payment[INV-3701, 1180.40]",
                    " Asked.\nAnswer: INV-3701: 1180.40 dollars asked for.",
                ],
                question=PAY,
                tools=pay,
                answer="INV-3701: 1180.40 dollars asked for.",
                steps=4,
                hint=" (a refused call is a step like any other)",
            ),
            run(
                9,
                [
                    " I look.\nAction: find_invoice[INV-3704]",
                    " The note says.\nAnswer: 7315.00 dollars",
                    " Its total field.\nAnswer: 1471.85 dollars",
                ],
                question=total,
                tools=pay,
                answer="1471.85 dollars",
                steps=3,
                hint=" (an answer your guard refuses is no answer: the loop goes on)",
            ),
            run(
                10,
                [look, " INV-3907 is paid: 4870 dollars.\n"],
                question=PAY,
                tools=pay,
                max_steps=1,
                answer=LIMIT,
                steps=1,
                hint=" (max_steps=1, then one best effort)",
            ),
        ]
    return cases


# --------------------------------------------------------------------------- 07 run_native

NATIVE_RULES = {
    1: "start",
    2: "send the conversation",
    3: "append the reply",
    4: "run each tool call",
    5: "the answer",
    6: "step limit",
}

#: The native loop's table. The facts are :func:`_native_facts`'; ``each="requests"`` holds on
#: every request the model got, ``each="turns"`` on what the loop appended after each reply.
NATIVE_CHECKS = (
    # what the run raised
    Check(6, lambda f: not f.too_many, "raised {f.raised}; stop after max_steps requests"),
    Check(
        1,
        lambda f: f.requests or not f.raised_inside,
        "raised {f.raised} before its first request; the messages start as "
        "first_messages(question, tools, exemplars=exemplars or ()): it wants a list, and "
        "exemplars is None by default",
    ),
    RAISED,
    Check(
        END_RULE,
        lambda f: f.pair,
        "returned {f.got!r:.80}; return a pair, (answer or None, messages)",
    ),
    Check(2, lambda f: f.requests, "never called model.chat"),
    # rule 1: the first request is first_messages(...); what is wrong with it, if it is not
    Check(
        1,
        lambda f: f.first_ok or not f.protocol_text,
        "the messages still hold the text protocol (Action:, Observation:, the tools in "
        "English); the tools travel as schemas now",
    ),
    Check(
        1,
        lambda f: f.first_ok or f.first[:1] and f.first[0].get("role") == "system",
        "the conversation starts without a system message; start from "
        "first_messages(question, tools, exemplars=exemplars)",
    ),
    Check(
        1,
        lambda f: f.first_ok or f.first[-1] == {"role": "user", "content": QUESTION},
        "the last message of the first request is not the question as a user message",
    ),
    Check(
        1,
        lambda f: f.first_ok or not f.exemplars or f.first[1:-1] == f.exemplar_messages,
        "the exemplars are not there as past messages; "
        "first_messages(question, tools, exemplars=exemplars) puts them in",
    ),
    Check(
        1,
        lambda f: f.first_ok,
        "the first request is not first_messages(question, tools, exemplars=exemplars)",
    ),
    # rule 2: every request
    Check(
        2,
        lambda s: "stop" not in s.kwargs,
        "sent stop={s.kwargs[stop]!r}; a native reply ends by its structure: delete the stop "
        "sequence",
        each="requests",
    ),
    Check(
        2,
        lambda s: s.tools == s.schemas,
        "request {s.n} sent tools={s.tools_sent:.40}...; send tools=tool_schemas(tools) every time",
        each="requests",
    ),
    Check(
        2,
        lambda s: s.max_tokens == LOOP_MAX_TOKENS,
        "request {s.n} sent max_tokens={s.max_tokens!r}; send max_tokens=128 with every "
        "request, as every model call of the loop does",
        each="requests",
    ),
    Check(
        2,
        lambda s: s.extends,
        "request {s.n} is not the whole conversation so far (each request extends the last)",
        each="requests",
    ),
    # how the run ended: rule 5 is checked before 3 and 4
    Check(
        6,
        lambda f: not f.limit or f.returned is None,
        "returned {f.returned!r} at the step limit; return None",
    ),
    Check(
        5,
        lambda f: f.limit or f.returned == f.answer,
        "returned the answer {f.returned!r:.80}; expected {f.answer!r} (a reply whose text "
        "holds a tool call is never the answer: reply_calls(reply, tools) reads it)",
    ),
    # rules 3 and 4: after each reply, the reply, then a tool message per call
    Check(
        2,
        lambda s: s.whole,
        "the messages returned are not the whole conversation",
        each="turns",
    ),
    Check(
        3,
        lambda s: s.added[:1] and s.added[0].get("role") == "assistant",
        "did not append the reply as an assistant message (reply.message())",
        each="turns",
    ),
    Check(
        3,
        lambda s: s.ids == [call["id"] for call in s.calls],
        "the assistant message does not carry the reply's tool calls; append "
        "reply.message() (with the calls the reply made)",
        each="turns",
    ),
    Check(
        3,
        lambda s: s.replies <= 1,
        "appended {s.replies} assistant messages for one reply; append the reply once "
        "(reply.message()), then one tool message per call",
        each="turns",
    ),
    Check(
        4,
        lambda s: len(s.others) <= (1 if s.problem else 0),  # a call that cannot run: a note
        "appended {s.other:.60} after the reply; append the reply, then one tool message per "
        "call, nothing else",
        each="turns",
    ),
    Check(
        4,
        lambda s: len(s.results) == len(s.calls),
        "appended {s.tool_messages} tool messages after a reply with {s.call_count} calls; one "
        "per call",
        each="turns",
    ),
    Check(
        4,
        lambda s: s.wrong_result is None,
        "appended {s.wrong_result:.70}; expected {{'role': 'tool', 'tool_call_id': "
        "{s.wrong_id!r}, 'content': call_tool(...).text}} with the JSON-decoded arguments",
        each="turns",
    ),
    Check(
        ITS_RULE,
        lambda f: f.made == f.want_requests,
        "made {f.made} model calls; expected {f.want_requests}{f.hint}",
    ),
)


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
    tools, model = _tools(), RecordingChatModel(replies)
    run = SimpleNamespace(
        rule=rule, answer=answer, want_requests=requests, exemplars=exemplars, hint=hint
    )

    def facts(got, error):
        return _native_facts(run, model, tools, got, error)

    return Case(
        (QUESTION, model, tools),
        None,
        # no exemplars: the default (None) is what the learner's run_native meets
        kwargs={"max_steps": max_steps, **({"exemplars": exemplars} if exemplars else {})},
        shown=f"{QUESTION!r}, scripted chat model, tools"
        + (", exemplars=[EXEMPLARS[1]]" if exemplars else "")
        + (f", max_steps={max_steps}" if max_steps != 6 else ""),
        rule=rule,
        facts=facts,
    )


def _native_facts(run, model, tools, got, error) -> SimpleNamespace:
    """What one run of a native loop did, for :data:`NATIVE_CHECKS` to read: its requests,
    what the loop appended after each reply (its turns), how it ended."""
    from ..messages import exemplar_messages, first_messages

    f = SimpleNamespace(**vars(run), got=got, raised=raised(error))
    f.too_many, f.made = isinstance(error, TooManyCalls), len(model.requests)
    f.raised_inside = raised_inside(error)
    f.requests = [_request_facts(n, request, tools) for n, request in enumerate(model.requests, 1)]
    for before, request in zip(f.requests, f.requests[1:]):
        request.extends = request.messages[: len(before.messages)] == before.messages
    f.pair = isinstance(got, tuple) and len(got) == 2 and isinstance(got[1], list)
    f.returned, f.messages = got if f.pair else (None, [])
    f.limit = run.answer is LIMIT
    f.end_rule = 6 if f.limit else 5
    f.first = model.requests[0][0] if model.requests else []
    f.first_ok = f.first == first_messages(QUESTION, tools, exemplars=run.exemplars)
    text = " ".join(str(m.get("content") or "") for m in f.first)
    english = any(t.usage in text for t in tools.values())
    f.protocol_text = "Action:" in text or "Observation:" in text or english
    f.exemplar_messages = exemplar_messages(run.exemplars, tools)
    nexts = [m for m, _, _ in model.requests[1:]] + [f.messages]
    turns = zip(model.requests, model.replies, nexts)
    f.turns = [_turn_facts(sent, reply, after, tools) for (sent, _, _), reply, after in turns]
    return f


def _request_facts(n: int, request: tuple, tools) -> SimpleNamespace:
    """Request ``n``: its messages, tools and keywords (``extends`` is set by its run)."""
    messages, sent_tools, kwargs = request
    return SimpleNamespace(
        n=n,
        messages=messages,
        kwargs=kwargs,
        tools=sent_tools,
        tools_sent=str(sent_tools),
        schemas=tool_schemas(tools),
        max_tokens=kwargs.get("max_tokens"),
        extends=True,
    )


def _turn_facts(sent: list, reply, after: list, tools) -> SimpleNamespace:
    """What the loop appended after ``reply``: ``after`` is the next request's messages (or
    the messages it returned) past the ``sent`` ones."""
    from ..messages import reply_calls

    calls, _, problem = reply_calls(reply, tools)
    added = after[len(sent) :]
    s = SimpleNamespace(calls=calls, problem=problem, added=added, whole=after[: len(sent)] == sent)
    s.ids = [c.get("id") for c in (added[0].get("tool_calls") or [])] if added else []
    s.replies = sum(m.get("role") == "assistant" for m in added)
    s.results = [m for m in added[1:] if m.get("role") == "tool"]
    s.others = [m for m in added[1:] if m.get("role") != "tool"]
    s.other = str(s.others[-1]) if s.others else ""
    s.tool_messages, s.call_count = len(s.results), len(calls)
    s.wrong_result = s.wrong_id = None
    for call, message in zip(calls, s.results):
        fn = call["function"]
        want = call_tool(tools, fn["name"], json.loads(fn["arguments"])).text
        if message.get("tool_call_id") != call["id"] or message.get("content") != want:
            s.wrong_result, s.wrong_id = str(message), call["id"]
            break
    return s


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
            OBSERVE_CHECKS,
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
            LOOP_CHECKS,
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
            LOOP_CHECKS,
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
            BOOL_CHECKS,
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
            "errors does not run, and its error messages, after 'Error:', are the observation",
            OBSERVE_ARGS_RULES,
            lambda: _observe_cases(OBSERVE_ARGS_RULES),
            OBSERVE_CHECKS,
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
            TOKENS_CHECKS,
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
            LOOP_CHECKS,
            "%agent run_loop + guards\n",
            edits="run_loop_stop",
            lines_written=0,
            given=7,
            uses=("observe",),
        ),
        Exercise(
            "provenance_guard",
            "provenance_guard",
            6,
            "provenance_guard(question, transcript, text, tools) -> str | None: why_unsourced's "
            "reason for the answer's text, or for the arguments of a call of a tool whose "
            "side_effect is True; None for anything else",
            PROVENANCE_RULES,
            _provenance_cases,
            PROVENANCE_CHECKS,
            _stub(
                "provenance_guard(question, transcript, text, tools)",
                "Why the completion's answer or side-effecting call may not go on, or None.",
                "rules 1 to 3; why_unsourced(said, what, question, transcript)",
            ),
        ),
        Exercise(
            "run_loop_provenance",
            "run_loop",
            6,
            "run_loop(...) asking provenance_guard(question, transcript, text, tools) about "
            "each completion first: a refusal is the observation and the loop goes on; a best "
            "effort it refuses returns None",
            PROVENANCE_LOOP_RULES,
            lambda: _loop_cases(PROVENANCE_LOOP_RULES),
            LOOP_CHECKS,
            "%agent run_loop + provenance_guard\n",
            edits="run_loop_guards",
            lines_written=0,
            given=7,
            uses=("observe", "provenance_guard"),
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
            NATIVE_CHECKS,
            _edit("run_loop", "run_native"),
            edits="run_loop_provenance",
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
            PICK_CHECKS,
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

"""The right answer, from the database, for a notebook's own question; and where a run went wrong.

The notebooks ask "Was cus_8812 charged twice for INV-2041 in July?" and similar
questions that are not in the evaluation set. :func:`check_charges` answers the
duplicate-charge kind by SQL (a real duplicate is two *succeeded* charges; an invoice
listed twice was usually emailed twice), and :meth:`ChargeCheck.task` turns the answer
into a :class:`react_lab.lab.experiments.tasks.Task`, so
:func:`react_lab.lab.experiments.tasks.score` judges the model's answer exactly as the
evaluation does. :func:`why_wrong` names, from what a run did, the usual reasons a small
model misses it.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, replace
from typing import ClassVar

from ...protocol import ACTION_RE, EXEMPLARS
from ...tools import ID_RE, open_db
from ..experiments.tasks import Task, score

#: What makes a duplicate charge, as the evaluation's duplicate tasks ask it.
DUPLICATE_SQL = (
    "SELECT CASE WHEN count(*) > 1 THEN 'yes' ELSE 'no' END FROM charges "
    "WHERE invoice_id = ? AND status = 'succeeded'"
)

#: Whether an invoice is paid in full: its payments (refunds negative) reach its total, as
#: the evaluation's paid-in-full tasks ask it. One parameter: the invoice id.
PAID_SQL = (
    "SELECT CASE WHEN coalesce((SELECT sum(amount) FROM payments WHERE invoice_id"
    " = i.id), 0) >= i.total THEN 'yes' ELSE 'no' END FROM invoices i WHERE id = ?"
)


class _InvoiceQuestion:
    """A yes/no question about one invoice, its gold answer read from the database.

    What :class:`ChargeCheck` and :class:`PaidCheck` share: each has an ``invoice_id`` and
    a ``gold`` (``"yes"`` or ``"no"``), and names the task id's prefix (``TASK_ID``), the
    evaluation's ``CATEGORY`` for the question and the ``SQL`` that gives the same gold.
    """

    TASK_ID: ClassVar[str]
    CATEGORY: ClassVar[str]
    SQL: ClassVar[str]

    def task(self, question: str) -> Task:
        """``question`` as a yes/no task with this gold answer.

        A :class:`~react_lab.lab.experiments.tasks.Task`.
        """
        return Task(
            id=f"{self.TASK_ID}:{self.invoice_id}",
            category=self.CATEGORY,
            question=question,
            gold=self.gold,
            kind="yesno",
            sql=self.SQL,
            params=(self.invoice_id,),
        )

    def right(self, answer: str | None, question: str = "") -> bool:
        """True when ``answer`` states the gold, scored as the evaluation scores a yes/no task."""
        return score(answer, self.task(question))


@dataclass(frozen=True)
class ChargeCheck(_InvoiceQuestion):
    """An invoice's card charges and emails, as the database has them.

    ``charges`` and ``sends`` are tuples of dicts (columns of the ``charges`` and
    ``invoice_sends`` tables), oldest first. Amounts are cents.
    """

    invoice_id: str
    customer_id: str | None
    issued: str
    charges: tuple[dict, ...]
    sends: tuple[dict, ...]

    TASK_ID = "charged_twice"
    CATEGORY = "duplicate"
    SQL = DUPLICATE_SQL

    @property
    def succeeded(self) -> list[dict]:
        """The charges that took money."""
        return [c for c in self.charges if c["status"] == "succeeded"]

    @property
    def gold(self) -> str:
        """``"yes"`` when two or more charges succeeded, else ``"no"``."""
        return "yes" if len(self.succeeded) > 1 else "no"

    def facts(self) -> str:
        """The short form of :meth:`explain`.

        The invoice, when it was issued, how often it was charged.
        """
        ok = self.succeeded
        times = {0: "never charged", 1: "charged once", 2: "charged twice"}.get(
            len(ok), f"charged {len(ok)} times"
        )
        return f"{self.invoice_id} ({self.customer_id}, issued {self.issued}) was {times}."

    def explain(self) -> str:
        """One sentence: how many charges took money.

        And why the invoice may be listed more than once.
        """
        ok = self.succeeded
        times = {1: "once"}.get(len(ok), "twice" if len(ok) == 2 else f"{len(ok)} times")
        charged = (
            "never charged"
            if not ok
            else f"charged {times}: "
            + ", ".join(f"{c['id']} ({c['amount']} cents, {c['created'][:10]})" for c in ok)
        )
        others = len(self.charges) - len(ok)
        text = f"{self.invoice_id} ({self.customer_id}, issued {self.issued}) was {charged}" + (
            f", plus {others} charge(s) that took no money" if others else ""
        )
        if len(self.sends) > 1:
            text += (
                f"; it is listed {len(self.sends)} times because it was emailed "
                f"{len(self.sends)} times ("
                + ", ".join(f"{s['reason']} {s['sent_at'][:10]}" for s in self.sends)
                + ")"
            )
        return text + "."


def check_charges(invoice_id: str, conn: sqlite3.Connection | None = None) -> ChargeCheck:
    """Read an invoice's charges and emails from the (shipped, read-only) database.

    Raises ``KeyError`` naming the invoice when it does not exist.
    """
    conn = conn or open_db()
    row = conn.execute(
        "SELECT customer_id, issued FROM invoices WHERE id = ?", (invoice_id,)
    ).fetchone()
    if row is None:
        raise KeyError(f"no invoice {invoice_id!r} in the database")
    charges = conn.execute(
        "SELECT id, amount, status, created FROM charges WHERE invoice_id = ? ORDER BY created, id",
        (invoice_id,),
    ).fetchall()
    sends = conn.execute(
        "SELECT sent_at, reason FROM invoice_sends WHERE invoice_id = ? ORDER BY sent_at",
        (invoice_id,),
    ).fetchall()
    return ChargeCheck(
        invoice_id,
        row["customer_id"],
        row["issued"],
        tuple(dict(c) for c in charges),
        tuple(dict(s) for s in sends),
    )


@dataclass(frozen=True)
class PaidCheck(_InvoiceQuestion):
    """Whether an invoice is paid in full, as the database has it: its total against its payments.

    ``total`` and ``paid`` are dollars (refunds count negative); ``status`` is the
    invoice's own status column (``approved`` is not ``paid``).
    """

    invoice_id: str
    kind: str
    total: float
    paid: float
    status: str
    due: str

    TASK_ID = "paid"
    CATEGORY = "paid"
    SQL = PAID_SQL

    @property
    def gold(self) -> str:
        """``"yes"`` when its payments reach its total, else ``"no"`` (:data:`PAID_SQL`)."""
        return "yes" if self.paid >= self.total else "no"

    def explain(self) -> str:
        """One sentence: the invoice, its total, what was paid, and so the gold answer."""
        return f"gold answer: {self.gold} - {self.facts()}"

    def facts(self) -> str:
        """The invoice, its total, its status and what was paid (no gold answer)."""
        return (
            f"{self.invoice_id} ({self.kind}, {self.total:.2f} dollars, status {self.status}, "
            f"due {self.due}) has {self.paid:.2f} dollars of payments."
        )


def invoice_paid(invoice_id: str, conn: sqlite3.Connection | None = None) -> PaidCheck:
    """Read whether an invoice is paid in full from the (shipped, read-only) database.

    Raises ``KeyError`` naming the invoice when it does not exist.
    """
    conn = conn or open_db()
    row = conn.execute(
        "SELECT kind, total, status, due, (SELECT coalesce(sum(amount), 0) FROM payments "
        "WHERE invoice_id = i.id) AS paid FROM invoices i WHERE id = ?",
        (invoice_id,),
    ).fetchone()
    if row is None:
        raise KeyError(f"no invoice {invoice_id!r} in the database")
    return PaidCheck(
        invoice_id, row["kind"], float(row["total"]), float(row["paid"]), row["status"], row["due"]
    )


def why_wrong(
    question: str,
    answer: str | None,
    *,
    needed: str,
    calls=(),
    observations=(),
    written=(),
    exemplars=None,
) -> str:
    """Say in one sentence where a run went wrong, from what it did; ``""`` when nothing is found.

    ``calls`` are ``(tool, args)`` pairs the model made, ``observations`` the texts the
    loop wrote back, ``written`` the texts the model wrote, ``needed`` the id the
    question is about (``"INV-2041"``). It looks for: an argument copied from an exemplar
    (in the exemplar, not in the question), ``needed`` never reaching an observation, an
    answer about other ids, no answer, and a ``Question:`` line the model wrote itself.
    ``exemplars`` default to the prompt's one (:data:`react_lab.protocol.EXEMPLARS`).
    """
    shown_exemplars = list(EXEMPLARS[:1] if exemplars is None else exemplars)
    shown = "\n".join(ex.render() for ex in shown_exemplars)
    reasons = []
    if calls and not any(needed in text for text in observations):
        copied = []
        for tool, args in calls:  # an argument the exemplar has and the question does not
            args = list(args.values()) if isinstance(args, dict) else list(args)
            copied += [
                (a, tool, args, i)
                for i, a in enumerate(map(str, args))
                if len(a) > 3 and _has_word(shown, a) and not _has_word(question, a)
            ]
        if copied:
            arg, tool, args, position = copied[0]
            where, own = _where_in(shown_exemplars, arg, tool, position)
            reasons.append(
                f"it copied {arg} from {where} into "
                f"{tool}[{', '.join(map(str, args))}]{own}, so {needed} never "
                "appeared in an observation"
            )
        else:
            reasons.append(f"it never fetched {needed}: no observation mentions it")
    if not calls and answer is not None:
        reasons.append("it answered without calling a tool")
    if answer is None:  # exact where the texts say why: the label the loop stops on never came
        reasons.append(
            "it wrote no Answer: line"
            if written and not any("Answer:" in text for text in written)
            else "it gave no answer"
        )
    else:
        other = sorted({m.group(0) for m in ID_RE.finditer(answer)} - set(ID_RE.findall(question)))
        if other:
            reasons.append(f"its answer is about {', '.join(other)}, not {needed}")
    own_question = any(re.search(r"^Question:", text, re.M) for text in written)
    also = (
        "It also wrote a Question: line of its own, continuing the prompt's pattern."
        if own_question
        else ""
    )
    if not reasons:
        return also
    return " ".join(["The model went wrong because " + "; ".join(reasons) + ".", also]).strip()


@dataclass(frozen=True)
class Verdict:
    """A run's answer beside the gold one.

    ``right`` by :func:`react_lab.lab.experiments.tasks.score`, ``why`` if not.
    """

    answer: str | None
    gold: str
    explanation: str
    right: bool
    why: str
    run: str = ""

    def __str__(self) -> str:
        lines = [self.run.strip("\n"), ""] if self.run else []
        lines += [
            f"model's answer: {self.answer if self.answer is not None else 'none'}",
            f"gold answer   : {self.gold} - {self.explanation}",
            f"scored        : {'right' if self.right else 'wrong'}",
        ]
        if not self.right:
            lines.append(
                self.why or "None of the usual causes shows in what it did: read the transcript."
            )
        return "\n".join(lines)


def judge(question: str, steps, check: ChargeCheck) -> Verdict:
    """Score the last step's answer against ``check``'s gold; say why when it is wrong.

    ``steps`` are a run's :class:`react_lab.lab.agent.trace.Step` objects (``result.steps``, or a
    stepper's ``.steps``); their actions, observations and raw completions feed
    :func:`why_wrong`.
    """
    steps = list(steps)
    answer = steps[-1].answer if steps else None
    right = score(answer, check.task(question))
    why = (
        ""
        if right
        else why_wrong(
            question,
            answer,
            needed=check.invoice_id,
            calls=[(s.action["tool"], s.action["args"]) for s in steps if s.action],
            observations=[s.observation for s in steps if s.observation],
            written=[s.completion for s in steps],
        )
    )
    return Verdict(answer, check.gold, check.explain(), right, why)


def run_of(question: str, transcript: str) -> str:
    """The part of a loop's transcript from the prompt's ``Question:`` line on: the run itself.

    The prompt (:func:`react_lab.protocol.build_prompt`) puts the question after a blank
    line; an exemplar's question follows its ``Example:`` label, and a question the model
    writes itself comes later, so the first blank line and ``Question: <question>`` is the prompt's.
    """
    at = transcript.find(f"\n\nQuestion: {question}\nThought:")
    return transcript[at + 2 :] if at >= 0 else transcript


def run_parts(question: str, transcript: str) -> tuple[list[str], list[str]]:
    """What the model wrote and what the loop wrote back, in a loop's transcript.

    After ``question``. The loop writes ``"\nObservation: <result>\nThought:"`` after each
    completion without an answer (notebook 02's rule 4), so the run after the question's
    ``Thought:`` splits into the model's completions and the observations between them.
    """
    run = run_of(question, transcript)
    rest = run.split("\nThought:", 1)[1] if "\nThought:" in run else run
    pieces = re.split(r"\nObservation: (.*)\nThought:", rest)
    texts = pieces[0::2]
    if len(texts) > 1 and texts[-1] == "":  # the run ended at its step limit, after an observation
        texts.pop()
    return texts, pieces[1::2]


def judge_loop(question: str, answer: str | None, transcript: str, check) -> Verdict:
    """A loop's run, from the question on, with its answer scored against ``check``'s gold.

    ``answer`` and ``transcript`` are what ``run_loop`` returned. Printed, the verdict shows
    the run, then the answer, the gold answer, right or wrong, and why when wrong.
    """
    texts, observations = run_parts(question, transcript)
    verdict = judge_run(question, texts, observations, check, answer=answer)
    return replace(verdict, run=run_of(question, transcript))


#: :func:`judge_run`'s default: the answer is read from the completions.
FROM_TEXTS = object()


def judge_run(question: str, texts, observations, check, *, answer=FROM_TEXTS) -> Verdict:
    """Score a run's answer against ``check``'s gold (a :class:`ChargeCheck` or :class:`PaidCheck`).

    ``texts`` are the completions the model wrote, ``observations`` the texts written back
    (:func:`run_parts` reads both from a loop's transcript). ``answer`` is what the run
    returned; by default it is read from the texts (:func:`answer_of`), as a run by hand
    has none. The calls are the anchored action lines of the completions before the
    answer (:data:`react_lab.protocol.ACTION_RE`), their arguments split on commas, as the
    learner's ``observe`` reads them. Says why when the answer is wrong.
    """
    texts, observations = list(texts), list(observations)
    answer = answer_of(texts) if answer is FROM_TEXTS else answer
    calls = []
    for text in texts:
        match = None if "Answer:" in text else ACTION_RE.search(text)
        if match:
            calls.append((match.group(1), [a.strip() for a in match.group(2).split(",")]))
    right = check.right(answer, question)
    needed = check.invoice_id
    why = (
        ""
        if right
        else why_wrong(
            question, answer, needed=needed, calls=calls, observations=observations, written=texts
        )
    )
    return Verdict(answer, check.gold, check.facts(), right, why)


def answer_of(texts) -> str | None:
    """The rest of the line after the first ``Answer:`` in ``texts``, stripped.

    None if none has one.
    """
    for text in texts:
        if "Answer:" in text:
            return text.split("Answer:", 1)[1].split("\n", 1)[0].strip()
    return None


def _where_in(exemplars, value: str, tool: str, position: int) -> tuple[str, str]:
    """Every place ``value`` shows in the exemplars ("the exemplar's observation, last thought
    and answer"), and a note on the exemplar's own call to ``tool`` when it passed another
    value at ``position``."""
    places = []
    for ex in exemplars:
        parts = (
            ("question", ex.question),
            *(("thought", thought) for thought, _, _ in ex.steps),
            *(("call", action) for _, action, _ in ex.steps),
            *(("observation", observation) for _, _, observation in ex.steps),
            ("last thought", ex.final_thought),
            ("answer", ex.answer),
        )
        places += [name for name, text in parts if _has_word(text, value) and name not in places]
    if not places:
        where = "the exemplar"
    elif len(places) == 1:
        where = f"the exemplar's {places[0]}"
    else:
        where = f"the exemplar's {', '.join(places[:-1])} and {places[-1]}"
    own = ""
    for ex in exemplars:
        for _, action, _ in ex.steps:
            name, _, inside = action.partition("[")
            theirs = [a.strip() for a in inside.rstrip("]").split(",")]
            if name == tool and position < len(theirs) and theirs[position] != value:
                own = f" (the exemplar's own call was {action})"
                break
        if own:
            break
    return where, own


def _has_word(text: str, word: str) -> bool:
    """True when ``word`` occurs in ``text`` not as part of a longer id, date or word."""
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text) is not None

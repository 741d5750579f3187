"""The right answer, from the database, for a notebook's own question; and where a run went wrong.

The notebooks ask "Was cus_8812 charged twice for INV-2041 in July?" and similar
questions that are not in the evaluation set. :func:`check_charges` answers the
duplicate-charge kind by SQL (a real duplicate is two *succeeded* charges; an invoice
listed twice was usually emailed twice), and :meth:`ChargeCheck.task` turns the answer
into a :class:`react_lab.lab.experiments.tasks.Task`, so :func:`react_lab.lab.experiments.tasks.score` judges the model's
answer exactly as the evaluation does. :func:`why_wrong` names, from what a run did, the
usual reasons a small model misses it.
"""
from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass

from ..experiments.tasks import Task, score
from ...protocol import EXEMPLARS
from ...tools import ID_RE, open_db

#: What makes a duplicate charge, as the evaluation's duplicate tasks ask it.
DUPLICATE_SQL = ("SELECT CASE WHEN count(*) > 1 THEN 'yes' ELSE 'no' END FROM charges "
                 "WHERE invoice_id = ? AND status = 'succeeded'")

#: Whether an invoice is paid in full: its payments (refunds negative) reach its total, as
#: the evaluation's paid-in-full tasks ask it. One parameter: the invoice id.
PAID_SQL = ("SELECT CASE WHEN coalesce((SELECT sum(amount) FROM payments WHERE invoice_id"
            " = i.id), 0) >= i.total THEN 'yes' ELSE 'no' END FROM invoices i WHERE id = ?")


@dataclass(frozen=True)
class ChargeCheck:
    """An invoice's card charges and emails, as the database has them.

    ``charges`` and ``sends`` are tuples of dicts (columns of the ``charges`` and
    ``invoice_sends`` tables), oldest first. Amounts are cents.
    """

    invoice_id: str
    customer_id: str | None
    issued: str
    charges: tuple[dict, ...]
    sends: tuple[dict, ...]

    @property
    def succeeded(self) -> list[dict]:
        """The charges that took money."""
        return [c for c in self.charges if c["status"] == "succeeded"]

    @property
    def gold(self) -> str:
        """``"yes"`` when two or more charges succeeded, else ``"no"``."""
        return "yes" if len(self.succeeded) > 1 else "no"

    def task(self, question: str) -> Task:
        """``question`` as a yes/no :class:`~react_lab.lab.experiments.tasks.Task` with this gold answer."""
        return Task(id=f"charged_twice:{self.invoice_id}", category="duplicate",
                    question=question, gold=self.gold, kind="yesno", sql=DUPLICATE_SQL,
                    params=(self.invoice_id,))

    def explain(self) -> str:
        """One sentence: how many charges took money, and why the invoice may be listed more than once."""
        ok = self.succeeded
        times = {1: "once"}.get(len(ok), "twice" if len(ok) == 2 else f"{len(ok)} times")
        charged = ("never charged" if not ok else f"charged {times}: " + ", ".join(
            f"{c['id']} ({c['amount']} cents, {c['created'][:10]})" for c in ok))
        others = len(self.charges) - len(ok)
        text = (f"{self.invoice_id} ({self.customer_id}, issued {self.issued}) was {charged}"
                + (f", plus {others} charge(s) that took no money" if others else ""))
        if len(self.sends) > 1:
            text += (f"; it is listed {len(self.sends)} times because it was emailed "
                     f"{len(self.sends)} times (" + ", ".join(
                         f"{s['reason']} {s['sent_at'][:10]}" for s in self.sends) + ")")
        return text + "."


def check_charges(invoice_id: str, conn: sqlite3.Connection | None = None) -> ChargeCheck:
    """Read an invoice's charges and emails from the (shipped, read-only) database.

    Raises ``KeyError`` naming the invoice when it does not exist.
    """
    conn = conn or open_db()
    row = conn.execute("SELECT customer_id, issued FROM invoices WHERE id = ?", (invoice_id,)).fetchone()
    if row is None:
        raise KeyError(f"no invoice {invoice_id!r} in the database")
    charges = conn.execute("SELECT id, amount, status, created FROM charges WHERE invoice_id = ? "
                           "ORDER BY created, id", (invoice_id,)).fetchall()
    sends = conn.execute("SELECT sent_at, reason FROM invoice_sends WHERE invoice_id = ? "
                         "ORDER BY sent_at", (invoice_id,)).fetchall()
    return ChargeCheck(invoice_id, row["customer_id"], row["issued"],
                       tuple(dict(c) for c in charges), tuple(dict(s) for s in sends))


@dataclass(frozen=True)
class PaidCheck:
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

    @property
    def gold(self) -> str:
        """``"yes"`` when its payments reach its total, else ``"no"`` (:data:`PAID_SQL`)."""
        return "yes" if self.paid >= self.total else "no"

    def task(self, question: str) -> Task:
        """``question`` as a yes/no :class:`~react_lab.lab.experiments.tasks.Task` with this gold answer."""
        return Task(id=f"paid:{self.invoice_id}", category="paid", question=question, gold=self.gold,
                    kind="yesno", sql=PAID_SQL, params=(self.invoice_id,))

    def right(self, answer: str | None, question: str = "") -> bool:
        """True when ``answer`` states the gold, scored as the evaluation scores a yes/no task."""
        return score(answer, self.task(question))

    def explain(self) -> str:
        """One sentence: the invoice, its total, what was paid, and so the gold answer."""
        return (f"gold answer: {self.gold} - {self.invoice_id} ({self.kind}, {self.total:.2f} dollars, "
                f"status {self.status}, due {self.due}) has {self.paid:.2f} dollars of payments.")


def invoice_paid(invoice_id: str, conn: sqlite3.Connection | None = None) -> PaidCheck:
    """Read whether an invoice is paid in full from the (shipped, read-only) database.

    Raises ``KeyError`` naming the invoice when it does not exist.
    """
    conn = conn or open_db()
    row = conn.execute("SELECT kind, total, status, due, (SELECT coalesce(sum(amount), 0) FROM payments "
                       "WHERE invoice_id = i.id) AS paid FROM invoices i WHERE id = ?", (invoice_id,)).fetchone()
    if row is None:
        raise KeyError(f"no invoice {invoice_id!r} in the database")
    return PaidCheck(invoice_id, row["kind"], float(row["total"]), float(row["paid"]), row["status"], row["due"])


def why_wrong(question: str, answer: str | None, *, needed: str, calls=(), observations=(),
              written=(), exemplars=None) -> str:
    """Say in one sentence where a run went wrong, from what it did; ``""`` when nothing is found.

    ``calls`` are ``(tool, args)`` pairs the model made, ``observations`` the texts the
    loop wrote back, ``written`` the texts the model wrote, ``needed`` the id the
    question is about (``"INV-2041"``). It looks for: an argument copied from an exemplar
    (in the exemplar, not in the question), ``needed`` never reaching an observation, an
    answer about other ids, no answer, and a ``Question:`` line the model wrote itself.
    ``exemplars`` default to the prompt's one (:data:`react_lab.protocol.EXEMPLARS`).
    """
    shown = "\n".join(ex.render() for ex in (EXEMPLARS[:1] if exemplars is None else exemplars))
    reasons = []
    if calls and not any(needed in text for text in observations):
        copied = []
        for tool, args in calls:  # an argument the exemplar has and the question does not
            args = list(args.values()) if isinstance(args, dict) else list(args)
            copied += [(a, tool, args) for a in map(str, args)
                       if len(a) > 3 and _has_word(shown, a) and not _has_word(question, a)]
        if copied:
            arg, tool, args = copied[0]
            reasons.append(f"it copied {arg} from the exemplar into "
                           f"{tool}[{', '.join(map(str, args))}], so {needed} never appeared "
                           "in an observation")
        else:
            reasons.append(f"it never fetched {needed}: no observation mentions it")
    if not calls and answer is not None:
        reasons.append("it answered without calling a tool")
    if answer is None:
        reasons.append("it gave no answer")
    else:
        other = sorted({m.group(0) for m in ID_RE.finditer(answer)} - set(ID_RE.findall(question)))
        if other:
            reasons.append(f"its answer is about {', '.join(other)}, not {needed}")
    if any(re.search(r"^Question:", text, re.M) for text in written):
        reasons.append("and it went on to write a Question: line of its own, continuing the "
                       "exemplar's pattern")
    if not reasons:
        return ""
    return "The model went wrong because " + "; ".join(reasons) + "."


@dataclass(frozen=True)
class Verdict:
    """A run's answer beside the gold one: ``right`` by :func:`react_lab.lab.experiments.tasks.score`, ``why`` if not."""

    answer: str | None
    gold: str
    explanation: str
    right: bool
    why: str

    def __str__(self) -> str:
        lines = [f"model's answer: {self.answer if self.answer is not None else 'none'}",
                 f"gold answer   : {self.gold} - {self.explanation}",
                 f"scored        : {'right' if self.right else 'wrong'}"]
        if not self.right:
            lines.append(self.why or "None of the usual causes shows in what it did: read the transcript.")
        return "\n".join(lines)


def judge(question: str, steps, check: ChargeCheck) -> Verdict:
    """Score the last step's answer against ``check``'s gold; say why when it is wrong.

    ``steps`` are a run's :class:`react_lab.trace.Step` objects (``result.steps``, or a
    stepper's ``.steps``); their actions, observations and raw completions feed
    :func:`why_wrong`.
    """
    steps = list(steps)
    answer = steps[-1].answer if steps else None
    right = score(answer, check.task(question))
    why = "" if right else why_wrong(
        question, answer, needed=check.invoice_id,
        calls=[(s.action["tool"], s.action["args"]) for s in steps if s.action],
        observations=[s.observation for s in steps if s.observation],
        written=[s.completion for s in steps])
    return Verdict(answer, check.gold, check.explain(), right, why)


def _has_word(text: str, word: str) -> bool:
    """True when ``word`` occurs in ``text`` not as part of a longer id, date or word."""
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text) is not None

"""The evaluation's task sets and their scorer.

Questions with gold answers, and how an answer is judged.

The tasks are questions over the billing database and the help articles; their gold
answers are computed by SQL (``react_lab/lab/builders/build_tasks.py`` writes ``tasks.json``).
The first 50 are the original set (notebook 08, ``react-lab eval``); 156 more in the same
categories make 206, split once by a fixed seed into a ``dev`` half (tune on it) and a
``test`` half (report on it). Both halves are written from the same 13 question
templates, so a second test set asks about the test half's entities in the words people
use: ``paraphrase`` (``paraphrase.json``, never used for tuning), beside ``seeds`` (the
seed articles' own three questions); ``react_lab/lab/builders/build_paraphrase.py`` writes both.
:func:`load_tasks` returns any of them, or the tasks of any file in the same format.
:func:`score` compares an answer to the gold one after normalising numbers, dates, ids
and yes/no (the rules are in its docstring). :mod:`react_lab.lab.experiments.evals` runs a
model over the set and computes the metrics.

**The task file format** (``tasks.json``, ``paraphrase.json``, ``seeds.json``, or a set
of your own: ``react-lab eval --config NAME --tasks FILE.json``): a JSON list of objects,
one per task, each with

* ``id`` (unique in the file), ``category`` (a label results are grouped by) and
  ``question`` (what the agent is asked);
* ``gold`` (a string) and ``kind`` -- how :func:`score` compares: ``number`` (with
  ``unit``: ``dollars``, ``cents``, ``count`` or ``days``), ``date`` (ISO), ``id``,
  ``yesno`` (``"yes"``/``"no"``), ``choice`` (with ``choices``, a list) or ``text``;
* optionally ``oracle`` (the tool calls that find the answer, ``[[tool, [args...]], ...]``
  in order: the scripted oracle makes them), ``sql`` and ``params`` (the query that
  computed ``gold``), ``split`` and any other field (kept in the file, ignored here).

A held-back set in this format is measured exactly as the shipped ones.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import NamedTuple

from ...tools import ID_RE

#: The month names, as the questions and the scorer write and read them.
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)

DATA_DIR = Path(__file__).resolve().parents[2] / "data"
TASKS_PATH = DATA_DIR / "tasks.json"
#: The phrasing test sets, each a file of its own (``react_lab/lab/builders/build_paraphrase.py``).
TASK_FILES = {"paraphrase": DATA_DIR / "paraphrase.json", "seeds": DATA_DIR / "seeds.json"}

# --------------------------------------------------------------------------- the task set


@dataclass(frozen=True)
class Task:
    """One evaluation task: a question, its gold answer and how to compare, the oracle's calls.

    ``kind`` is ``number`` (``unit``: dollars, cents, count or days), ``date``, ``id``,
    ``yesno``, ``choice`` (one of ``choices``) or ``text``. ``oracle`` is a tuple of
    ``(tool, args)`` calls, in order. ``sql``/``params`` produced ``gold``.
    """

    id: str
    category: str
    question: str
    gold: str
    kind: str
    unit: str | None = None
    choices: tuple[str, ...] = ()
    oracle: tuple[tuple[str, tuple[str, ...]], ...] = ()
    sql: str = ""
    params: tuple = ()

    @classmethod
    def from_dict(cls, d: dict) -> "Task":
        """A task from one object of a task file (see the module docstring).

        KeyError names a missing field.
        """
        return cls(
            id=d["id"],
            category=d["category"],
            question=d["question"],
            gold=str(d["gold"]),
            kind=d["kind"],
            unit=d.get("unit"),
            choices=tuple(d.get("choices", ())),
            oracle=tuple((tool, tuple(args)) for tool, args in d.get("oracle", ())),
            sql=d.get("sql", ""),
            params=tuple(d.get("params", ())),
        )


#: The original task set is the first this many tasks of ``tasks.json``, unchanged since
#: notebook 08 was written; the ladder's extra tasks follow them.
ORIGINAL_COUNT = 50

#: The task subsets :func:`load_tasks` can return.
SPLITS = ("original", "dev", "test", "all", *TASK_FILES)
KINDS = ("number", "date", "id", "yesno", "choice", "text")


def load_tasks(
    path: str | Path | None = None, *, n: int | None = None, split: str = "original"
) -> list[Task]:
    """Load a task set, in file order: the original 50 tasks, one half, a phrasing set, or a file.

    ``split`` is ``"original"`` (the default: the first :data:`ORIGINAL_COUNT` tasks,
    what ``react-lab eval`` and notebook 08 measure), ``"dev"`` (the half to tune on),
    ``"test"`` (the half results are reported on), ``"all"`` (every task of the file),
    ``"paraphrase"`` or ``"seeds"`` (the files of :data:`TASK_FILES`). The halves were
    drawn once with a fixed seed by ``react_lab/lab/builders/build_tasks.py``; each task's
    ``split`` field says which it is in. ``path`` reads another file in the format of the
    module docstring (then ``split="all"`` gives every task in it). Then the first ``n``
    tasks if given. Raises FileNotFoundError naming the build command, ValueError for a
    bad ``n``, ``split`` or file (a task without a required field, an unknown kind, a
    repeated id).
    """
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; use one of {', '.join(SPLITS)}")
    if n is not None and n < 1:
        raise ValueError(f"n must be at least 1, not {n}")
    path = Path(path) if path is not None else TASK_FILES.get(split, TASKS_PATH)
    if not path.is_file():
        raise FileNotFoundError(
            f"no task set at {path}; build the shipped ones: python -m "
            "react_lab.lab.builders.build_tasks, python -m react_lab.lab.builders.build_paraphrase"
        )
    raw = json.loads(path.read_text(encoding="utf-8"))
    if split == "original":
        raw = raw[:ORIGINAL_COUNT]
    elif split in ("dev", "test"):
        raw = [d for d in raw if d.get("split") == split]
    tasks = _checked(raw, path)
    return tasks[:n] if n else tasks


def _checked(raw, path: Path) -> list[Task]:
    """The tasks of a loaded file; ValueError naming the file, the task and what is wrong."""
    if not isinstance(raw, list):
        raise ValueError(f"{path}: a task file is a JSON list of task objects")
    tasks, seen = [], set()
    for i, d in enumerate(raw):
        missing = [
            k
            for k in ("id", "category", "question", "gold", "kind")
            if not isinstance(d, dict) or k not in d
        ]
        if missing:
            raise ValueError(f"{path}: task {i} has no {', '.join(missing)}")
        if d["kind"] not in KINDS:
            raise ValueError(
                f"{path}: task {d['id']} has kind {d['kind']!r}; use one of {', '.join(KINDS)}"
            )
        if d["id"] in seen:
            raise ValueError(f"{path}: task id {d['id']} appears twice")
        seen.add(d["id"])
        tasks.append(Task.from_dict(d))
    return tasks


# --------------------------------------------------------------------------- the scorer

#: The scorer's version. Results files that keep scored answers hold it in their fingerprint
#: (:mod:`react_lab.lab.experiments.results`), so bump it whenever :func:`score` judges any
#: answer differently: those files then read as stale until
#: ``python -m react_lab.lab.experiments.rescore`` re-scores their stored answers (no model
#: run). 1: a yes/no sentence read for fixed phrases of the two predicates; 2: for the
#: predicate affirmed or negated, in the task set's words and others, and the question's
#: own predicate the right way round (issue 44).
SCORER_VERSION = 2

#: A longer answer is scored wrong: a dump of rows is not an answer, and any gold
#: value would be "somewhere in it".
MAX_ANSWER_CHARS = 300

_MONTHS = {m[:3].lower(): i for i, m in enumerate(MONTHS, 1)}  # "jan" -> 1
_MONTH = rf"({'|'.join(_MONTHS)})[a-z]*\.?"
_ISO = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})(?=T\d|\b)")  # a timestamp's date too
#: A time of day (``08:10``, ``T08:10:47``, ``08:10:47.5Z``, ``08:10+02:00``): never a number.
_CLOCK = re.compile(
    r"(?<![\w:])T?\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?(?![\w:])"
)
#: Words that take back the option after them: "not open", "isn't open", "no longer open".
_NEGATION = re.compile(r" (?:not|isn t|is not|wasn t|never|no longer|neither|nor) $")
_MDY = re.compile(rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)
_DMY = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+(\d{{4}})\b", re.I)
_NUMBER = re.compile(
    r"(?<![\w.])(-\s?)?(\$\s?)?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?"
    r"(\s*(?:cents?\b|¢)|\s*(?:dollars?\b|usd\b))?",
    re.I,
)
#: Yes/no as the answer's first word, standing alone: "No." and "Yes, twice" count,
#: "no action was found" and "no more tool calls" do not.
_YESNO = re.compile(r"(yes|no|true|false)(?=[\s]*(?:[.,;:!)]|$))", re.I)
#: A leading tag in brackets, such as the loop's "[best effort]", is not part of the answer.
_TAG = re.compile(r"^\s*\[[^\]\n]{0,40}\]\s*")


def dates_in(text: str) -> list[str]:
    """Return the dates written in ``text`` as ISO strings, in order of appearance.

    Understands ``2026-07-14``, ``July 14, 2026`` / ``Jul 14 2026`` / ``July 14th, 2026``
    and ``14 July 2026`` / ``14th of July, 2026``. Impossible dates are skipped.
    """
    found = []
    for regex, order in ((_ISO, "ymd"), (_MDY, "mdy"), (_DMY, "dmy")):
        for m in regex.finditer(text):
            a, b, c = m.groups()
            y, mo, d = {"ymd": (a, b, c), "mdy": (c, a, b), "dmy": (c, b, a)}[order]
            mo = _MONTHS[mo[:3].lower()] if not mo.isdigit() else int(mo)
            try:
                found.append((m.start(), date(int(y), mo, int(d)).isoformat()))
            except ValueError:
                continue
    return [iso for _, iso in sorted(found)]


def numbers_in(text: str) -> list[tuple[float, str | None]]:
    """Return ``(value, unit)`` for every number in ``text``.

    The unit is ``"cents"``, ``"dollars"`` or None. Dates (timestamps included), times of
    day and ids (``INV-2041``, ``cus_8812``, ``ch_1KZq8f``) are removed first, so their
    digits are not numbers. Thousands commas are read (``48,200.00``); a ``$`` or the word
    dollars/USD marks dollars, cents/¢ marks cents. Only digits count: number words are too
    common in text that is not an answer ("write one line").
    """
    for regex in (_ISO, _MDY, _DMY, _CLOCK, ID_RE):
        text = regex.sub(" ", text)
    found = []
    for m in _NUMBER.finditer(text):
        sign, dollar, whole, frac, unit = m.groups()
        value = float(whole.replace(",", "") + (frac or ""))
        value = -value if sign else value
        unit = (unit or "").strip().lower()
        kind = (
            "cents" if unit.startswith(("cent", "¢")) else ("dollars" if dollar or unit else None)
        )
        found.append((value, kind))
    return found


def _in_unit(value: float, said: str | None, wanted: str | None) -> float:
    """Convert a number said in ``said`` units to the gold's ``wanted`` unit.

    Cents <-> dollars only.
    """
    if wanted == "dollars" and said == "cents":
        return value / 100
    if wanted == "cents" and said == "dollars":
        return value * 100
    return value


def _words(text: str) -> str:
    """Casefold, turn everything but letters and digits into single spaces, pad with spaces."""
    return " " + " ".join(re.sub(r"[^0-9a-z]+", " ", text.casefold()).split()) + " "


def _compact(text: str) -> str:
    """Casefold and join a letter prefix to its digits (for ids).

    ``"INV - 2041"`` -> ``"inv2041"``.
    """
    return re.sub(r"([a-z])[\s_\-]+(?=\d)", r"\1", text.casefold())


# --------------------------------------------------------------------------- yes/no as a sentence
#
# A yes/no answer that does not begin with yes or no is read for the stance it takes on the
# question's own predicate. The task set asks two (tasks.json, paraphrase.json): is an invoice
# paid (in full), and was it charged twice (two succeeded card charges). The rule has three
# parts:
#
# 1. the words that state a predicate (_PREDICATES), each with what it answers when affirmed
#    and when negated: "paid" yes and "not paid" no; "unpaid" no and "not unpaid" yes; "no
#    payment" no, while "a payment" says nothing (one payment need not be all of it). A
#    bare verb states it only as the sentence's verb: "is paid" does, "amount paid" not;
# 2. negation (_reach): a negating word negates the predicate after it when only function
#    words stand between ("has not yet been paid", "did not get two successful charges").
#    Any other word takes the negation for itself, so "the charge that was not declined was
#    paid" affirms paid; punctuation ends it; "not only paid" adds to paid, it does not deny
#    it. A phrase joined to the one before by "with" details it and shares its negation
#    ("not charged twice, with two succeeded card charges");
# 3. the question is read by the same rule, for which predicate it asks and which way round:
#    "Does INV-2766 still have money owing on it?" asks unpaid, so "it is paid" answers no.
#
# A sentence ending in "?" asserts nothing: a small model often echoes the question.
# Known limits, kept for a readable rule: a negation that takes a noun reaches no predicate
# after it ("there is no record that it was paid" reads as paid), and a count of charges
# says nothing of what happened to them later ("a second charge was declined" reads as two).

#: Words a count of charges may carry and still count charges that took money ("two
#: successful card charges"); "two failed charges" or "two declined charges" count none.
_TOOK_MONEY = r"(?: (?:successful|succeeded|card|separate|valid|completed))*"
#: A charge verb before how often: "charged twice", "billed only once".
_CHARGED = r"(?:charged|billed|debited)(?: (?:only|just|exactly))?"
#: Counts of charges: more than one ("a second charge"), and one.
_MANY, _ONE = r"(?:two|2|both|second|multiple|several)", r"(?:one|1|single)"


class _Predicate(NamedTuple):
    """Words that state a predicate, and what they answer to it, affirmed or negated.

    ``words`` is a pattern over the sentence's words (lower case, one space apart, each
    punctuation mark a word); ``affirmed``/``negated`` the answer, ``"yes"``, ``"no"`` or
    None (nothing). ``verb``: the words are a bare verb, which states the predicate only as
    a verb of the sentence, after an auxiliary ("is paid", "has been settled", "did not
    pay") or a negation ("never paid"); "amount paid" or "paid on 2026-01-26" says nothing.
    """

    topic: str
    words: str
    affirmed: str | None
    negated: str | None
    verb: bool = False


#: The predicates of the task set's yes/no questions. Where two overlap, the one that
#: starts first, then the longer, is read ("partially paid" is not also "paid").
_PREDICATES = (
    # paid (in full): "partially paid" and "paid, but not in full" are not "paid"; "paid
    # 64.50" is an amount, not all of it
    _Predicate("paid", r"(?:partially|partly) paid|paid (?:partially|partly|in part)", "no", None),
    _Predicate("paid", r"paid(?: ,)? (?:but|though) not (?:in full|fully)", "no", None),
    _Predicate("paid", r"paid (?:in full|off|up)|(?:fully|completely) paid", "yes", "no"),
    _Predicate("paid", r"paid(?! [$\d])|pay|pays|settled", "yes", "no", verb=True),
    _Predicate("paid", r"unpaid|unsettled|outstanding|owing|owed|overdue|past due", "no", "yes"),
    _Predicate("paid", r"payments?", None, "no"),
    # charged twice: how often it was charged, or a count of the charges that took money;
    # "not charged once" or "not one charge" may mean none or more, so it answers nothing
    _Predicate("duplicate", rf"{_CHARGED} (?:twice|two times|2 times|more than once)", "yes", "no"),
    _Predicate("duplicate", rf"{_CHARGED} (?:once|one time|1 time)", "no", None),
    _Predicate("duplicate", rf"{_MANY}{_TOOK_MONEY} charges?", "yes", "no"),
    _Predicate("duplicate", rf"{_ONE}{_TOOK_MONEY} charges?", "no", None),
    _Predicate("duplicate", r"double charged?|duplicate[ds]?", "yes", "no"),
)
_TOPIC_NAMES = ("duplicate", "paid")
#: Words that negate what follows them; "n't", "no longer" and "yet to" are read as "not".
_NEGATORS = frozenset({"not", "never", "no", "nothing", "none", "neither", "nor", "without"})
#: After a negating word, these add rather than deny: "not only paid but refunded".
_ADDITIVE = frozenset({"only", "just", "merely"})
#: Auxiliaries and light verbs: a bare verb after one is the sentence's verb ("is paid").
_AUXILIARIES = frozenset(
    "am is are was were be been being has have had do does did will would can could ca wo "
    "get gets got gotten".split()
)
#: Words a negation passes over to reach the predicate, with the auxiliaries: articles,
#: adverbs, light verbs and the amount owed ("not fully paid", "no money is owed").
_FUNCTION_WORDS = _AUXILIARIES | frozenset(
    "a an the any its s receive received make made yet still ever even really actually fully "
    "completely entirely only just money balance amount".split()
)


def _tokens(sentence: str) -> list[str]:
    """The sentence's words, lower case, each punctuation mark a word of its own.

    Contractions and two-word negations become ``not`` ("isn't" -> "is not", "no longer",
    "yet to"); a hyphen or underscore between letters is a space ("double-charged",
    "partially_paid").
    """
    text = sentence.casefold().replace("\u2019", "'")
    text = re.sub(r"n't\b", " not", text)
    text = re.sub(r"\b(?:no longer|yet to)\b", "not", text)
    text = re.sub(r"(?<=[a-z])[-_](?=[a-z])", " ", text)
    return re.findall(r"[a-z0-9]+|[^\sa-z0-9']", text)


def _reach(words: list[str], start: int, negated_at: dict[int, bool]) -> tuple[bool, bool]:
    """``(negated, as a verb)`` for the predicate that begins at ``words[start]``.

    Walks back over function words, counting negating words (two cancel: "never not paid"
    affirms) and noting an auxiliary or a negation (then a bare verb is the sentence's
    verb); any other word ends the walk. "with" hands over to the predicate ending just
    before it (``negated_at``: its end word -> negated).
    """
    flips, verb = 0, False
    for i in range(start - 1, -1, -1):
        word = words[i]
        if word in _NEGATORS:
            flips += words[i + 1] not in _ADDITIVE
            verb = True
        elif word == "with":
            before = i - 2 if i and words[i - 1] == "," else i - 1
            if before in negated_at:
                return negated_at[before] != (flips % 2 == 1), True
            break
        elif word not in _FUNCTION_WORDS:
            break
        verb = verb or word in _AUXILIARIES
    return flips % 2 == 1, verb


def _read(sentence: str, topics, *, question: bool = False) -> list[tuple[str, str]]:
    """``(topic, answer)`` for each predicate of ``topics`` the sentence states, in order.

    ``answer`` is what the sentence answers to the predicate itself ("INV-2291 is not paid":
    ``("paid", "no")``); a phrase that answers nothing (a payment, affirmed) is left out.
    A ``question`` puts its auxiliary before the subject ("Is INV-2787 settled?"): there a
    bare verb is read as it stands.
    """
    words = _tokens(sentence)
    line = " ".join(words)
    found = []
    for p in _PREDICATES:
        if p.topic in topics:
            for m in re.finditer(rf"(?<!\S)(?:{p.words})(?!\S)", line):
                first, last = line.count(" ", 0, m.start()), line.count(" ", 0, m.end())
                found.append((first, -last, p))
    said, end, negated_at = [], -1, {}
    for first, last, p in sorted(found, key=lambda f: f[:2]):
        if first <= end:
            continue  # inside the phrase read already: "partially paid" is not also "paid"
        end = -last
        negated, verb = _reach(words, first, negated_at)
        negated_at[end] = negated
        answer = p.negated if negated else p.affirmed
        if answer and (verb or question or not p.verb):
            said.append((p.topic, answer))
    return said


def _asked(question: str) -> dict[str, str]:
    """The predicates ``question`` asks, by topic, each with the answer that "yes" gives it.

    "Has INV-2291 been paid?" -> ``{"paid": "yes"}``; "Does INV-2766 still have money owing
    on it?" -> ``{"paid": "no"}`` (yes, it is owed: not paid). A question that states a
    predicate both ways asks neither way round, and is left out.
    """
    answers: dict[str, set[str]] = {}
    for topic, answer in _read(question, _TOPIC_NAMES, question=True):
        answers.setdefault(topic, set()).add(answer)
    return {topic: a.pop() for topic, a in answers.items() if len(a) == 1}


def _has_topic(question: str) -> bool:
    """True when ``question`` asks one of the predicates :data:`_PREDICATES` reads."""
    return bool(_asked(question))


def _same_subject(answer: str, question: str) -> bool:
    """False when ``answer`` names ids and none of them is one the question names.

    "The latest invoice of cus_4417 is settled." does not answer "Is INV-2787 settled?";
    an answer that names no id ("It was charged once.") is about the question's subject.
    """
    named = {_compact(i) for i in ID_RE.findall(answer)}
    return not named or bool(named & {_compact(i) for i in ID_RE.findall(question)})


def stances(text: str, question: str = "") -> set[str]:
    """Return the answers, ``"yes"`` or ``"no"``, that ``text`` gives to ``question``.

    Each predicate of the question that a sentence of ``text`` states, affirmed or negated,
    is one answer (the rule is in the comment above :data:`_PREDICATES`): for "Has INV-2291
    been paid in full?", "INV-2291 is not paid." -> ``{"no"}``, "it remains unpaid" ->
    ``{"no"}``, "it is paid and it is not paid" -> ``{"yes", "no"}`` (it contradicts
    itself). A question that asks neither predicate is read as asking both, the way round
    the task set asks them (paid, charged twice). Sentences ending in "?" say nothing.
    """
    asked = _asked(question) or dict.fromkeys(_TOPIC_NAMES, "yes")
    said = set()
    for sentence in re.split(r"(?<=[.!?])\s+|\n", text):
        if sentence.rstrip().endswith("?"):
            continue  # a question asserts nothing: often the question, echoed
        for topic, answer in _read(sentence, asked):
            said.add("yes" if answer == asked[topic] else "no")
    return said


#: What may stand between two numbers of a hedge: "58.00 or 129.00 dollars", "3 days / 7 days".
_HEDGE_WORDS = {
    "or",
    "either",
    "maybe",
    "perhaps",
    "possibly",
    "and",
    "to",
    "about",
    "around",
    "approximately",
    "dollars",
    "dollar",
    "cents",
    "cent",
    "usd",
    "days",
    "day",
    "invoices",
    "invoice",
    "the",
    "is",
    "it",
    "s",
}


def _rivals(answer: str, task: Task) -> bool:
    """True when ``answer`` names a number other than the gold for the same quantity: a hedge.

    That is another number next to one that states the gold, with nothing between them
    but punctuation, units and words such as "or", "either", "maybe" (:data:`_HEDGE_WORDS`):
    "58.00 or 129.00 dollars", "either 3 days or 7 days", "$58.00 (maybe $129.00)". A
    number that belongs to another quantity is told apart by the words around it
    ("174.50 dollars, out of 349.00 dollars" is not a hedge).
    """
    text = answer
    for regex in (_ISO, _MDY, _DMY, _CLOCK, ID_RE):
        text = regex.sub(" ", text)
    found = []
    for m in _NUMBER.finditer(text):
        ((value, said),) = numbers_in(m.group())
        found.append((abs(_in_unit(value, said, task.unit) - float(task.gold)) < 0.005, m.span()))
    for (ok, (_, end)), (next_ok, (start, _)) in zip(found, found[1:]):
        if ok != next_ok and set(re.findall(r"[a-z]+", text[end:start].lower())) <= _HEDGE_WORDS:
            return True
    return False


def score(answer: str | None, task: Task) -> bool:
    """Return True when ``answer`` states ``task.gold``; the rules, by ``task.kind``:

    * any kind: no answer, or one longer than :data:`MAX_ANSWER_CHARS` characters, is
      wrong; a leading tag in brackets (the loop's ``[best effort]``) is ignored;
    * ``number``: some number in the answer equals the gold within 0.005 after unit
      conversion -- "129", "129.0", "$129.00", "129 dollars" and "12900 cents" all state
      129 dollars; a bare "12900" does not, nor does "one hundred" (see :func:`numbers_in`);
      an answer that also names another number for the same quantity ("58.00 or 129.00
      dollars", "3 days, or 7 days") is a hedge, and wrong (:func:`_rivals`);
    * ``date``: some date in the answer is the gold date, in any format of :func:`dates_in`;
    * ``id``: the gold id appears as a whole word, ignoring case and the separator
      between prefix and digits (``inv 2041`` states ``INV-2041``; ``INV-20411`` does not);
    * ``yesno``: an answer that *begins* with yes/no/true/false as a word of its own
      ("No.", "Yes, twice") says that; "no more tool calls" or "no action found" do not
      begin so. Any other answer is read as a sentence: the stance it takes on the
      question's own predicate, affirmed or negated, which is its yes or no
      (:func:`stances`). The predicates are the task set's two, paid (in full) and charged
      twice, in its words and others: "INV-2291 is not paid", "has not been settled",
      "remains unpaid", "no payment was received", "is not unpaid" (yes), "was charged
      just once", "did not get two successful card charges", "two charges went through".
      A negation reaches the predicate over function words only ("has not yet been paid");
      any other word takes it ("the charge that was not declined was paid" says paid), and
      "not only paid" says paid. The question is read the same way, so "Does INV-2766
      still have money owing on it?" asks unpaid: "it is paid" answers no. A sentence that
      takes no stance, names only ids the question does not name, or answers a question
      about neither predicate, is wrong; a sentence ending in "?" takes none. An answer
      that says both ("no, the invoice was charged twice"; "it is paid and it is not
      paid") contradicts itself, and is wrong;
    * ``choice``: exactly one of ``task.choices`` is named, and it is the gold one
      (longest match first, underscores read as spaces, so "partially paid" is not
      "paid"); an option after a negation ("not open", "isn't open", "no longer open") is
      not named; an answer naming two options ("open or past due") is a hedge;
    * ``text``: the gold's words appear in order (case and punctuation ignored).

    The strict yes/no and choice rules are there because a small model often echoes
    the loop's own messages as its answer, and those contain "no" and the labels.
    Never raises on model text.
    """
    if not isinstance(answer, str) or len(answer) > MAX_ANSWER_CHARS:
        return False
    answer = _TAG.sub("", answer)
    if not answer.strip():
        return False
    gold, kind = task.gold, task.kind
    if kind == "number":
        target = float(gold)
        return any(
            abs(_in_unit(v, unit, task.unit) - target) < 0.005 for v, unit in numbers_in(answer)
        ) and not _rivals(answer, task)
    if kind == "date":
        return gold in dates_in(answer)
    if kind == "id":
        return (
            re.search(rf"(?<![0-9a-z]){re.escape(_compact(gold))}(?![0-9a-z])", _compact(answer))
            is not None
        )
    if kind == "yesno":
        text = answer.strip(" \t\n*\"'")
        m = _YESNO.match(text)
        if m is None:  # a sentence: the stance it takes on the question's own predicate
            return (
                _has_topic(task.question)
                and _same_subject(text, task.question)
                and stances(text, task.question) == {gold}
            )
        said = {"yes": "yes", "true": "yes", "no": "no", "false": "no"}[m.group(1).lower()]
        return said == gold and stances(text[m.end() :], task.question) <= {gold}
    if kind == "choice":
        options = sorted({_words(c).strip() for c in task.choices}, key=len, reverse=True)
        said = _words(answer)
        named = {
            m.group(1)
            for m in re.finditer(r"(?<= )(" + "|".join(map(re.escape, options)) + r")(?= )", said)
            if not _NEGATION.search(said[: m.start()])
        }
        return named == {_words(gold).strip()}
    if kind == "text":
        return _words(gold) in _words(answer)
    raise ValueError(f"unknown task kind {kind!r}; use number, date, id, yesno, choice or text")

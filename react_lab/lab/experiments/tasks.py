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
#: run). 1: the scorer of issue 42 (a yes/no sentence read for phrases of the two predicates).
SCORER_VERSION = 1

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


# --------------------------------------------------------------------------- self-contradiction

#: Phrases that say yes or no to the two yes/no questions of the set, by topic: was an
#: invoice charged twice, and has it been paid. ``(topic, says, regex)``; a phrase after a
#: negation in its clause says the opposite ("not charged twice" says no).
_STANCES = [
    (
        "duplicate",
        "yes",
        r"(?:charged|billed) twice|double[ -]charged|two (?:succeeded|successful)"
        r"(?: card)? charges|duplicate(?: charge)?",
    ),
    (
        "duplicate",
        "no",
        r"(?:charged|billed) (?:only )?once|only once|one (?:succeeded|successful)"
        r"(?: card)? charge|(?:a )?single (?:succeeded |successful )?(?:card )?charge",
    ),
    ("paid", "no", r"unpaid|partially paid|partly paid|still owed|outstanding|not yet paid"),
    (
        "paid",
        "yes",
        r"paid in full|fully paid|paid off|(?:fully )?settled|(?:been|is|was|are) paid",
    ),
]
#: Which topic a question is about, from its own words.
_TOPICS = {
    "duplicate": re.compile(r"twice|duplicate|double", re.I),
    "paid": re.compile(r"\bpaid\b|settled|owed|outstanding|paid off", re.I),
}
_NEGATED = re.compile(r"\b(?:not|never|no|nothing|neither|nor|without)\b|n't\b", re.I)
_CLAUSE = re.compile(r"[.,;:!?()\n]|\bbut\b|\bhowever\b", re.I)


def _has_topic(question: str) -> bool:
    """True when ``question`` is about one of the topics :data:`_STANCES` reads."""
    return any(regex.search(question) for regex in _TOPICS.values())


def _same_subject(answer: str, question: str) -> bool:
    """False when ``answer`` names ids and none of them is one the question names.

    "The latest invoice of cus_4417 is settled." does not answer "Is INV-2787 settled?";
    an answer that names no id ("It was charged once.") is about the question's subject.
    """
    named = {_compact(i) for i in ID_RE.findall(answer)}
    return not named or bool(named & {_compact(i) for i in ID_RE.findall(question)})


def stances(text: str, question: str = "") -> set[str]:
    """Return the answers that phrases in ``text`` give to the question's topic.

    Each answer is ``"yes"`` or ``"no"``. ``"no, the invoice was charged twice"`` ->
    ``{"no", "yes"}`` for a duplicate question: the leading word says no, the clause after
    it says yes. The topics are a duplicate charge and being paid (:data:`_STANCES`), read
    from ``question`` (both when it names neither). A phrase preceded by a negation in its
    clause counts the other way.
    """
    topics = [t for t, regex in _TOPICS.items() if regex.search(question)] or list(_TOPICS)
    said = set()
    for clause in _CLAUSE.split(text):
        taken: list[tuple[int, int]] = []
        for topic, says, phrase in _STANCES:
            if topic not in topics:
                continue
            for m in re.finditer(rf"\b(?:{phrase})\b", clause, re.I):
                if any(a < m.end() and m.start() < b for a, b in taken):
                    continue  # "partially paid" is not also "is paid"
                taken.append(m.span())
                flip = bool(_NEGATED.search(clause[: m.start()]))
                said.add({"yes": "no", "no": "yes"}[says] if flip else says)
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
      question's own predicate, affirmed or negated ("has not been paid", "is unpaid",
      "is fully paid off", "was charged once", "did not get two successful card charges"),
      for the two predicates of the task set (:func:`stances`); a sentence that takes no
      stance, names only ids the question does not name, or answers a question about
      neither predicate, is wrong. An answer that states
      both ("no, the invoice was charged twice") contradicts itself, and is wrong;
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

"""Exemplars chosen per question from a pool of development-half tasks (written or harvested).

The ladder's rung 3. The default prompt shows one fixed exemplar (a "latest invoice"
question), and the 135M model copies its shape whatever it is asked. Here every
question gets the ``k`` exemplars nearest to it from a pool.

**Two pools -- read this before quoting a result.** Issue 15 asks for a pool built from
*successful development-half runs*: that is the **runs pool** (``source="runs"``,
:func:`harvest`), the model's own trajectories on dev tasks that it answered correctly
after calling every tool the task needs, read from a shipped dev results file. Those
runs had to be prompted with *some* exemplars: they ran with the **oracle pool**
(``source="oracle"``, the default), and a 135M model copies the exemplar it is shown
almost word for word, so a harvested thought is mostly the model's copy of a written
one -- with its own slips (a number taken from the wrong field). The oracle pool is
written from each **dev** task's *oracle* calls (``Task.oracle``, the calls that compute its
gold answer) run through the real tools, so every observation is real tool output of
the tool variant in use, plus a short written thought per step, a closing thought that
quotes the field holding the answer, and the task's **gold answer** stated in its unit
(:func:`pool_exemplar`). No model run is involved, so a pool entry exists for every dev
task, including ones no configuration solved. The wording of the thoughts was revised
once after reading dev traces (the prototype's "pool v2"); the test half was never
looked at. The runs pool holds only the dev tasks the model solved cleanly, so it has
fewer entries.

Guarantees, checked by ``tests/lab/experiments/test_exemplars.py``:

* both pools hold **dev tasks only** (:func:`build_pool` loads ``split="dev"`` and
  refuses any other task; :func:`harvest` refuses a run of a non-dev task);
* :func:`select` never returns the task itself, nor an entry whose question or
  observations show an id the question asks about (so even on the dev half an exemplar
  is never a lookup of the answer).

Similarity is cheap and local: Jaccard overlap of word sets in which ids and numbers are
replaced by their shape (``INV-1595`` and ``INV-2014`` are both ``inv_#``), so questions
of the same template are nearest.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass

from ...protocol import Exemplar
from ...tools import ID_RE, call_tool
from ..provenance import yes_or_no
from .tasks import Task, load_tasks

__all__ = [
    "PoolExemplar",
    "PoolEntry",
    "build_pool",
    "get_pool",
    "select",
    "shape_tokens",
    "jaccard",
    "intent",
    "answer_intent",
    "coincides",
    "pool_exemplar",
    "harvest",
    "HARVESTED_FROM",
]


@dataclass(frozen=True)
class PoolExemplar(Exemplar):
    """An :class:`react_lab.protocol.Exemplar` that names the dev task it was written from.

    The task's id is ``source``.
    """

    source: str = ""


@dataclass(frozen=True)
class PoolEntry:
    """One pool entry: the dev task's id and category, its exemplar, the ids it shows, its word
    shapes, and what its answer is (:func:`answer_intent`)."""

    task_id: str
    category: str
    exemplar: PoolExemplar
    shown: frozenset
    tokens: frozenset
    intent: str = ""


# --------------------------------------------------------------------------- similarity


def shape_tokens(text: str) -> frozenset[str]:
    """Return the lower-case words of ``text`` with ids and numbers replaced by their shape.

    ``"Was INV-2041 paid in 2026?"`` -> ``{"was", "inv_#", "paid", "in", "#"}``.
    """
    text = ID_RE.sub(
        lambda m: re.sub(r"[0-9A-Za-z]+$", "#", m.group()).lower().replace("-", "_"), text
    )
    text = re.sub(r"\d+(?:\.\d+)?", "#", text)
    return frozenset(re.findall(r"[a-z_#]+", text.lower()))


def jaccard(a: frozenset, b: frozenset) -> float:
    """Return |a ∩ b| / |a ∪ b| (0.0 for two empty sets)."""
    return len(a & b) / len(a | b) if a | b else 0.0


def select(
    pool: list[PoolEntry],
    task: Task,
    k: int = 1,
    *,
    by: str = "shape",
    distinct: bool = False,
    balanced: bool = False,
) -> list[PoolExemplar]:
    """Return the ``k`` pool exemplars nearest to ``task.question``, the nearest last.

    The nearest sits right above the question in the prompt. Skips ``task`` itself and
    every entry that shows an id the question names. ``by="shape"``: nearest by word
    shape (:func:`jaccard` of :func:`shape_tokens`); ``by="intent"``: first the entries
    whose answer is of the kind the question asks for (:func:`intent`; all entries when
    none is), then by word shape among them. ``distinct``: among equally near entries,
    those whose gold answer is no test task's come first (:func:`coincides`), so a copied
    answer cannot be right by chance and the exemplar-values guard can tell it.
    ``balanced``: a yes/no question also gets the nearest exemplar answered the other way,
    above the nearest one, so the answer it shows cannot simply be copied.
    Ties then break by task id, so the choice is deterministic. Raises ``ValueError``
    if ``k`` is below 0 or for an unknown ``by``.
    """
    if k < 0:
        raise ValueError(f"k must be 0 or more, not {k}")
    if by not in ("shape", "intent"):
        raise ValueError(f"unknown selection {by!r}; use shape or intent")
    asked = {i.casefold() for i in ID_RE.findall(task.question)}
    words = shape_tokens(task.question)
    allowed = [
        e for e in pool if e.task_id != task.id and not (asked & {i.casefold() for i in e.shown})
    ]
    if by == "intent":
        wanted = intent(task.question)
        allowed = [e for e in allowed if e.intent == wanted] or allowed

    def rank(e: PoolEntry):
        return (-jaccard(words, e.tokens), distinct and coincides(e.task_id), e.task_id)

    ranked = sorted(allowed, key=rank)
    chosen = ranked[:k]
    side = (
        chosen
        and balanced
        and intent(task.question) == "yesno"
        and yes_or_no(chosen[0].exemplar.answer)
    )
    if side:
        other = next(
            (e for e in ranked[k:] if yes_or_no(e.exemplar.answer) not in (None, side)), None
        )
        chosen += [other] if other is not None else []
    return [e.exemplar for e in reversed(chosen)]


# ------------------------------------------------------------------------- what a question asks for

#: What a question asks for, read from its words, in order: the first rule that matches wins.
#: Each is (intent, regex); the intents are those of :func:`answer_intent`.
_ASKS = [
    (
        "arithmetic",
        r"^(?!.*\b(?:inv|cus|ch|kb)[-_]).*\d\s*(?:[-+*/x=]|times|minus|plus|divided by)\s*\d"
        r"|\b(?:divide|multiply|add|subtract)\b(?!.*\b(?:inv|cus|ch)[-_])",
    ),
    ("label", r"\blabel\b"),
    ("days", r"how many days|how long|\bdays?\b"),
    ("cents", r"\bcents?\b"),
    ("count", r"how many|\bcount\b|number of \w+s\b"),
    ("reason", r"\bwhy\b|\breason\b|went wrong|\bfail"),
    ("status", r"\bstatus\b|\bstate\b|\bstand\b"),
    ("name", r"\bwho\b|which (?:supplier|vendor|company)|\bsupplier name"),
    (
        "yesno",
        r"^\W*(?:is|was|were|are|has|have|had|did|does|do|can|could|any)\b|yes or no|or not\b",
    ),
    ("date", r"\bwhen\b|\bdate\b|\bwhat day\b|\bdue\b"),
    ("id", r"\bids?\b|which invoice|what invoice|invoice number|\bnumber\b"),
    (
        "amount",
        r"how much|\btotal\b|\bamount\b|\bsum\b|add up|\bplus\b|combined|\bowed?\b"
        r"|\bpaid\b|\bcost\b|come to|\bdollars?\b|\\$",
    ),
]


def intent(question: str) -> str | None:
    """What ``question`` asks for: ``date``, ``id``, ``count``, ``yesno``, ``amount``, ``cents``,
    ``days``, ``status``, ``reason``, ``name``, ``arithmetic`` or ``label`` (None: none of them).

    Read from its words alone -- the wh-word, the noun asked about, the unit -- not from
    the template it was written from: "On what date did ... last get an invoice?" asks for
    a date, "Is INV-2041 fully paid off?" for a yes or no.
    """
    text = question.casefold()
    return next((name for name, regex in _ASKS if re.search(regex, text)), None)


def answer_intent(task: Task) -> str:
    """What a task's gold answer is, from its kind and unit (what :func:`intent` should read)."""
    if task.kind == "number":
        if task.category == "no_tool":
            return "arithmetic"
        return {"dollars": "amount", "cents": "cents", "count": "count", "days": "days"}[task.unit]
    if task.kind == "choice":
        return (
            "status"
            if "past_due" in task.choices
            else "reason"
            if "card_declined" in task.choices
            else "label"
        )
    return {"date": "date", "id": "id", "yesno": "yesno", "text": "name"}[task.kind]


@functools.lru_cache(maxsize=None)
def _outside_dev_golds() -> frozenset[str]:
    from .tasks import TASKS_PATH

    return frozenset(
        d["gold"]
        for d in json.loads(TASKS_PATH.read_text(encoding="utf-8"))
        if d.get("split") != "dev"
    )


def coincides(task_id: str) -> bool:
    """True when dev task ``task_id``'s gold answer is also the gold answer of a test task.

    Yes/no answers always coincide (there are two); so do common amounts such as 129.00.
    """
    gold = next((d["gold"] for d in _raw() if d["id"] == task_id), None)
    return gold in _outside_dev_golds()


# --------------------------------------------------------------------------- writing an exemplar

_THOUGHTS = {
    "list_invoices": "I list the invoices of {0} issued since {1}.",
    "find_invoice": "I look up invoice {0}.",
    "get_charge": "I look up card charge {0}.",
    "get_payments": "I get the payments made on invoice {0}.",
    "search": "I search the help articles.",
    "calc": "I add the two totals with calc.",
}

#: The date window a "latest invoice" exemplar lists from: one the model can always copy.
LATEST_SINCE = "2026-01-01"


def stated(task: Task) -> str:
    """Return the gold answer as an exemplar states it, its unit written out.

    For example "129.0 dollars", "Yes."
    """
    gold = task.gold
    if task.kind == "number":
        return {"dollars": f"{gold} dollars", "cents": f"{gold} cents", "days": f"{gold} days"}.get(
            task.unit, gold
        )
    if task.kind == "yesno":
        return "Yes." if gold == "yes" else "No."
    return gold


def _field_stating(observation: str, gold: str) -> tuple[str, object] | None:
    """(key, value) of the first JSON field in ``observation`` whose value states ``gold``."""
    try:
        data = json.loads(observation)
    except ValueError:
        return None
    for row in data if isinstance(data, list) else [data]:
        if not isinstance(row, dict):
            continue
        for key, value in row.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                try:
                    if abs(float(value) - float(gold)) < 0.005:
                        return key, value
                except ValueError:
                    pass
            elif isinstance(value, str) and value.lower() == gold.lower():
                return key, value
    return None


def _calls(task: Task, variant: set[str]) -> list[tuple[str, list[str]]]:
    """The exemplar's calls.

    The task's oracle calls, adapted to what the tool variant makes necessary.
    """
    calls = [(tool, list(args)) for tool, args in task.oracle]
    if task.category in ("latest_date", "latest_id"):
        calls = [
            (tool, [args[0]] if "since_optional" in variant else [args[0], LATEST_SINCE])
            for tool, args in calls
        ]
    if "sums" in variant and task.category == "paid_in_full":
        calls = [("get_payments", [task.oracle[0][1][0]])]
    if "statuses" in variant and task.category == "duplicate":
        calls = [("find_invoice", [task.oracle[0][1][0]])]
    if task.category == "no_tool" and task.kind == "number":  # arithmetic: use calc
        m = re.search(r"What is (.+)\? Answer directly", task.question)
        if m:
            calls = [("calc", [m.group(1)])]
    return calls


def _closing_thought(task: Task, observations: list[str], variant: set[str]) -> str:
    """The exemplar's last thought: it names where in the observations the answer is."""
    c, obs = task.category, observations
    if c in ("latest_date", "latest_id"):
        rows = json.loads(obs[0])
        rows = rows["invoices"] if isinstance(rows, dict) else rows
        if rows:
            where, row = ("last", rows[-1]) if "oldest_first" in variant else ("first", rows[0])
            return (
                f'The {where} row is the newest: "invoice_id": "{row["invoice_id"]}", '
                f'"issued": "{row["issued"]}".'
            )
    if c == "count_invoices" and "counted" in variant:
        return f'The observation shows "invoice_count": {json.loads(obs[0])["invoice_count"]}.'
    if c == "count_invoices":
        ids = list(dict.fromkeys(re.findall(r'"invoice_id": "(INV-\d{4})"', obs[0])))
        return f"Distinct invoice ids: {', '.join(ids)}. That is {len(ids)}."
    if c == "duplicate":
        if "statuses" in variant:
            charges = [
                (ch["charge_id"], ch["status"]) for ch in json.loads(obs[0]).get("charges", [])
            ]
        else:
            charges = [(json.loads(o)["charge_id"], json.loads(o)["status"]) for o in obs[1:]]
        n = sum(status == "succeeded" for _, status in charges)
        listed = ", ".join(f"{cid} {status}" for cid, status in charges) or "no charges"
        return f"{listed}: {n} succeeded, so {'it was' if n > 1 else 'it was not'} charged twice."
    if c == "paid_in_full" and "sums" in variant:
        d = json.loads(obs[0])
        return (
            f'"total_paid": {d["total_paid"]}, "invoice_total": {d["invoice_total"]}, '
            f'"paid_in_full": {json.dumps(d["paid_in_full"])}.'
        )
    if c == "paid_in_full":
        total = json.loads(obs[0])["total"]
        paid = round(sum(p["amount"] for p in json.loads(obs[1])["payments"]), 2)
        return (
            f"The payments add up to {paid} and the total is {total}, so it is "
            f"{'' if task.gold == 'yes' else 'not '}paid in full."
        )
    if c == "multi_step" and task.unit == "dollars":
        return f"calc gives {obs[-1]}."
    hit = next((f for f in (_field_stating(o, task.gold) for o in reversed(obs)) if f), None)
    if hit is None and task.kind == "number" and task.unit == "dollars":
        cents = next(
            (f for f in (_field_stating(o, str(float(task.gold) * 100)) for o in obs) if f), None
        )
        if cents:
            return (
                f'The observation shows "{cents[0]}": {json.dumps(cents[1])} cents, '
                f"that is {task.gold} dollars."
            )
    if hit is not None:
        return f'The observation shows "{hit[0]}": {json.dumps(hit[1])}.'
    return f"The observation shows the answer: {task.gold}."


def pool_exemplar(
    task: Task, tools: dict, variant: str = "default"
) -> tuple[PoolExemplar, set[str]]:
    """Write the exemplar of one dev task; return it and the ids its question and observations show.

    The calls are the task's oracle calls (adapted to the tool ``variant``, see
    :mod:`react_lab.lab.experiments.tool_designs`), run through ``tools``: the observations
    are real. The answer is the task's gold answer (:func:`stated`). Raises ``ValueError``
    for a task that is not in the dev half.
    """
    if task_split(task.id) != "dev":
        raise ValueError(f"{task.id} is not a dev task: only dev tasks go into the exemplar pool")
    parts = set(variant.split("+"))
    shown = set(ID_RE.findall(task.question))
    steps, observations = [], []
    for tool, args in _calls(task, parts):
        text = call_tool(tools, tool, args).text
        observations.append(text)
        shown |= set(ID_RE.findall(text))
        thought = (
            f"I list the invoices of {args[0]}."
            if tool == "list_invoices" and len(args) == 1
            else "I compute it with calc."
            if task.category == "no_tool"
            else _THOUGHTS[tool].format(*args)
        )
        steps.append((thought, f"{tool}[{', '.join(args)}]", text))
    final = _closing_thought(task, observations, parts) if steps else "I can answer this directly."
    return PoolExemplar(task.question, tuple(steps), final, stated(task), source=task.id), shown


@functools.lru_cache(maxsize=None)
def _raw() -> tuple[dict, ...]:
    from .tasks import TASKS_PATH

    return tuple(json.loads(TASKS_PATH.read_text(encoding="utf-8")))


@functools.lru_cache(maxsize=None)
def _splits() -> dict[str, str]:
    return {d["id"]: d.get("split") for d in _raw()}


def task_split(task_id: str) -> str | None:
    """Return ``"dev"`` or ``"test"`` for a task id of the shipped set (None if unknown)."""
    return _splits().get(task_id)


def build_pool(variant: str = "default") -> list[PoolEntry]:
    """Return one :class:`PoolEntry` per dev task, written for the tool ``variant``."""
    from .tool_designs import get_tools

    tools = get_tools(variant)
    pool = []
    for task in load_tasks(split="dev"):
        pool.append(_pool_entry(task, *pool_exemplar(task, tools, variant)))
    return pool


def _pool_entry(task: Task, exemplar: PoolExemplar, shown: set[str]) -> PoolEntry:
    """The pool entry of dev ``task`` shown by ``exemplar`` (written or harvested).

    ``shown`` is every id the exemplar shows; the entry adds the question's word shapes
    and the task's answer intent, which the selection matches on.
    """
    return PoolEntry(
        task.id,
        task.category,
        exemplar,
        frozenset(shown),
        shape_tokens(task.question),
        answer_intent(task),
    )


# --------------------------------------------------------------------------- the runs pool

#: Tool variant -> the shipped dev results file whose successful runs make its runs pool.
#: Each is a ladder config run over the whole dev half with the oracle pool, the same
#: tool variant and grammar (``react-lab eval --config gpool_k1 --split dev ...``).
HARVESTED_FROM = {"default": "ladder-dev-gpool_k1", "oldest_first": "ladder-dev-t_oldest_first"}

#: ladder records keep the first 200 characters of a thought; a run with a longer one is skipped.
_THOUGHT_KEPT = 200


def _clean_run(record: dict, task: Task) -> bool:
    """True for a run fit to show: correct, ended by its own answer, every step a tool call
    that the tools accepted (no error, no guard), every tool the task's oracle calls called
    (a yes/no answer is right half the time by luck; a run that never read the invoice total
    did not find out whether it was paid), and no thought cut short by the record."""
    steps = record["steps"]
    if not (record["correct"] and record["stopped_by"] == "answer" and steps):
        return False
    *calls, last = steps
    return (
        last["answer"] is not None
        and all(s["tool"] and not s["error"] and not s["guard"] for s in calls)
        and {tool for tool, _ in task.oracle} <= {s["tool"] for s in calls}
        and all(len(s["thought"] or "") < _THOUGHT_KEPT for s in steps)
    )


def harvest(records: list[dict], variant: str = "default") -> list[PoolEntry]:
    """Turn successful dev runs into pool entries: the model's own thoughts, actions and answer.

    ``records`` are ladder run records (:func:`react_lab.lab.experiments.ladder.run_one`) of
    **dev** tasks run with tool ``variant``; returns one :class:`PoolEntry` per kept run
    (trial 0 only, so one per task). A run is kept when it is correct, ended with its own
    ``Answer:``, called every tool of the task's oracle, and every step before the answer
    was a call the tools accepted (see :func:`_clean_run`). Its calls are run again through
    the tools: the record keeps the calls, not the observations, and since no step was
    refused or truncated by a guard, the tool output is what the model saw. The thoughts and
    the answer are the model's, as it wrote them (a missing last thought becomes "I can
    answer this now."). ``shown`` holds every id in the question, the thoughts, the
    observations and the answer. Raises ``ValueError`` for a record of a task that is not in
    the dev half.
    """
    from .tool_designs import get_tools

    tools = get_tools(variant)
    tasks = {t.id: t for t in load_tasks(split="dev")}
    pool = []
    for r in records:
        if task_split(r["task_id"]) != "dev":
            raise ValueError(
                f"{r['task_id']} is not a dev task: only dev runs go into the exemplar pool"
            )
        task = tasks[r["task_id"]]
        if r["trial"] != 0 or not _clean_run(r, task):
            continue
        shown = set(ID_RE.findall(task.question))
        steps = []
        for s in r["steps"][:-1]:
            args = [str(a) for a in s["args"]]
            text = call_tool(tools, s["tool"], args).text
            shown |= set(ID_RE.findall(text))
            steps.append((s["thought"], f"{s['tool']}[{', '.join(args)}]", text))
        last = r["steps"][-1]
        for text in [s["thought"] or "" for s in r["steps"]] + [str(last["answer"])]:
            shown |= set(ID_RE.findall(text))
        ex = PoolExemplar(
            task.question,
            tuple(steps),
            last["thought"] or "I can answer this now.",
            str(last["answer"]),
            source=task.id,
        )
        pool.append(_pool_entry(task, ex, shown))
    return pool


def runs_pool(variant: str = "default") -> list[PoolEntry]:
    """The runs pool of tool ``variant``: :func:`harvest` of its shipped dev results file.

    Raises ``ValueError`` for a variant with no harvested dev run (:data:`HARVESTED_FROM`)
    and :class:`react_lab.lab.experiments.results.StaleResults` when that file no longer
    matches the code.
    """
    from . import results

    if variant not in HARVESTED_FROM:
        raise ValueError(
            f"no dev runs harvested for tool variant {variant!r}; "
            f"harvested: {', '.join(HARVESTED_FROM)}"
        )
    return harvest(results.load(HARVESTED_FROM[variant]).data["records"], variant)


def get_pool(variant: str = "default", source: str = "oracle") -> tuple[PoolEntry, ...]:
    """The pool of tool ``variant``, built once per process: ``source="oracle"``
    (:func:`build_pool`) or ``"runs"`` (:func:`runs_pool`). ``ValueError`` for another source."""
    if source not in ("oracle", "runs"):
        raise ValueError(f"unknown pool source {source!r}; use oracle or runs")
    return _pool(variant, source)


@functools.lru_cache(maxsize=None)
def _pool(variant: str, source: str) -> tuple[PoolEntry, ...]:
    return tuple(build_pool(variant) if source == "oracle" else runs_pool(variant))

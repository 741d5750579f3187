"""Notebook 08's helpers.

The learner's agent on gold-answer tasks, a rate with its interval, a paired change.

The learner's ``run_loop`` runs unchanged; these only choose the tasks, run them with a
progress bar, score each answer as the evaluation does
(:func:`react_lab.lab.experiments.tasks.score`), and read what a run did back out of its
transcript (the calls it made, what came back) for the seeds' three questions, beside the
database's own answer (:mod:`react_lab.lab.notebook.gold`).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Callable, Sequence

from ..lab.backends.load import (  # noqa: F401  (re-exported: the notebook's imports)
    load_chat_model,
    load_model,
)
from ..lab.experiments import ladder, stats
from ..lab.experiments.exemplars import get_pool
from ..lab.experiments.tasks import Task, load_tasks, score
from ..lab.notebook.gold import check_charges, invoice_paid, why_wrong
from ..lab.provenance import copied_values
from ..protocol import ACTION_RE, Exemplar, build_prompt
from ..tools import ID_RE, default_tools, open_db
from .minutes import show_minutes  # noqa: F401
from .quiz import quiz  # noqa: F401

#: The live set: the first question of each of the test half's first categories, in file order.
LIVE_CATEGORIES = 8
#: Model calls per run: the evaluation's limit (``react-lab eval``), which the ladder files used.
MAX_STEPS = 4


@dataclass
class Run:
    """One question run by the learner's loop.

    Its answer, scored; the transcript; the exemplar shown.
    """

    task: Task
    answer: str | None
    right: bool
    transcript: str
    exemplars: list | None
    seconds: float
    whose: str = "your"  # "reference" when the reference stood in for the learner's loop

    def calls(self) -> list[tuple[str, str, str]]:
        """``(tool, arguments, observation)`` of each call the model made.

        The exemplar's calls are left out.
        """
        prompt = build_prompt(self.task.question, default_tools().values(), self.exemplars)
        run = (
            self.transcript[len(prompt) :]
            if self.transcript.startswith(prompt)
            else self.transcript
        )
        found = []
        for match in ACTION_RE.finditer(run):
            after = run[match.end() :]
            seen = re.search(r"^Observation: (.*)$", after, re.MULTILINE)
            found.append((match.group(1), match.group(2).strip(), seen.group(1) if seen else ""))
        return found


def live_tasks(categories: int = LIVE_CATEGORIES) -> list[Task]:
    """The live set: the first test question of each of the first ``categories`` categories.

    In file order.
    """
    return ladder.choose_tasks("test", per_category=1)[:categories]


def dev_pool() -> list[Exemplar]:
    """The exemplars written from the development half: what ``pick_exemplar`` picks from.

    One per dev task.
    """
    return [entry.exemplar for entry in get_pool()]


def run_tasks(
    loop: Callable,
    tasks: Sequence[Task],
    model,
    tools: dict,
    *,
    pick: Callable | None = None,
    pool: Sequence[Exemplar] = (),
    desc: str = "your agent",
    max_steps: int = MAX_STEPS,
) -> dict[str, Run]:
    """Run the learner's ``loop`` on every task (a progress bar); return ``{task id: Run}``.

    ``max_steps`` defaults to the evaluation's limit (the ladder files' too). With ``pick``
    (the learner's ``pick_exemplar``), each question gets the one exemplar
    ``pick(question, pool)`` returns; without, the loop's default (``exemplars=None``).
    """
    from tqdm.auto import tqdm

    runs = {}
    for task in tqdm(tasks, desc=desc, unit="question"):
        shown = [pick(task.question, list(pool))] if pick else None
        t0 = time.perf_counter()
        answer, transcript = loop(task.question, model, tools, exemplars=shown, max_steps=max_steps)
        runs[task.id] = Run(
            task,
            answer,
            score(answer, task),
            transcript,
            shown,
            time.perf_counter() - t0,
            "reference" if getattr(loop, "reference", None) else "your",
        )
    return runs


def rate(runs: dict[str, Run]) -> stats.Rate:
    """The runs' right answers of all, with the 95% Wilson interval."""
    return stats.success_rate(sum(r.right for r in runs.values()), len(runs))


def paired(before: dict[str, Run], after: dict[str, Run]) -> stats.Paired:
    """The two runs compared question by question: gained, lost, and the exact McNemar p."""
    return stats.paired_comparison(
        {t: r.right for t, r in before.items()}, {t: r.right for t, r in after.items()}
    )


def ladder_change(old: str = "baseline", new: str = "pool_k1", split: str = "test") -> str:
    """The ladder's two files, labelled: each rate with its interval, and the paired comparison."""
    rows = {
        r["config"]: r
        for r in ladder.load_results([f"ladder-{split}-{old}", f"ladder-{split}-{new}"])
    }
    solved = {c: {t: o[0] for t, o in rows[c]["outcomes"].items()} for c in (old, new)}
    when = rows[new]["describe"].split(" computed ")[1].split(" in ")[0]
    return (
        f"files ladder-{split}-{old} and ladder-{split}-{new} "
        f"({rows[new]['rate'].n} test questions, the lab's loop, computed {when}):\n"
        f"  {old:<9}{rows[old]['rate']}\n  {new:<9}{rows[new]['rate']}\n"
        f"  paired   {stats.paired_comparison(solved[old], solved[new])}"
    )


def side_by_side(text: dict[str, Run], native: dict[str, Run], best: str = "best") -> str:
    """The learner's two loops and a configuration of the bench on the same questions: one table.

    ``text`` and ``native`` are :func:`run_tasks` runs of ``run_loop`` and ``run_native`` on
    the same tasks (live); ``best`` is read from the ladder's stored answers to those tasks
    (``ladder-test-<best>``: the bench's working agent, greedy, so its answers are the ones
    it gives today). A row per question (✓ right, ✗ wrong, · not in the file), then each
    agent's rate with its 95% interval, and the file's rate on all its questions.
    """
    [row] = ladder.load_results([f"ladder-test-{best}"])
    stored = {task_id: outcomes[0] for task_id, outcomes in row["outcomes"].items()}
    whose = [next((r.whose for r in runs.values()), "your") for runs in (text, native)]
    names = [f"{whose[0]} run_loop", f"{whose[1]} run_native", best]
    mark, wide = {True: "✓", False: "✗", None: "·"}, max(map(len, names)) + 2
    lines = [f"{'question':<20}" + "".join(f"{name:^{wide}}" for name in names).rstrip()]
    for task_id in text:
        said = [text[task_id].right, native[task_id].right, stored.get(task_id)]
        lines.append(f"{task_id:<20}" + "".join(f"{mark[s]:^{wide}}" for s in said).rstrip())
    known = [stored[t] for t in text if t in stored]
    rates = [rate(text), rate(native), stats.success_rate(sum(known), len(known))]
    lines += [""] + [f"{name:<22}{r}" for name, r in zip(names, rates)]
    when = row["describe"].split(" computed ")[1].split(" in ")[0]
    lines.append(
        f"{best} is the file ladder-test-{best} (computed {when}): {row['rate']} on its "
        f"{row['rate'].n} test questions"
    )
    return "\n".join(lines)


def gold_reason(task: Task) -> str:
    """What the database says, in one line: the gold answer and the rows it comes from."""
    invoice = next(iter(re.findall(r"INV-\d{4}", task.question)), None)
    customer = next(iter(re.findall(r"cus_\w+", task.question)), None)
    if task.category == "duplicate" and invoice:
        return f"gold answer: {task.gold} - {check_charges(invoice).explain()}"
    if task.category == "paid_in_full" and invoice:
        return invoice_paid(invoice).explain()
    with open_db() as conn:
        if task.category == "latest_date" and customer:
            row = conn.execute(
                "SELECT id, issued FROM invoices WHERE customer_id = ? ORDER BY issued DESC, id "
                "LIMIT 1",
                (customer,),
            ).fetchone()
            return (
                f"gold answer: {task.gold} - {customer}'s latest invoice is {row['id']}, "
                f"issued {row['issued']}."
            )
        found = conn.execute(task.sql, task.params).fetchone()[0]
    return f"gold answer: {task.gold} (by SQL: {found})."


def seed_report(run: Run) -> str:
    """A seed question's run in three lines.

    The calls made, the answer scored, what the database says (and why wrong).
    """
    calls = run.calls()
    made = " -> ".join(f"{tool}[{args}]" for tool, args, _ in calls) or "no tool"
    lines = [
        f"{run.task.question}\n   called {made}",
        f"   answered {run.answer!r}: {'right' if run.right else 'WRONG'}; {gold_reason(run.task)}",
    ]
    if not run.right:
        # what must reach an observation: the invoice asked about, else the gold value itself
        # (a customer's invoice rows never name the customer)
        asked = next(iter(re.findall(r"INV-\w+", run.task.question)), run.task.gold)
        why = why_wrong(
            run.task.question,
            run.answer,
            needed=asked,
            calls=[(tool, [a.strip() for a in args.split(",")]) for tool, args, _ in calls],
            observations=[seen for *_, seen in calls],
            exemplars=run.exemplars,
        )
        if why:
            lines.append(f"   {why}")
        lines += [f"   {line}" for line in copied_calls(run, calls, said=why)]
    return "\n".join(lines)


def copied_calls(run: Run, calls, said: str = "") -> list[str]:
    """A line for each call whose argument is the exemplar's id, not the question's nor a
    value an earlier call's result showed (``list_invoices[cus_1021, ...]`` asked about cus_4417):
    the provenance fault of notebook 06, in a read-only call, which the guard lets run. An id
    ``said`` already names is left out."""
    shown = "\n".join(e.render() for e in run.exemplars or [])
    lines, seen = [], [run.task.question]
    for tool, args, observation in calls:
        copied = [
            v for v in copied_values(args, shown, seen) if ID_RE.fullmatch(v) and v not in said
        ]
        if copied:
            lines.append(
                f"{tool}[{args}] has {copied[0]}, its exemplar's, in neither the question nor "
                "a result before it"
            )
        seen.append(observation)
    return lines


def seed_tasks() -> list[Task]:
    """The seed articles' three questions, with gold answers from SQL."""
    return load_tasks(split="seeds")

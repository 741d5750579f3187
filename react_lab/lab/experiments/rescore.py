"""Re-score the stored answers of results files with the scorer as it is now: no model run.

A maintainer's command. A results file of an experiment that scores answers (:data:`SCORED`:
``eval``, ``ladder``, ``migration``, ``agent``) keeps every answer beside its verdict, and its
fingerprint holds the scorer's version (:data:`react_lab.lab.experiments.tasks.SCORER_VERSION`).
After a change to :func:`react_lab.lab.experiments.tasks.score`, bump that version (the files
then read as stale) and run::

    python -m react_lab.lab.experiments.rescore            # every shipped results file
    python -m react_lab.lab.experiments.rescore NAME ...   # these files only
    python -m react_lab.lab.experiments.rescore --check    # say what would change, write nothing
    python -m react_lab.lab.experiments.rescore --dir DIR  # the files in DIR instead

Each file's answers are scored again, each record's ``correct`` rewritten, and, when a
verdict moved, the file's summary recomputed from its records (``eval``: ``metrics``;
``ladder`` and ``migration``: ``summary``); its fingerprint takes the scorer's version of
now and a ``rescored`` line says when and what moved. The answers, when they were computed
and everything else stay as they were. One line per file says whether its right answers
moved (``12/52 -> 13/52``).

Re-run it whenever files arrive (a merge, a regenerated file): a current file is left
untouched, so a second run writes nothing. A file that is stale for another reason (its
prompt, tasks, model or code changed) is refused, naming the command that regenerates it:
re-scoring old answers cannot stand in for a new run. A file of an experiment not in
:data:`SCORED` whose records keep verdicts is refused too (add the experiment there). The
exit status is 1 when a file was refused, or with ``--check`` when one would change.
"""

from __future__ import annotations

import argparse
import importlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from . import results
from .tasks import score


class WaitsFor(results.StaleResults):
    """A file's fingerprint reads another results file that is not current yet.

    The ladder's runs-pool configurations build their exemplars from a dev results file's
    right answers: re-score that file first, then this one (:func:`main` does, in passes).
    """


@dataclass(frozen=True)
class Scored:
    """How to re-score one experiment's results files.

    ``module`` has ``tasks_of(config)`` (the tasks a file's records ran, by id) and the
    function ``summarize`` that computes, from the records, what the file keeps under
    ``data[key]``.
    """

    module: str
    key: str
    summarize: str


#: The experiments whose results files keep scored answers: ``data["records"]``, each with
#: ``task_id``, ``answer`` and ``correct``. Their fingerprints hold the scorer's version.
SCORED = {
    "eval": Scored("react_lab.lab.experiments.evals", "metrics", "metrics"),
    "ladder": Scored("react_lab.lab.experiments.ladder", "summary", "summarize"),
    "migration": Scored("react_lab.lab.experiments.migration_runs", "summary", "summarize"),
    "agent": Scored("react_lab.lab.experiments.ladder", "summary", "summarize"),
}


@dataclass
class Rescored:
    """What re-scoring one file did (or, with ``write=False``, would do).

    ``right`` is ``(before, after)`` right answers of ``runs`` records (every trial and
    arm); ``changed`` the task ids whose verdict moved; ``scorer`` the scorer's version
    ``(before, after)``; ``written`` whether the file was rewritten.
    """

    name: str
    runs: int
    right: tuple[int, int]
    scorer: tuple[object, object]
    changed: list[str] = field(default_factory=list)
    written: bool = False

    @property
    def current(self) -> bool:
        """True when nothing was (or would be) changed."""
        return not self.changed and self.scorer[0] == self.scorer[1]

    def line(self) -> str:
        """One line for the command's output."""
        before, after = self.right
        if self.current:
            return f"{self.name}: current ({after}/{self.runs} right)"
        moved = (
            f"{before}/{self.runs} -> {after}/{self.runs} right "
            f"({len(self.changed)} verdict(s) moved: {', '.join(sorted(set(self.changed)))})"
            if self.changed
            else f"{after}/{self.runs} right, no verdict moved"
        )
        done = "re-scored" if self.written else "would be re-scored"
        return f"{self.name}: {done}, scorer {self.scorer[0]} -> {self.scorer[1]}; {moved}"


def _keeps_verdicts(record: dict) -> bool:
    data = record.get("data")
    rows = data.get("records") if isinstance(data, dict) else None
    return bool(rows) and isinstance(rows[0], dict) and "correct" in rows[0]


def rescore(
    name: str, directory: str | Path | None = None, *, write: bool = True
) -> Rescored | None:
    """Re-score the stored answers of results file ``name`` (in ``directory``, default shipped).

    Returns what moved (:class:`Rescored`), or None for a file that keeps no scored answers
    (``forge``, ``failures``). Rewrites the file only when ``write`` and something moved
    (a verdict, or the scorer's version). Raises
    :class:`react_lab.lab.experiments.results.StaleResults` for a file stale for another
    reason than the scorer, ``ValueError`` for a file with verdicts of an experiment not in
    :data:`SCORED`, ``FileNotFoundError`` when there is no such file.
    """
    record = results._read(name, directory)
    experiment = record["experiment"]
    if experiment not in SCORED:
        if _keeps_verdicts(record):
            raise ValueError(
                f"{name}: its records keep verdicts, but experiment {experiment!r} is not in "
                "react_lab.lab.experiments.rescore.SCORED; add it there"
            )
        return None
    try:
        current = results.fingerprint(experiment, record["config"])
    except results.StaleResults as error:
        raise WaitsFor(f"{name}: its fingerprint reads a results file not current yet: {error}")
    saved = record["fingerprint"]
    other = results.differences(
        {k: v for k, v in saved.items() if k != "scorer"},
        {k: v for k, v in current.items() if k != "scorer"},
    )
    if other:
        raise results.StaleResults(
            f"{name}: {'; '.join(other)}; re-scoring its old answers cannot stand in for a "
            f"new run: regenerate it: {results.regenerate_command(record['command'])}"
        )
    how = SCORED[experiment]
    module = importlib.import_module(how.module)
    tasks = module.tasks_of(record["config"])
    rows = record["data"]["records"]
    verdicts = [score(r["answer"], tasks[r["task_id"]]) for r in rows]
    done = Rescored(
        name=record["name"],
        runs=len(rows),
        right=(sum(bool(r["correct"]) for r in rows), sum(verdicts)),
        scorer=(saved.get("scorer"), current["scorer"]),
        changed=[r["task_id"] for r, v in zip(rows, verdicts) if bool(r["correct"]) != v],
    )
    if done.current or not write:
        return done
    for r, verdict in zip(rows, verdicts):
        r["correct"] = verdict
    if done.changed:  # else the summary stands as it was written
        record["data"][how.key] = getattr(module, how.summarize)(rows)
    record["fingerprint"] = current
    note = (
        f"{time.strftime('%Y-%m-%d %H:%M %Z')}: scorer {done.scorer[0]} -> {done.scorer[1]}, "
        f"{len(done.changed)} answer(s) judged again"
    )
    record["rescored"] = "; ".join(filter(None, [note, record.get("rescored")]))  # newest first
    results.write(results._path(name, directory), record)
    done.written = True
    return done


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (see the module docstring); returns the exit status."""
    p = argparse.ArgumentParser(
        prog="python -m react_lab.lab.experiments.rescore",
        description=__doc__.split("\n")[0],
    )
    p.add_argument("names", nargs="*", help="results files (default: every one in the folder)")
    p.add_argument("--check", action="store_true", help="say what would change, write nothing")
    p.add_argument("--dir", help=f"the results folder (default: {results.RESULTS_DIR})")
    args = p.parse_args(argv)
    refused = would = 0
    pending = list(args.names or results.saved(args.dir))
    while pending:  # in passes: a file that reads another waits until that one is re-scored
        waiting = []
        for name in pending:
            try:
                done = rescore(name, args.dir, write=not args.check)
            except WaitsFor as error:
                waiting.append((name, error))
            except (results.StaleResults, ValueError, FileNotFoundError) as error:
                print(f"{name}: not re-scored: {error}")
                refused += 1
            else:
                if done is not None:
                    print(done.line())
                    would += not done.current
        if args.check or len(waiting) == len(pending):  # nothing more can be done
            for name, error in waiting:
                print(f"{name}: not {'checked' if args.check else 're-scored'}: {error}")
            refused += len(waiting)
            break
        pending = [name for name, _ in waiting]
    return 1 if refused or (args.check and would) else 0


if __name__ == "__main__":
    raise SystemExit(main())

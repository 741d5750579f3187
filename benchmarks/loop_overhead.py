"""Benchmark: model time against total time per step of the text loop on the embedded model.

Run: ``.venv/bin/python benchmarks/loop_overhead.py [--steps N]``. Not a timed test:
it prints a table and the loop's overhead as a share of model time (target: under 5%).
Overhead is everything in a step that is not the model call: parsing, the SQL query,
JSON encoding and transcript bookkeeping.
"""

from __future__ import annotations

import argparse
import time

from react_lab.lab.agent.loop import run
from react_lab.lab.backends.local import local_model
from react_lab.lab.guards import LabGuards
from react_lab.tools import default_tools

QUESTIONS = [
    "Was cus_8812 charged twice for INV-2041 in July?",
    "Has supplier invoice INV-2291 been paid?",
    "What is the status of charge ch_1KZq8f?",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6, help="step limit per question")
    args = parser.parse_args()
    model, tools = local_model(), default_tools()
    model.complete("warm up", max_tokens=1)  # load the weights outside the measurement
    rows, t_start = [], time.perf_counter()
    for question in QUESTIONS:
        for step in run(
            question, model, tools, max_steps=args.steps, max_tokens=128, guards=LabGuards()
        ):
            rows.append((question[:38], step.number, step.model_seconds, step.seconds))
    wall = time.perf_counter() - t_start
    print(f"{'question':40} {'step':>4} {'model s':>8} {'step s':>8} {'overhead':>9}")
    for q, n, m, s in rows:
        print(f"{q:40} {n:>4} {m:>8.3f} {s:>8.3f} {(s - m) / m:>9.2%}")
    model_total = sum(r[2] for r in rows)
    step_total = sum(r[3] for r in rows)
    print(
        f"\n{len(rows)} steps in {wall:.1f} s; model {model_total:.2f} s, steps {step_total:.2f} s"
    )
    print(
        f"loop overhead: {(step_total - model_total) / model_total:.2%} of model time (target < 5%)"
    )


if __name__ == "__main__":
    main()

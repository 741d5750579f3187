"""Benchmark: the lab's speed in one run, each figure beside its limit, written as JSON.

Run it alone on the machine (it is the only model user it measures), from the repository::

    flock /tmp/react_lab_model.lock env REACT_LAB_THREADS=2 \\
        .venv/bin/python benchmarks/run.py [--tasks 10] [--notebooks] [--memory [NOTEBOOK ...]]

Measures, in this order, after :func:`react_lab.lab.notebook.warm_up` (whose one-off costs it
reports):

1. the physical limit: the embedded model's prompt-evaluation and generation speed here
   (tokens/s, median of a few repetitions, at the context length the experiments use);
2. the forgery experiment (``forge.run_experiment`` on 100 questions, both arms), goal <= 60 s,
   as the lab runs it (``forge.BATCH`` questions decoded side by side) and one question at a
   time (``batch=1``, the one-at-a-time tokens), with how many verdicts the two disagree on;
3. the evaluation per task, text and native protocol (and native with the text protocol's
   default exemplar as messages), on the first ``--tasks`` tasks (a stated subset); and
   the two working agents like for like -- text ``best`` and native ``native_pool_k1``
   (react_lab.lab.experiments.configs: each with one exemplar retrieved per question) -- on the
   test half's first ``--per-category`` tasks of each category; goal native <= 2x text;
4. loop overhead: step time outside the model call as a share of model time, goal <= 1%
   (from the text evaluation's steps; the harness's own logging and scoring beside it);
5. with ``--notebooks``: the notebook suite under nbval in CI mode, goal <= 300 s;
6. with ``--notebooks`` or ``--memory``: a kernel's peak memory running each notebook top to
   bottom (default every notebook; the heaviest is the figure), goal <= 500 MB.

Every experiment's time is also shown as a ratio to the model-only time its token counts
imply (prompt tokens evaluated / prompt speed + tokens generated / generation speed), so
the figure means the same on a faster or a busier machine. ``others`` is the CPU (in
cores) other processes used during each part: above ~0.1 the timing is contended.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))


class Meter:
    """Wall time of a block, and the CPU other processes used meanwhile (cores, from /proc/stat)."""

    def __enter__(self):
        self.t0, self.busy0, self.own0 = time.perf_counter(), _busy_seconds(), _own_seconds()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.t0
        others = (_busy_seconds() - self.busy0) - (_own_seconds() - self.own0)
        self.others = round(max(0.0, others) / self.seconds, 2) if self.seconds else 0.0


def _busy_seconds() -> float:
    """CPU seconds every process on the machine has used (all cores), from /proc/stat."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except OSError:
        return 0.0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _own_seconds() -> float:
    own, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


# --------------------------------------------------------------------------- 1. the physical limit


def raw_speed(model, reps: int = 3, generate: int = 128) -> dict:
    """Prompt-evaluation and generation speed of the embedded model (tokens/s, medians)."""
    import llama_cpp
    import numpy as np

    from react_lab import protocol
    from react_lab.tools import default_tools

    llm = model.llm
    prompt = model.tokenize(
        model.render(
            protocol.build_prompt("Has invoice INV-2130 been paid?", default_tools().values())
        )
    )
    prompt_rates, gen_rates = [], []
    with model._lock:  # measuring the model itself, below the lab's own calls
        for _ in range(reps):
            llm.reset()
            t0 = time.perf_counter()
            llm.eval(prompt)
            prompt_rates.append(len(prompt) / (time.perf_counter() - t0))
            t0 = time.perf_counter()
            for _ in range(generate):  # greedy, one token at a time, the end-of-text token ignored
                logits = np.ctypeslib.as_array(
                    llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1), shape=(llm.n_vocab(),)
                )
                llm.eval([int(np.argmax(logits))])
            gen_rates.append(generate / (time.perf_counter() - t0))
        llm.reset()
    return {
        "prompt_tokens": len(prompt),
        "prompt_eval_tok_s": round(statistics.median(prompt_rates), 1),
        "generation_tok_s": round(statistics.median(gen_rates), 1),
        "reps": reps,
        "generated_per_rep": generate,
    }


def implied_seconds(usage: dict, raw: dict) -> float:
    """Model-only time the token counts imply at the measured speeds."""
    return (
        usage["prompt_evaluated"] / raw["prompt_eval_tok_s"]
        + usage["generated"] / raw["generation_tok_s"]
    )


# --------------------------------------------------------------------------- 2-4. experiments


def forge_experiment(model, raw: dict, n: int, batch: int) -> dict:
    from react_lab.lab.experiments import forge

    before = model.usage.snapshot()
    with Meter() as m:
        result = forge.run_experiment(forge.questions(n), model, batch=batch, progress=False)
    used = (model.usage - before).to_dict()
    return {
        "n": n,
        "batch": batch,
        "seconds": round(m.seconds, 1),
        "others": m.others,
        "tokens": result["tokens"],
        "implied_seconds": round(implied_seconds(used, raw), 1),
        "forged": {a: result[a]["forged"] for a in forge.ARMS},
        "arms_from": result["arms_from"],
        "verdicts": [t["forged"] for t in result["trials"]["without_stop"]],
    }


def evaluation(model, raw: dict, protocol: str, n_tasks: int, exemplar: bool = False) -> dict:
    """One evaluation.

    ``exemplar``: a native run with the text protocol's default exemplar as messages.
    """
    from react_lab.lab.backends.chat import LocalChatModel
    from react_lab.lab.experiments import evals
    from react_lab.lab.experiments.tasks import load_tasks
    from react_lab.protocol import EXEMPLARS

    backend = LocalChatModel(model) if protocol == "native" else model
    tasks = load_tasks(n=n_tasks)
    before = model.usage.snapshot()
    options = {"exemplars": EXEMPLARS[:1]} if exemplar else None
    with tempfile.TemporaryDirectory() as cache, Meter() as m:
        run = evals.evaluate(
            tasks,
            backend,
            protocol=protocol,
            use_cache=False,
            cache_dir=cache,
            progress=False,
            loop_options=options,
        )
    used = (model.usage - before).to_dict()
    steps = [e for r in run.records for e in r["steps"]]
    step_seconds = sum(e["seconds"] for e in steps)
    return {
        "tasks": len(tasks),
        "seconds": round(m.seconds, 1),
        "others": m.others,
        "per_task": round(m.seconds / len(tasks), 2),
        "calls": used["calls"],
        "per_call": round(m.seconds / max(1, used["calls"]), 2),
        "usage": used,
        "success": sum(r["correct"] for r in run.records),
        "implied_seconds": round(implied_seconds(used, raw), 1),
        "loop_overhead": round((step_seconds - used["seconds"]) / used["seconds"], 4),
        "harness_overhead": round((m.seconds - step_seconds) / used["seconds"], 4),
        "timeouts": sum(r["stopped_by"] == "timeout" for r in run.records),
        "stopped_by": dict(Counter(r["stopped_by"] for r in run.records).most_common()),
    }


def working_agents(model, per_category: int) -> dict:
    """Text ``best`` and native ``native_pool_k1`` on the same test tasks, one after the other."""
    from react_lab.lab.experiments import ladder
    from react_lab.lab.experiments.configs import get_config

    tasks = ladder.choose_tasks("test", per_category=per_category)
    out = {}
    for name in ("best", "native_pool_k1"):
        cfg = get_config(name)
        with Meter() as m:
            records = [ladder.run_one(cfg, t, model=model) for t in tasks]
        out[name] = {
            "tasks": len(tasks),
            "seconds": round(m.seconds, 1),
            "others": m.others,
            "per_task": round(m.seconds / len(tasks), 2),
            "steps": round(sum(r["n_steps"] for r in records) / len(tasks), 2),
            "completion_tokens": round(sum(r["completion_tokens"] for r in records) / len(tasks)),
            "prompt_tokens": round(sum(r["prompt_tokens"] for r in records) / len(tasks)),
            "success": sum(r["correct"] for r in records),
        }
    return out


# --------------------------------------------------------------------------- 5-6. notebooks


def notebook_suite() -> dict:
    """The CI command over every notebook (nbval, solutions on, fresh results cache)."""
    with tempfile.TemporaryDirectory() as cache, Meter() as m:
        env = {
            **os.environ,
            "REACT_LAB_SOLUTIONS": "1",
            "MPLBACKEND": "Agg",
            "REACT_LAB_CACHE": cache,
        }
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "notebooks",
                "--nbval-lax",
                "--nbval-current-env",
                "--nbval-sanitize-with",
                "notebooks/sanitize.cfg",
                "-p",
                "no:cacheprovider",
                "-q",
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
    last = (done.stdout.strip().splitlines() or [""])[-1]
    return {
        "seconds": round(m.seconds, 1),
        "others": m.others,
        "passed": done.returncode == 0,
        "summary": last,
    }


def kernel_memory(notebooks: list[Path]) -> dict:
    """Peak RSS of a fresh kernel running each notebook (empty results cache).

    The heaviest first.
    """
    from kernel_memory import peak_mib

    each = []
    with Meter() as m:
        for notebook in notebooks:
            with tempfile.TemporaryDirectory() as cache:
                os.environ["REACT_LAB_CACHE"] = (
                    cache  # the kernel inherits it: every result computed
                )
                mib, seconds = peak_mib(notebook)
            each.append(
                {"notebook": notebook.name, "peak_mib": round(mib), "seconds": round(seconds, 1)}
            )
    heaviest = max(each, key=lambda e: e["peak_mib"])
    return {**heaviest, "each": each, "others": m.others}


# --------------------------------------------------------------------------- the table


def ratio(seconds: float, implied: float) -> str:
    return f"{seconds / implied:.2f}x" if implied else "-"


def table(report: dict) -> list[tuple[str, str, str, str, str]]:
    """Rows of (what, measured, limit or goal, ratio to model-only time, others' CPU)."""
    raw, rows = report["raw"], []
    rows.append(
        (
            "prompt evaluation (physical limit)",
            f"{raw['prompt_eval_tok_s']} tok/s",
            f"{raw['prompt_tokens']}-token prompt",
            "",
            "",
        )
    )
    rows.append(
        (
            "generation (physical limit)",
            f"{raw['generation_tok_s']} tok/s",
            "greedy, 1 token/step",
            "",
            "",
        )
    )
    f = report["forge"]
    t = f["tokens"]
    rows.append(
        (
            f"forgery experiment, {f['n']} q x 2 arms, {f['batch']} side by side",
            f"{f['seconds']} s",
            "<= 60 s",
            ratio(f["seconds"], f["implied_seconds"]),
            str(f["others"]),
        )
    )
    rows.append(
        (
            "  forge prompt tokens sent / evaluated",
            f"{t['prompt_sent']:,} / {t['prompt_evaluated']:,}",
            "",
            "",
            "",
        )
    )
    one = report.get("forge_one_at_a_time")
    if one:
        differ = sum(a != b for a, b in zip(f["verdicts"], one["verdicts"]))
        rows.append(
            (
                "  the same, one question at a time",
                f"{one['seconds']} s",
                "",
                ratio(one["seconds"], one["implied_seconds"]),
                str(one["others"]),
            )
        )
        rows.append(
            (
                "  forged without stop: side by side / one at a time",
                f"{f['forged']['without_stop']} / {one['forged']['without_stop']} "
                f"({differ} verdicts differ)",
                "",
                "",
                "",
            )
        )
    text, native = report["eval_text"], report["eval_native"]
    runs = [("text", text), ("native", native)]
    if "eval_native_exemplar" in report:
        runs.append(("native + exemplar", report["eval_native_exemplar"]))
    for name, e in runs:
        rows.append(
            (
                f"{name} evaluation, per task ({e['tasks']} tasks)",
                f"{e['per_task']} s",
                "<= 2x text" if name != "text" else "",
                ratio(e["seconds"], e["implied_seconds"]),
                str(e["others"]),
            )
        )
        rows.append(
            (f"  {name}: model calls, s per call", f"{e['calls']}, {e['per_call']} s", "", "", "")
        )
        rows.append(
            (
                f"  {name}: tokens generated per call",
                f"{e['usage']['generated'] / max(1, e['calls']):.0f}",
                "",
                "",
                "",
            )
        )
        rows.append(
            (f"  {name}: tasks answered right", f"{e['success']} of {e['tasks']}", "", "", "")
        )
        rows.append(
            (
                f"  {name}: runs ended by",
                ", ".join(f"{k} {v}" for k, v in e["stopped_by"].items()),
                "",
                "",
                "",
            )
        )
        rows.append(
            (
                f"  {name}: prompt tokens sent / evaluated",
                f"{e['usage']['prompt_sent']:,} / {e['usage']['prompt_evaluated']:,}",
                "",
                "",
                "",
            )
        )
    rows.append(
        (
            "native / text, per task",
            f"{native['per_task'] / text['per_task']:.2f}x",
            "<= 2x",
            "",
            "",
        )
    )
    rows.append(
        (
            "native / text, per model call",
            f"{native['per_call'] / text['per_call']:.2f}x",
            "",
            "",
            "",
        )
    )
    if "eval_native_exemplar" in report:
        ex = report["eval_native_exemplar"]
        rows.append(
            (
                "native + exemplar / text, per task",
                f"{ex['per_task'] / text['per_task']:.2f}x",
                "<= 2x",
                "",
                "",
            )
        )
    agents = report.get("agents")
    if agents:
        b, n = agents["best"], agents["native_pool_k1"]
        for name, e in (("text best", b), ("native_pool_k1", n)):
            rows.append(
                (
                    f"working agent {name}, per task ({e['tasks']} test tasks)",
                    f"{e['per_task']} s",
                    "<= 2x text" if name != "text best" else "",
                    "",
                    str(e["others"]),
                )
            )
            rows.append(
                (
                    f"  {name}: steps, prompt / completion tokens per task, right",
                    f"{e['steps']}, {e['prompt_tokens']:,} / {e['completion_tokens']}, "
                    f"{e['success']} of {e['tasks']}",
                    "",
                    "",
                    "",
                )
            )
        rows.append(
            (
                "working agents native / text, per task",
                f"{n['per_task'] / b['per_task']:.2f}x",
                "<= 2x",
                "",
                "",
            )
        )
    rows.append(
        (
            "loop overhead (text steps, outside the model)",
            f"{text['loop_overhead']:.2%}",
            "<= 1%",
            "",
            "",
        )
    )
    rows.append(
        ("  evaluation harness (logs, scoring)", f"{text['harness_overhead']:.2%}", "", "", "")
    )
    if "notebooks" in report:
        nb = report["notebooks"]
        rows.append(
            (
                "notebook suite under nbval (CI mode)",
                f"{nb['seconds']} s ({nb['summary']})",
                "<= 300 s",
                "",
                str(nb["others"]),
            )
        )
    if "memory" in report:
        mem = report["memory"]
        rows.append(
            (
                f"kernel peak memory, heaviest of {len(mem['each'])} ({mem['notebook']})",
                f"{mem['peak_mib']} MiB",
                "<= 500 MB (477 MiB)",
                "",
                str(mem["others"]),
            )
        )
        for e in mem["each"]:
            rows.append((f"  {e['notebook']}", f"{e['peak_mib']} MiB", "", "", ""))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--questions", type=int, default=100, help="forgery questions (default 100)"
    )
    parser.add_argument(
        "--tasks", type=int, default=10, help="evaluation tasks per protocol (default 10)"
    )
    parser.add_argument(
        "--per-category",
        type=int,
        default=1,
        help="test tasks per category for the "
        "working agents, text best against native_pool_k1 (default 1: 13 tasks)",
    )
    parser.add_argument(
        "--notebooks",
        action="store_true",
        help="also time the notebook suite under nbval and measure kernel memory (minutes)",
    )
    parser.add_argument(
        "--memory",
        type=Path,
        nargs="*",
        default=None,
        help="measure a kernel's peak memory on these notebooks (with no names, "
        "and by default with --notebooks: every notebook)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=ROOT / "benchmarks" / "results" / f"bench-{time.strftime('%Y-%m-%d')}.json",
    )
    args = parser.parse_args()

    import react_lab.lab.notebook
    from react_lab.lab.backends.local import local_model
    from react_lab.lab.backends.threads import (
        cgroup_cpu_quota,
        default_threads,
        usable_cpus,
    )

    report: dict = {
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "usable_cpus": usable_cpus(),
            "cgroup_quota": cgroup_cpu_quota(),
            "threads": default_threads(),
            "python": platform.python_version(),
        },
    }
    with Meter() as m:
        report["warm_up"] = react_lab.lab.notebook.warm_up(model=True)
    report["warm_up"]["others"] = m.others
    model = local_model()
    with Meter() as m:
        report["raw"] = raw_speed(model)
    report["raw"]["others"] = m.others
    from react_lab.lab.experiments.forge import BATCH

    report["forge"] = forge_experiment(model, report["raw"], args.questions, BATCH)
    report["forge_one_at_a_time"] = forge_experiment(model, report["raw"], args.questions, 1)
    report["eval_text"] = evaluation(model, report["raw"], "text", args.tasks)
    report["eval_native"] = evaluation(model, report["raw"], "native", args.tasks)
    report["eval_native_exemplar"] = evaluation(
        model, report["raw"], "native", args.tasks, exemplar=True
    )
    report["agents"] = working_agents(model, args.per_category)
    if args.notebooks:
        report["notebooks"] = notebook_suite()
    if args.memory is not None or args.notebooks:
        every = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
        report["memory"] = kernel_memory(args.memory or every)

    rows = [("what", "measured", "limit / goal", "/ model-only", "others")] + table(report)
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    print(f"\nwarm-up (one-off costs, paid before the first step): {report['warm_up']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({**report, "table": rows}, indent=1) + "\n")
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()

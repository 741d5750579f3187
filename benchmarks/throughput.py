"""Benchmark: evaluation throughput against runs in flight (``evaluate(..., concurrency=N)``).

Run (under the model lock: it starts llama-cpp-python's server on the embedded model)::

    flock /tmp/react_lab_model.lock env REACT_LAB_THREADS=2 \\
        .venv/bin/python benchmarks/throughput.py [--plot docs/throughput.png]

Two endpoints, both on 127.0.0.1 and started here:

* a latency-bound one: the tests' fake OpenAI-compatible server (``tests/helpers/fake_openai.py``),
  which answers every request after a fixed delay and serves requests in parallel, as a
  hosted provider does;
* llama-cpp-python's own server on the embedded model (``python -m react_lab.lab.backends.serve``'s
  command line), which runs one generation at a time.

For each N it runs the same tasks with the text protocol and prints tasks per second,
the speed-up over N=1, and whether the records equal the serial run's (timings left
out). Prints one JSON object at the end; ``--plot`` saves the figure.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from helpers.fake_openai import FakeOpenAI  # noqa: E402
from helpers.servers import llama_server  # noqa: E402

from react_lab.lab.backends.endpoints import OpenAIModel  # noqa: E402
from react_lab.lab.backends.serve import EXTRA_BODY, MODEL_ALIAS  # noqa: E402
from react_lab.lab.experiments.evals import evaluate  # noqa: E402
from react_lab.lab.experiments.tasks import load_tasks  # noqa: E402


def content(record: dict) -> dict:
    """A record without timings."""
    steps = [{k: v for k, v in s.items() if k != "seconds"} for s in record["steps"]]
    return {**{k: v for k, v in record.items() if k != "seconds"}, "steps": steps}


def sweep(model, tasks, levels) -> list[dict]:
    """Evaluate ``tasks`` at each concurrency level; one row per level."""
    rows, serial = [], None
    with tempfile.TemporaryDirectory() as cache:
        for n in levels:
            t0 = time.perf_counter()
            run = evaluate(
                tasks, model, use_cache=False, progress=False, concurrency=n, cache_dir=cache
            )
            seconds = time.perf_counter() - t0
            steps = sum(len(r["steps"]) for r in run.records)
            same = None if serial is None else [content(r) for r in run.records] == serial
            serial = serial or [content(r) for r in run.records]
            rows.append(
                {
                    "concurrency": n,
                    "tasks": len(tasks),
                    "model_calls": steps,
                    "seconds": round(seconds, 2),
                    "tasks_per_second": round(len(tasks) / seconds, 3),
                    "same_as_serial": same,
                }
            )
            base = rows[0]["tasks_per_second"]
            rows[-1]["speedup"] = round(rows[-1]["tasks_per_second"] / base, 2)
            print(
                f"  N={n:<2} {seconds:6.1f} s  {rows[-1]['tasks_per_second']:6.2f} tasks/s  "
                f"x{rows[-1]['speedup']:<5} same as serial: {same}",
                flush=True,
            )
    return rows


def plot(results: dict, path: Path) -> None:
    """Speed-up against N for both endpoints, with the ideal N x line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    levels = [r["concurrency"] for r in results["fake"]["rows"]]
    ax.plot(levels, levels, ":", color="grey", label="ideal: N x")
    for key, label, marker in (
        ("fake", f"latency-bound server ({results['fake']['delay']} s per request, parallel)", "o"),
        ("llama", "llama-cpp-python server (one generation at a time)", "s"),
    ):
        rows = results[key]["rows"]
        ax.plot(
            [r["concurrency"] for r in rows],
            [r["speedup"] for r in rows],
            marker=marker,
            label=label,
        )
    ax.set_xlabel("runs in flight (react-lab eval --concurrency N)")
    ax.set_ylabel("throughput / throughput at N=1")
    ax.set_xticks(levels)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("Evaluation throughput against runs in flight")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    print(f"saved {path}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--delay", type=float, default=0.25, help="fake server's seconds per request")
    p.add_argument("--fake-tasks", type=int, default=16)
    p.add_argument("--llama-tasks", type=int, default=6)
    p.add_argument("--levels", default="1,2,4,8")
    p.add_argument("--plot", type=Path, default=None, help="save the figure (PNG) here")
    args = p.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    results = {}
    print(f"latency-bound fake server, {args.delay} s per request:")
    with FakeOpenAI(delay=args.delay) as server:
        model = OpenAIModel("fake-model", base_url=server.base_url)
        results["fake"] = {
            "delay": args.delay,
            "rows": sweep(model, load_tasks(n=args.fake_tasks), levels),
        }
    print("llama-cpp-python's server on the embedded model:")
    with llama_server() as base_url:
        model = OpenAIModel(
            MODEL_ALIAS, base_url=base_url, extra_body=json.loads(EXTRA_BODY), timeout=300
        )
        results["llama"] = {"rows": sweep(model, load_tasks(n=args.llama_tasks), levels)}
    if args.plot:
        plot(results, args.plot)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Execute notebooks top to bottom and store them as a learner first sees them.

    flock /tmp/react_lab_model.lock env REACT_LAB_THREADS=2 \\
        .venv/bin/python scripts/store-notebooks.py notebooks/02_the_loop.ipynb [...]

Each notebook runs in a fresh kernel (nbclient), as "Restart & Run All" would run it, with:

* the inline matplotlib backend (MPLBACKEND unset), so every figure is stored as image/png;
* the exercise stubs, not the reference solutions (REACT_LAB_SOLUTIONS unset), so each
  checker stores the learner's "not written yet — write ..." message. A checker cell's
  output then differs from CI's (which checks the solutions and prints ✓), so a checker
  cell marked ``# NBVAL_CHECK_OUTPUT`` is re-marked ``# NBVAL_IGNORE_OUTPUT`` (in CI the
  checker still raises on a wrong solution, which nbval reports);
* a fresh results cache (REACT_LAB_CACHE), so every number is computed in this run;
* a cell tagged ``no-stored-output`` stored without its output, which, with the reference
  standing in for the learner's code, would show a solution (07's diff of the two loops);
* the widget state stored in the notebook's metadata, so stored widgets render (in a
  trusted notebook: scripts/workshop.sh and binder/postBuild run ``jupyter trust``),
  and each stored progress bar's text fallback rewritten to its final state.

The file is written only if the run succeeded and the stored notebook passes the checks
of :func:`problems` (execution counts 1..N, figures stored, widget state present, no
exercise stored as solved), in exactly the form JupyterLab itself saves: nbformat 4.5 with
cell ids, and the kernelspec and language_info of the kernel that ran it. JupyterLab
rewrites those two when it starts a kernel, so any difference marks a notebook changed
the moment it is opened (the stored kernelspec used to say "Python 3" where ipykernel's
says "Python 3 (ipykernel)"); run this with the Python the workshop uses.
"""

from __future__ import annotations

import argparse
import html
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import nbformat

#: Run after the notebook's own cells (then removed): the kernel's peak resident memory, KiB.
#: VmHWM, not ru_maxrss: Linux carries ru_maxrss across execve from the process that started it.
MEMORY_PROBE = (
    "print('PEAK_KIB', next(line.split()[1] for line in open('/proc/self/status') "
    "if line.startswith('VmHWM:')))"
)
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
CHECKER_CALL = re.compile(r"^\s*check\(\s*[\"']", re.M)
#: A call of one of the lab's figure functions (react_lab.lab.notebook.plots), which return a
#: Figure.
PLOT_CALL = re.compile(r"\bplot_\w+\(")
#: The cell tag of a cell stored without its output: run without the learner's code, it would
#: print a reference solution (07's diff of the two loops).
NO_STORED_OUTPUT = "no-stored-output"
#: What react_lab.workshop.exercises.check prints for a stub that is not written yet.
NOT_WRITTEN = "not written yet"


def is_checker(cell) -> bool:
    """True for an exercise checker cell: a code cell calling ``check("name", ...)``."""
    return cell.cell_type == "code" and bool(CHECKER_CALL.search(cell.source))


def prepare(nb) -> list[str]:
    """Clear outputs and run metadata, upgrade to nbformat 4.5 with ids.

    Returns what was re-marked.
    """
    from nbformat.corpus.words import generate_corpus_id

    notes = []
    nb.nbformat, nb.nbformat_minor = 4, max(nb.nbformat_minor, 5)
    nb.metadata.pop("widgets", None)
    for i, cell in enumerate(nb.cells):
        cell.setdefault("id", generate_corpus_id())
        cell.metadata.pop("execution", None)  # nbclient's timings: noise in every diff
        if cell.cell_type != "code":
            continue
        cell.outputs, cell.execution_count = [], None
        if is_checker(cell) and re.search(r"^# NBVAL_CHECK_OUTPUT$", cell.source, re.M):
            cell.source = re.sub(
                r"^# NBVAL_CHECK_OUTPUT$", "# NBVAL_IGNORE_OUTPUT", cell.source, count=1, flags=re.M
            )
            notes.append(
                f"cell {i}: checker re-marked NBVAL_IGNORE_OUTPUT (its stored output is "
                "the learner's message, CI's is ✓)"
            )
        tags = cell.metadata.get("tags", [])
        if is_checker(cell) and "nbval-check-output" in tags:  # the same, as nbval's cell tag
            cell.metadata["tags"] = [t for t in tags if t != "nbval-check-output"]
            cell.metadata["tags"].append("nbval-ignore-output")
            notes.append(
                f"cell {i}: checker re-tagged nbval-ignore-output (its stored output is "
                "the learner's message, CI's is ✓)"
            )
    return notes


def widget_state(nb) -> dict:
    """The stored widget models: model id -> {model_name, state, ...} (empty if none)."""
    return nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})


def progress_text(model_id: str, state: dict) -> str | None:
    """The final text of a stored tqdm bar (an HBox of HTML, progress, HTML), or None.

    tqdm.auto draws its bar as such a widget; the text/plain stored beside the widget is
    its first frame ("0%| | 0/200"), which is what a viewer without widgets shows.
    """
    box = state.get(model_id, {})
    kids = [
        state.get(str(ref).removeprefix("IPY_MODEL_"), {})
        for ref in box.get("state", {}).get("children", [])
    ]
    names = [k.get("model_name") for k in kids]
    if (
        box.get("model_name") != "HBoxModel"
        or len(kids) != 3
        or names[0] != "HTMLModel"
        or names[1] not in ("FloatProgressModel", "IntProgressModel")
        or names[2] != "HTMLModel"
    ):
        return None
    bar = kids[1]["state"]
    filled = round(10 * bar.get("value", 0) / bar["max"]) if bar.get("max") else 0
    left, right = (
        html.unescape(kids[i]["state"].get("value", "")).replace("\u2007", " ") for i in (0, 2)
    )
    return f"{left}|{'█' * filled}{' ' * (10 - filled)}|{right}"


def finish(nb, kernel_name: str) -> None:
    """Set the kernelspec JupyterLab would write.

    Rewrites stored progress bars' text to their end; drops the output of a cell tagged
    :data:`NO_STORED_OUTPUT`.
    """
    nb.metadata["kernelspec"] = kernelspec(kernel_name)
    state = widget_state(nb)
    for cell in nb.cells:
        if NO_STORED_OUTPUT in cell.metadata.get("tags", []):
            cell.outputs = []  # what it prints without the learner's code is a solution
        for out in cell.get("outputs", []):
            view = out.get("data", {}).get(WIDGET_VIEW)
            text = view and progress_text(view["model_id"], state)
            if text:
                out["data"]["text/plain"] = text


def problems(nb) -> list[str]:
    """What keeps ``nb`` from being a stored learner's view; empty when it is one.

    Checks: nbformat 4.5 with cell ids; the executed code cells numbered 1..N in order;
    no error output; a figure stored as image/png in every cell that calls ``plt.show()`` or
    one of the lab's ``plot_...`` functions; stored state for every widget view; every
    exercise checker stored with the "not written yet" message (the stub, not a solution);
    no run timings; the kernelspec of the installed kernel (what JupyterLab writes on
    opening).
    """
    found = []
    if (nb.nbformat, nb.nbformat_minor) < (4, 5) or any("id" not in c for c in nb.cells):
        found.append(
            f"nbformat {nb.nbformat}.{nb.nbformat_minor} without cell ids "
            "(JupyterLab adds them on opening)"
        )
    code = [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.source.strip()]
    counts = [c.execution_count for _, c in code]
    if counts != list(range(1, len(code) + 1)):
        found.append(f"execution counts are {counts}, not 1..{len(code)}")
    state = widget_state(nb)
    for i, cell in code:
        outputs = cell.get("outputs", [])
        kinds = {k for o in outputs for k in o.get("data", {})}
        if any(o.output_type == "error" for o in outputs):
            found.append(f"cell {i}: an error is stored")
        if "plt.show()" in cell.source and "image/png" not in kinds:
            found.append(f"cell {i}: calls plt.show() but stores no image (was MPLBACKEND set?)")
        elif PLOT_CALL.search(cell.source) and "image/png" not in kinds:
            found.append(
                f"cell {i}: draws a figure (plot_...) but stores no image: end the cell with "
                "the call, or call plt.show()"
            )
        for o in outputs:
            view = o.get("data", {}).get(WIDGET_VIEW)
            if view and view["model_id"] not in state:
                found.append(f"cell {i}: a widget is stored without its state")
        text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
        if is_checker(cell) and NOT_WRITTEN not in text:
            found.append(
                f"cell {i}: the exercise checker does not show the learner's "
                f"'{NOT_WRITTEN}' message (stored: {text.strip()[:80]!r}); store the stub "
                "and run without REACT_LAB_SOLUTIONS"
            )
    timed = [i for i, c in enumerate(nb.cells) if "execution" in c.metadata]
    if timed:
        found.append(
            f"{len(timed)} cells store run timings in their metadata (cells {timed[0]}, ...)"
        )
    stored, wanted = nb.metadata.get("kernelspec", {}), kernelspec(stored_name(nb))
    if stored != wanted:
        found.append(
            f"kernelspec {stored} is not the installed kernel's {wanted}: JupyterLab "
            "rewrites it on opening, which marks the notebook changed"
        )
    return found


def stored_name(nb) -> str:
    """The kernel name stored in ``nb`` (default python3)."""
    return nb.metadata.get("kernelspec", {}).get("name", "python3")


def kernelspec(kernel_name: str) -> dict:
    """The notebook metadata JupyterLab writes for ``kernel_name``'s installed kernel spec."""
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec(kernel_name)
    # The same three keys, from the same kernel spec, that JupyterLab sets on opening.
    return {"display_name": spec.display_name, "language": spec.language, "name": kernel_name}


def cell_seconds(nb) -> list[tuple[int, float]]:
    """``(cell index, seconds)`` of every timed code cell.

    From nbclient's execute_input to execute_reply.
    """
    from datetime import datetime

    timed = []
    for i, cell in enumerate(nb.cells):
        run = cell.metadata.get("execution", {})
        start, end = run.get("iopub.execute_input"), run.get("shell.execute_reply")
        if start and end:
            seconds = (
                datetime.fromisoformat(end.replace("Z", "+00:00"))
                - datetime.fromisoformat(start.replace("Z", "+00:00"))
            ).total_seconds()
            timed.append((i, seconds))
    return timed


def store(
    path: Path, *, timeout: int, kernel_name: str, max_cell_seconds: float | None = None
) -> None:
    """Execute the notebook at ``path`` in a fresh kernel and store it; raise on any problem.

    Prints the three slowest cells of the run. With ``max_cell_seconds``, a cell that
    computed for longer stops the store (nothing is written).
    """
    # nbclient's client, but a reply waits at most a second unseen (a lost wake-up of its
    # asyncio poll once held notebook 05 for its whole cell timeout):
    # react_lab.lab.notebook.headless
    from react_lab.lab.notebook.headless import SteadyNotebookClient as NotebookClient

    nb = nbformat.read(path, as_version=4)
    for note in prepare(nb):
        print(f"    {path.name} {note}")
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name=kernel_name,
        record_timing=True,
        store_widget_state=True,
        resources={"metadata": {"path": str(path.parent.resolve())}},
    )
    probe = nbformat.v4.new_code_cell(MEMORY_PROBE)
    nb.cells.append(probe)
    client.execute()  # raises CellExecutionError on the first failing cell; nothing is written
    nb.cells.remove(probe)
    peak = "".join(o.get("text", "") for o in probe.outputs).split("PEAK_KIB")
    memory = (
        f"; kernel peak memory {int(peak[1].split()[0]) / 1024:.0f} MiB" if len(peak) > 1 else ""
    )
    timed = cell_seconds(nb)
    slowest = sorted(timed, key=lambda t: -t[1])[:3]
    print(
        f"    compute {sum(s for _, s in timed):.1f} s over {len(timed)} cells; slowest: "
        + ", ".join(f"cell {i} {s:.1f} s" for i, s in slowest)
        + memory
    )
    for cell in nb.cells:
        # timings are noise in every diff: reported, not stored
        cell.metadata.pop("execution", None)
    if max_cell_seconds is not None and slowest and slowest[0][1] > max_cell_seconds:
        raise SystemExit(
            f"{path}: not stored: cell {slowest[0][0]} computed for {slowest[0][1]:.1f} s "
            f"(limit {max_cell_seconds:g} s)"
        )
    finish(nb, kernel_name)
    found = problems(nb)
    if found:
        raise SystemExit(f"{path}: not stored:\n  " + "\n  ".join(found))
    nbformat.validate(nb)
    tmp = path.with_name(f".{path.name}.storing")
    nbformat.write(nb, tmp)  # the JSON layout JupyterLab saves: indent 1, sorted keys
    tmp.replace(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--timeout", type=int, default=2400, help="seconds per cell (default 2400)")
    parser.add_argument("--kernel", default="python3", help="kernel name (default python3)")
    parser.add_argument(
        "--max-cell-seconds",
        type=float,
        default=None,
        help="refuse to store a notebook in which a cell computed for longer",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="execute nothing: report what keeps each stored notebook from "
        "being a learner's view (exit 1 if anything)",
    )
    args = parser.parse_args(argv)
    if args.check:
        bad = 0
        for path in args.notebooks:
            found = problems(nbformat.read(path, as_version=4))
            bad += bool(found)
            print(f"{path}: " + ("ok" if not found else "\n  " + "\n  ".join(found)))
        return 1 if bad else 0
    # The learner's kernel: inline figures, the exercise stubs, a fresh cache.
    for var in ("REACT_LAB_SOLUTIONS", "MPLBACKEND"):
        os.environ.pop(var, None)
    os.environ["PYTHONHASHSEED"] = "0"
    for path in args.notebooks:
        with tempfile.TemporaryDirectory(prefix="react_lab_store_") as cache:
            os.environ["REACT_LAB_CACHE"] = cache
            t0 = time.perf_counter()
            print(f"==> {path}")
            store(
                path,
                timeout=args.timeout,
                kernel_name=args.kernel,
                max_cell_seconds=args.max_cell_seconds,
            )
            print(f"    stored in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

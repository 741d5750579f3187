"""Check that the lab is ready offline: model file, llama.cpp, database; ``python -m react_lab.doctor``.

Prints one line per check and exits 1 with a hint when one fails. The setup script
runs it last so a broken install is reported before the workshop starts.
"""
from __future__ import annotations

import sys
import time

from .cost import encoding
from .models import local_model, smollm2_path
from .tools import DB_PATH, open_db


def checks():
    """Yield ``(name, ok, detail)`` for each readiness check (loads the model once)."""
    try:
        path = smollm2_path()
        yield "embedded model file", True, f"{path.name} ({path.stat().st_size / 1e6:.0f} MB)"
    except FileNotFoundError as exc:
        yield "embedded model file", False, str(exc)
        return
    try:
        t0 = time.perf_counter()
        out = local_model().complete("Say OK.", max_tokens=4)
        yield "llama-cpp-python", True, (f"loaded and completed {out.completion_tokens} tokens "
                                         f"in {time.perf_counter() - t0:.1f} s")
    except Exception as exc:  # report, don't crash: this is a diagnostic
        yield "llama-cpp-python", False, f"{type(exc).__name__}: {exc}"
    conn = open_db()
    n = conn.execute("select count(*) from invoices").fetchone()[0]
    yield "billing database", True, f"{DB_PATH.name}: {n} invoices, opened read-only"
    try:
        yield "tiktoken cl100k_base (offline)", True, f"{len(encoding().encode('hello world'))} tokens"
    except ImportError:
        pass
    except Exception as exc:
        yield "tiktoken cl100k_base (offline)", False, f"{type(exc).__name__}: {exc}"


def main() -> int:
    failed = 0
    for name, ok, detail in checks():
        print(f"  {'ok ' if ok else 'FAIL'} {name}: {detail}")
        failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

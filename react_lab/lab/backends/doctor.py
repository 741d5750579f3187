"""Check that the lab is ready offline: model file, llama.cpp, database.

``python -m react_lab.lab.backends.doctor``. Prints one line per check and exits 1 with a
hint when one fails. The setup script runs it last so a broken install is reported before
the workshop starts. With ``OPENAI_BASE_URL`` set it also checks that endpoint and
``OPENAI_MODEL`` (a room on one server: see docs/workshop.md).
"""

from __future__ import annotations

import sys
import time

from ...cost import encoding
from ...tools import DB_PATH, open_db
from .local import local_model, smollm2_path


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
        yield (
            "llama-cpp-python",
            True,
            (
                f"loaded and completed {out.completion_tokens} tokens "
                f"in {time.perf_counter() - t0:.1f} s"
            ),
        )
    except Exception as exc:  # report, don't crash: this is a diagnostic
        yield "llama-cpp-python", False, f"{type(exc).__name__}: {exc}"
    conn = open_db()
    n = conn.execute("select count(*) from invoices").fetchone()[0]
    yield "billing database", True, f"{DB_PATH.name}: {n} invoices, opened read-only"
    try:
        yield (
            "tiktoken cl100k_base (offline)",
            True,
            f"{len(encoding().encode('hello world'))} tokens",
        )
    except ImportError:
        pass
    except Exception as exc:
        yield "tiktoken cl100k_base (offline)", False, f"{type(exc).__name__}: {exc}"


def endpoint_checks():
    """Yield ``(name, ok, detail)`` for the OpenAI-compatible endpoint.

    Only when ``OPENAI_BASE_URL`` is set.

    Lists the served models, then asks ``OPENAI_MODEL`` for a 4-token completion with the
    text protocol's stop sequence, and reports the address, the model, the chat template
    rendered client-side and who applied ``stop``. Nothing is yielded without
    ``OPENAI_BASE_URL``.
    """
    import os

    base_url = os.environ.get("OPENAI_BASE_URL")
    if not base_url:
        return
    from ...protocol import STOP
    from .endpoints import EndpointError, OpenAIModel

    try:
        model = OpenAIModel()
    except ValueError as exc:
        yield "endpoint", False, f"OPENAI_BASE_URL={base_url}: {exc}"
        return
    try:
        served = [m.id for m in model.client.models.list()]
    except Exception as exc:  # noqa: BLE001 -- a diagnostic reports, it does not crash
        yield "endpoint", False, str(model._error(exc))
        return
    yield "endpoint", True, f"OPENAI_BASE_URL={base_url} serves {', '.join(served) or 'no models'}"
    try:
        t0 = time.perf_counter()
        out = model.complete("Say OK.", stop=STOP, max_tokens=4)
        yield (
            "endpoint model",
            True,
            (
                f"OPENAI_MODEL={model.name} completed {out.completion_tokens} tokens in "
                f"{time.perf_counter() - t0:.1f} s (chat template: {model.chat_template}; "
                f"stop applied by the {out.stop_mode})"
            ),
        )
    except (EndpointError, ValueError) as exc:
        yield "endpoint model", False, str(exc)


def main() -> int:
    from itertools import chain

    failed = 0
    for name, ok, detail in chain(checks(), endpoint_checks()):
        print(f"  {'ok ' if ok else 'FAIL'} {name}: {detail}")
        failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

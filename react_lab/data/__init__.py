"""The shipped data: the billing database, the task set, and the public failure cases.

``billing.sqlite`` is built by ``python -m react_lab.lab.builders.build``. ``cases/`` holds real
model output from public bug reports, one JSON object a line, each with its source link
and ``why``; :func:`load_cases` reads them from the installed package (importlib.resources),
so a notebook on Binder finds them without the repository around it.
"""

from __future__ import annotations

import json
from importlib import resources

#: The case files under ``react_lab/data/cases/``: text completions for the tolerant
#: parser, and native ``arguments`` strings for the argument check.
CASE_FILES = {
    "parse": "public-parse-failures.jsonl",
    "native-args": "public-native-arg-failures.jsonl",
}


def load_cases(kind: str) -> list[dict]:
    """Return the public cases of ``kind`` (``"parse"`` or ``"native-args"``), in file order.

    Each case is a dict with at least ``id``, ``source`` and ``why``; parse cases carry
    ``model_output`` and ``expected``, argument cases ``tool``, ``arguments`` and ``accept``.
    Raises ValueError for an unknown ``kind``.
    """
    if kind not in CASE_FILES:
        raise ValueError(f"unknown case kind {kind!r}; use one of: {', '.join(CASE_FILES)}")
    text = (
        resources.files(f"{__name__}.cases").joinpath(CASE_FILES[kind]).read_text(encoding="utf-8")
    )
    return [json.loads(line) for line in text.splitlines() if line.strip()]

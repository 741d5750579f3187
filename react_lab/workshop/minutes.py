"""A notebook's minutes for a room, read from the notebook's own metadata.

Each core notebook states once how long a room takes over it, in its metadata:
``{"react_lab": {"minutes": 20, "discussion": 3}}``. ``minutes`` is the room-minutes
estimate of its work (what a learner reads, the code lines, the quiz questions and the lines
each exercise has them type, as ``../shared/tools/room_minutes.py`` counts them; a test
checks that they agree); ``discussion`` is what the guide budgets for the room to talk it
over, which no count measures. Its first cell prints both with :func:`show_minutes`, and
the guide's plan (``docs/workshop.md``) carries the same numbers; a test checks that too.

A kernel does not know which notebook it runs, so :func:`notebook_file` looks in the
places that do: the file the notebook names itself (its own filename, relative to the
kernel's working directory, which Jupyter, nbclient and nbval set to the notebook's
folder), then ``JPY_SESSION_NAME``, which JupyterLab sets to the path of the notebook
that started the kernel (so a renamed copy still finds itself). When neither is there it
says so in one line instead of raising.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

#: The notebook metadata key this lab writes under.
KEY = "react_lab"
#: The environment variable JupyterLab (jupyter_server 2) sets in a notebook's kernel.
SESSION_ENV = "JPY_SESSION_NAME"


def read_minutes(path: str | os.PathLike, key: str = "minutes") -> int | None:
    """The ``react_lab.minutes`` (or another ``key``, ``"discussion"``) of the notebook file
    at ``path``, or None when it has none.

    Raises ``OSError`` when the file cannot be read, ``ValueError`` when it is not JSON.
    """
    meta = json.loads(Path(path).read_text(encoding="utf-8")).get("metadata", {})
    minutes = meta.get(KEY, {}).get(key)
    return minutes if isinstance(minutes, int) and not isinstance(minutes, bool) else None


def notebook_file(
    filename: str, *, cwd: str | os.PathLike | None = None, environ: dict | None = None
) -> Path | None:
    """Find the running notebook's file: ``filename`` in ``cwd``, else ``$JPY_SESSION_NAME``.

    Returns the first candidate that is a notebook file with minutes in its metadata,
    or None. ``cwd`` and ``environ`` default to the process's own.
    """
    cwd = Path.cwd() if cwd is None else Path(cwd)
    environ = os.environ if environ is None else environ
    candidates = [cwd / filename]
    session = environ.get(SESSION_ENV, "")
    if session.endswith(".ipynb"):
        candidates += [Path(session), cwd / Path(session).name]
    for path in candidates:
        try:
            if path.is_file() and read_minutes(path) is not None:
                return path
        except (OSError, ValueError):
            continue
    return None


def show_minutes(filename: str) -> int | None:
    """Print how long a room takes over this notebook; return the minutes (None if not found).

    ``filename`` is the notebook's own file name, e.g. ``"01_text_protocol.ipynb"``. The
    line says what the minutes count, and the discussion beside them when the notebook
    budgets one.
    """
    path = notebook_file(filename)
    if path is None:
        print(
            f"(this notebook's minutes are in its metadata, {KEY}.minutes; {filename} is not in "
            f"{Path.cwd()} and {SESSION_ENV} does not name it)"
        )
        return None
    minutes, talk = read_minutes(path), read_minutes(path, "discussion")
    print(
        f"About {minutes} minutes of reading, code, exercises and quiz (estimated)"
        + (f", plus {talk} of discussion." if talk else "; discussion not included.")
    )
    return minutes

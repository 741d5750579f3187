"""The shipped database kept unchanged: working copies, checksums, payments on a copy only.

:data:`react_lab.tools.DB_PATH` is opened read-only by every read-only tool; the one
tool that writes, ``schedule_payment``, gets its connection from :func:`payment_tools`,
which opens a copy made by :func:`working_copy` and refuses the shipped file. The
notebooks and the tests compare :func:`db_checksum` before and after, so a run that
wrote to the shipped file would be caught.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

from ..billing import ToolError
from ..tools import DB_PATH, Tool, payment_tool


def working_copy(dest_dir: str | Path | None = None) -> Path:
    """Copy the shipped database into dest_dir and return the copy's path.

    ``dest_dir`` defaults to a new temp dir, removed when the Python process exits.
    """
    if dest_dir is None:
        dest_dir = tempfile.mkdtemp(prefix="react_lab_")
        atexit.register(shutil.rmtree, dest_dir, ignore_errors=True)
    dest = Path(dest_dir) / DB_PATH.name
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(DB_PATH, dest)
    return dest


def db_checksum(path: str | Path = DB_PATH) -> str:
    """Return the sha256 hex digest of the file's bytes."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def is_shipped(path: str | Path) -> bool:
    """True for the installed database file and for the repository's ``react_lab/data/`` copy.

    A non-editable install (as on Binder) puts ``DB_PATH`` in site-packages; the file in the
    repository is just as shipped.
    """
    resolved = Path(path).resolve()
    if resolved == DB_PATH or DB_PATH.exists() and os.path.samefile(path, DB_PATH):
        return True
    return resolved.name == DB_PATH.name and resolved.parent.parts[-2:] == ("react_lab", "data")


def payment_tools(db_path: str | Path) -> dict[str, Tool]:
    """Return {"schedule_payment": Tool} writing to the copy at db_path; ToolError for DB_PATH."""
    db_path = Path(db_path)
    if not db_path.is_file():
        raise FileNotFoundError(f"no database at {db_path}; make one with working_copy()")
    if is_shipped(db_path):
        raise ToolError("refusing to write to the shipped database; pass working_copy() instead")
    with sqlite3.connect(f"{db_path.resolve().as_uri()}?mode=ro", uri=True) as probe:
        try:
            probe.execute("SELECT count(*) FROM scheduled_payments").fetchone()
        except sqlite3.DatabaseError as exc:
            raise ValueError(
                f"{db_path} is not a copy of the billing database ({exc}); "
                "make one with working_copy()"
            ) from None
    conn = sqlite3.connect(db_path, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    tool = payment_tool(conn)
    return {tool.name: tool}


#: A dollar amount as the text protocol writes it: plain decimal text, at most 2 decimals.
AMOUNT_TEXT = r"^[0-9]+(\.[0-9]{1,2})?$"


def as_text_protocol(schema: dict) -> dict:
    """``schema`` with each number property also taking its decimal text (``"48200"``).

    A text-protocol action writes every argument as text, so a learner's schema check
    (notebook 04's ``observe``) would refuse ``schedule_payment[INV-2291, 48200]`` before an
    approval gate ever saw it; the tool itself reads the text as dollars and refuses a near
    miss. Notebook 06's gate and the injection suite give the learner's agent the tool so.
    """
    properties = {
        name: {**prop, "type": ["number", "string"], "pattern": AMOUNT_TEXT}
        if prop.get("type") == "number"
        else prop
        for name, prop in schema.get("properties", {}).items()
    }
    return {**schema, "properties": properties}

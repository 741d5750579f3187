"""Cells as a notebook runs them: compiled under a cell's name, text kept where inspect looks."""

import itertools
import linecache

_numbers = itertools.count(1)


def run_cell(source: str, namespace: dict) -> dict:
    """Run ``source`` in ``namespace`` as IPython runs a cell: inspect.getsource finds its code."""
    filename = f"<test-cell-{next(_numbers)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    exec(compile(source, filename, "exec"), namespace)
    return namespace


def notebook_namespace(**names) -> dict:
    """A notebook's namespace after its imports: what the core notebooks import, plus ``names``."""
    space: dict = {"__name__": "__main__"}
    run_cell(
        "import json, re\nimport jsonschema\n"
        "from react_lab.messages import first_messages, reply_calls, tool_messages\n"
        "from react_lab.protocol import ACTION_RE, ANSWER_RE, STOP, build_prompt\n"
        "from react_lab.provenance import why_unsourced\n"
        "from react_lab.tools import call_tool, tool_schemas\n",
        space,
    )
    space.update(names)
    return space

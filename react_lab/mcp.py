"""Moved: the MCP server and client live in :mod:`react_lab.lab.mcp`.

``python -m react_lab.mcp`` (the command written into editors' MCP configs before the
lab had a room of its own) stops with a message naming the new command, which the README
gives: ``python -m react_lab.lab.mcp``.
"""

import sys

NEW_COMMAND = "python -m react_lab.lab.mcp"

if __name__ == "__main__":
    sys.exit(
        f"react_lab.mcp moved: run `{NEW_COMMAND}` with the same options "
        f'(in an MCP config: "args": ["-m", "react_lab.lab.mcp"]).'
    )

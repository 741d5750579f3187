"""Serve the embedded model over HTTP: llama-cpp-python's own OpenAI-compatible server.

``python -m react_lab.lab.backends.serve [--host 127.0.0.1] [--port 8000] [--threads N]`` starts
``python -m llama_cpp.server`` (``pip install react-lab[server]``) on the GGUF file the lab
runs in-process (:func:`react_lab.lab.backends.local.smollm2_path`), with the settings that make it
decode as the in-process model does, and prints what a learner exports to use it::

    export OPENAI_BASE_URL=http://HOST:8000/v1 OPENAI_MODEL=smollm2-135m-instruct \\
           REACT_LAB_MODEL=openai REACT_LAB_EXTRA_BODY='{"repeat_penalty": 1.0}'

The settings, against llama-cpp-python's server defaults: a 4096-token context (the
server's default is 2048; the in-process model's 4096), logits for the last token only
(the server computes them for every prompt token by default, a different batch shape
for the same numbers), and ``--chat_format chatml-function-calling``, the server's
handler that accepts ``tools`` on ``/v1/chat/completions`` for a ChatML model such as
SmolLM2 (its default handler ignores ``tools`` unless one tool is forced). The server
samples with ``repeat_penalty=1.1`` unless a request says otherwise; the in-process
model uses 1.0, hence ``REACT_LAB_EXTRA_BODY``.

The server runs one generation at a time: requests in flight queue behind each other.

What ``chatml-function-calling`` (llama-cpp-python 0.3.36, ``llama_chat_format.py``) does
with native tool calling, request by request:

* ``tool_choice`` absent or ``"none"``: the tools are not shown; a text reply.
* ``"auto"``: the model first writes ``message:`` or ``functions.<name>:`` under a
  grammar; each call's arguments are then decoded under a grammar from the tool's
  schema, and after each call the model may write ``functions.<name>:`` again, so one
  reply can hold several calls (ids ``call__<i>_<name>_<completion id>``). A *text*
  reply, though, is decoded under the same follow-up grammar (``functions.<name>:`` or
  the end of the turn), so its content is empty: the server never returns an answer
  in this mode. Request ``max_tokens`` does not bound the call's arguments.
* a named tool ``{"type": "function", "function": {"name": ...}}``: one call to that
  tool, arguments under its schema's grammar, no thought.
* ``"required"``: not handled (an ``assert`` fails: HTTP 500).
* ``tool`` messages: the template has no branch for the role, so a result is written
  as an empty ``<|im_start|>tool`` line -- content and ``tool_call_id`` dropped, the
  model never reads a result. Earlier calls are written back HTML-escaped (``&#34;``)
  and, when a turn held several, with no line between them.

So over this server the loop gets calls but the model never sees what they returned;
the lab's own test server (``tests/helpers/fake_openai.py``) stands in for the rest, and the
embedded model's native path in-process (:class:`react_lab.lab.backends.chat.LocalChatModel`)
does all of it. The other ChatML format, ``chatml``, drops ``tool`` messages too; the
``functionary`` formats need a Functionary model and its Hugging Face tokenizer.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
from pathlib import Path

#: The model name the server answers to (``OPENAI_MODEL``). It mentions SmolLM, so
#: :func:`react_lab.lab.backends.endpoints.resolve_chat_template` renders ChatML client-side for it.
MODEL_ALIAS = "smollm2-135m-instruct"
#: What the server must be sent so it samples as the in-process model (see the module doc).
EXTRA_BODY = '{"repeat_penalty": 1.0}'


def server_command(
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    threads: int | None = None,
    gguf: str | os.PathLike | None = None,
    python: str | None = None,
) -> list[str]:
    """The ``python -m llama_cpp.server`` command line (a list) that serves the embedded model.

    ``threads`` defaults to :func:`react_lab.lab.backends.threads.default_threads`
    (``REACT_LAB_THREADS``); ``gguf`` to :func:`react_lab.lab.backends.local.smollm2_path`;
    ``python`` to this interpreter. Raises ``FileNotFoundError`` when the GGUF file is
    missing.
    """
    from .local import smollm2_path
    from .threads import default_threads

    threads = threads or default_threads()
    return [
        python or sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(Path(gguf) if gguf else smollm2_path()),
        "--model_alias",
        MODEL_ALIAS,
        "--host",
        host,
        "--port",
        str(port),
        "--n_ctx",
        "4096",
        "--n_threads",
        str(threads),
        "--n_threads_batch",
        str(threads),
        "--logits_all",
        "false",
        "--chat_format",
        "chatml-function-calling",
        "--verbose",
        "false",
    ]


def learner_exports(host: str, port: int) -> str:
    """The shell line a learner runs to point every notebook and command at this server.

    A server listening on every address (``0.0.0.0``) is written ``HOST``: the learner
    puts in the address of the instructor's machine.
    """
    address = "HOST" if host in ("0.0.0.0", "::") else host  # every address: say which to use
    return (
        f"export OPENAI_BASE_URL=http://{address}:{port}/v1 OPENAI_MODEL={MODEL_ALIAS} "
        f"REACT_LAB_MODEL=openai REACT_LAB_EXTRA_BODY={shlex.quote(EXTRA_BODY)}"
    )


def main(argv: list[str] | None = None) -> int:
    """Start the server in the foreground (Ctrl-C stops it); return its exit code."""
    p = argparse.ArgumentParser(
        prog="python -m react_lab.lab.backends.serve", description=__doc__.split("\n")[0]
    )
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default %(default)s; 0.0.0.0 for a room)",
    )
    p.add_argument("--port", type=int, default=8000, help="port (default %(default)s)")
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="llama.cpp threads (default: REACT_LAB_THREADS or the usable cores, at most 4)",
    )
    args = p.parse_args(argv)
    try:
        import llama_cpp.server.app  # noqa: F401 -- only to say what is missing, early
    except ImportError as exc:
        print(
            f"react-lab serve: error: llama-cpp-python's server is not installed ({exc}); "
            "pip install 'react-lab[server]'",
            file=sys.stderr,
        )
        return 2
    try:
        cmd = server_command(host=args.host, port=args.port, threads=args.threads)
    except (FileNotFoundError, ValueError) as exc:
        print(f"react-lab serve: error: {exc}", file=sys.stderr)
        return 2
    where = (
        " (HOST: this machine's address on the room's network)"
        if args.host in ("0.0.0.0", "::")
        else ""
    )
    print(
        f"serving {Path(cmd[4]).name} as {MODEL_ALIAS!r} on {args.host}:{args.port}; "
        f"learners run{where}:\n  {learner_exports(args.host, args.port)}",
        flush=True,
    )
    try:
        return subprocess.call(cmd)
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

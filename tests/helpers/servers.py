"""Start and stop llama-cpp-python's server for the tests.

Loopback only, a free port, the embedded GGUF.

:func:`llama_server` is a context manager: it runs
:func:`react_lab.lab.backends.serve.server_command` on 127.0.0.1 with ``REACT_LAB_THREADS``
(default 2) threads, waits until ``GET /v1/models`` answers, yields the base URL, and stops
the server at the end (terminate, then kill). The server holds the model, so run the tests
that use it under the model lock.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

from react_lab.lab.backends.serve import server_command


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_up(base_url: str, proc: subprocess.Popen, timeout: float = 90.0) -> None:
    """Poll ``GET {base_url}/models`` until it answers 200.

    RuntimeError if the server died or timed out.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with code {proc.returncode} before answering")
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=2) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the server did not answer at {base_url} within {timeout:.0f} s")


@contextlib.contextmanager
def llama_server(threads: int | None = None):
    """Run llama-cpp-python's server on 127.0.0.1:<free port>; yield its base URL (``.../v1``)."""
    port = free_port()
    threads = threads or int(os.environ.get("REACT_LAB_THREADS") or 2)
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(
        server_command(host="127.0.0.1", port=port, threads=threads),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        try:
            wait_until_up(base_url, proc)
        except RuntimeError as exc:
            log.seek(0)
            raise RuntimeError(f"{exc}; its output:\n{log.read().decode(errors='replace')[-2000:]}")
        yield base_url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()

"""Execute a notebook headless without the client's lost wake-up: a reply waits at most a second.

nbclient (which nbconvert runs) waits for each cell's ``execute_reply`` with one
``await shell_channel.get_msg(timeout=cell_timeout)``: jupyter_client's async channel
awaits a zmq.asyncio poll of the shell socket. Now and then that poll is not woken when
the reply arrives: the reply sits in the socket while the client's event loop idles,
until the poll's timer fires at the cell timeout; pyzmq then polls once more without
waiting, finds the reply, and the cell "finishes" -- no error, the timeout lost. That is
how notebook 05 once sat idle for exactly its 600 s cell timeout after a cell and then
went on (``tests/lab/notebook/test_nb05_nb06.py`` tests the sliced wait; nbclient issue
#312 reports the same symptom with widgets).

:class:`SteadyNotebookClient` waits in slices of :data:`SLICE` seconds instead: each
slice ends with that same non-blocking poll, so a missed wake-up costs at most one
slice, and the cell timeout still holds (the slices add up to it). Blocking clients
(nbval's) poll with libzmq's own ``zmq_poll`` and are not affected.
"""

from __future__ import annotations

import time
from queue import Empty

from nbclient import NotebookClient

#: Seconds one wait for a message lasts before the socket is polled again.
SLICE = 1.0


def sliced(get_msg, slice_seconds: float = SLICE):
    """``get_msg(timeout=...)`` that waits in slices of ``slice_seconds``, with the same contract.

    Returns the first message; raises ``queue.Empty`` once ``timeout`` seconds (None:
    never) pass without one.
    """

    async def get(timeout: float | None = None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise Empty
            try:
                return await get_msg(
                    timeout=slice_seconds if left is None else min(slice_seconds, left)
                )
            except Empty:
                continue

    return get


class SteadyNotebookClient(NotebookClient):
    """An nbclient ``NotebookClient`` whose shell and IOPub waits are sliced (see the module)."""

    async def async_start_new_kernel_client(self):
        kc = await super().async_start_new_kernel_client()
        for channel in (kc.shell_channel, kc.iopub_channel):
            channel.get_msg = sliced(channel.get_msg)
        return kc

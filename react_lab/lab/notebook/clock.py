"""How long a notebook computed: the seconds its cells ran, not the time spent reading them.

Each notebook starts a :class:`CellClock` in its first code cell and prints
:meth:`CellClock.report` in its last, so the time a notebook states is measured in the
run that stored it. In IPython the clock adds up each cell's run time through the
shell's ``pre_run_cell`` / ``post_run_cell`` events; outside IPython (a script) it is a
plain stopwatch.
"""
from __future__ import annotations

import time

_RUNNING: "CellClock | None" = None


class CellClock:
    """Add up the wall-clock seconds spent running cells.

    ``seconds`` is the total of finished cells, ``cells`` how many finished; call
    :meth:`elapsed` for the total including the cell running now. Times are
    ``time.perf_counter`` seconds.
    """

    def __init__(self):
        self.seconds, self.cells, self._started = 0.0, 0, None

    def begin(self, *_) -> None:
        """A cell starts running (the ``pre_run_cell`` event)."""
        self._started = time.perf_counter()

    def end(self, *_) -> None:
        """The running cell finished (the ``post_run_cell`` event)."""
        if self._started is not None:
            self.seconds += time.perf_counter() - self._started
            self.cells += 1
            self._started = None

    def elapsed(self) -> float:
        """Seconds of finished cells plus the running cell's so far."""
        running = time.perf_counter() - self._started if self._started is not None else 0.0
        return self.seconds + running

    def report(self, budget: float | None = None) -> str:
        """One line: the compute seconds so far and over how many cells, and the budget if given."""
        cells = self.cells + (self._started is not None)
        text = f"this notebook computed for {self.elapsed():.1f} s over {cells} cell{'s' * (cells != 1)}"
        return text + (f" (budget on an idle 2-core machine: {budget:g} s)" if budget else "")


def start_clock(shell=None) -> CellClock:
    """Start counting cell run time from the cell that calls this; return the clock.

    ``shell`` defaults to the running IPython shell. A second call (the first cell run
    again) replaces the previous clock, so nothing is counted twice. Without IPython
    the clock runs from this call on, like a stopwatch.
    """
    global _RUNNING
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:  # a plain script: no cells, one stopwatch
            get_ipython = lambda: None  # noqa: E731
        shell = get_ipython()
    if _RUNNING is not None and shell is not None:
        for event, callback in (("pre_run_cell", _RUNNING.begin), ("post_run_cell", _RUNNING.end)):
            try:
                shell.events.unregister(event, callback)
            except ValueError:  # registered with another shell, or already gone
                pass
    clock = CellClock()
    clock.begin()  # the calling cell is already running: its pre_run_cell has passed
    if shell is not None:
        shell.events.register("pre_run_cell", clock.begin)
        shell.events.register("post_run_cell", clock.end)
    _RUNNING = clock
    return clock

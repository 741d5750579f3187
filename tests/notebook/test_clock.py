"""The notebooks' compute clock: cell run time, not reading time."""
import time

from react_lab.lab.notebook import clock


class Events:
    """The part of IPython's EventManager the clock uses."""

    def __init__(self):
        self.callbacks = {"pre_run_cell": [], "post_run_cell": []}

    def register(self, event, fn):
        self.callbacks[event].append(fn)

    def unregister(self, event, fn):
        self.callbacks[event].remove(fn)

    def fire(self, event):
        for fn in list(self.callbacks[event]):
            fn(None)


class Shell:
    def __init__(self):
        self.events = Events()


def test_the_clock_counts_cells_and_not_the_time_between_them():
    """Measured against the test's own stopwatch, each cell bracketed from outside: no fixed window."""
    shell, tick = Shell(), time.perf_counter
    t0 = tick()
    c = clock.start_clock(shell)          # called inside the first cell
    time.sleep(0.02)
    shell.events.fire("post_run_cell")    # first cell ends
    t1 = tick()
    time.sleep(0.2)                       # the learner reads
    t2 = tick()
    shell.events.fire("pre_run_cell")
    time.sleep(0.02)
    shell.events.fire("post_run_cell")
    t3 = tick()
    cells = (t1 - t0) + (t3 - t2)         # the two cells, bracketed from outside
    # At least both cells' sleeps, at most their brackets: a clock that counted the 0.2 s of
    # reading between them (t1 to t2) would exceed the brackets however slow the machine is.
    assert c.cells == 2 and 0.039 <= c.seconds <= cells <= t3 - t0 - 0.2
    assert "over 2 cells" in c.report() and "budget" in c.report(budget=15)


def test_starting_again_replaces_the_clock():
    shell = Shell()
    first = clock.start_clock(shell)
    second = clock.start_clock(shell)
    assert first.begin not in shell.events.callbacks["pre_run_cell"]
    assert shell.events.callbacks["post_run_cell"] == [second.end]


def test_without_ipython_it_is_a_stopwatch():
    c = clock.CellClock()
    c.begin()
    time.sleep(0.01)
    assert c.elapsed() >= 0.01 and c.report().endswith("over 1 cell")

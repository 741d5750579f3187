"""The optional libraries: imported when a command needs one, named with its extra when missing.

``pip install react-lab`` (no extras) runs ``react-lab --help``, ``ask`` and ``eval`` on the
embedded model: nothing on that path imports an extra at the top of a module. A feature that
needs one imports it through :func:`require`, which says which extra to install::

    react-lab: error: --plot needs matplotlib, from the notebooks extra:
    pip install 'react-lab[notebooks]' (No module named 'matplotlib')

A progress bar is no such feature: :func:`tqdm` is tqdm's bar when tqdm is installed (the
``notebooks`` extra), else a bar that shows nothing, so a run on a plain install is the same
run without the bar.
"""

from __future__ import annotations

import importlib
import types


class MissingExtra(ImportError):
    """A library of an extra is not installed; the message names the extra to install."""


def require(module: str, extra: str, what: str) -> types.ModuleType:
    """Import ``module``; raise :class:`MissingExtra` naming ``extra`` when it is not installed.

    ``what`` is the feature that needs it, as the user asked for it (``"--plot"``,
    ``"--model openai"``).
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtra(
            f"{what} needs {module.split('.')[0]}, from the {extra} extra: "
            f"pip install 'react-lab[{extra}]' ({exc})"
        ) from exc


class _NoBar:
    """What tqdm's bar does when tqdm is not installed: iterate, and show nothing."""

    def __init__(self, iterable=None, **kwargs):
        self.iterable = iterable

    def __iter__(self):
        return iter(self.iterable if self.iterable is not None else ())

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def update(self, n: int = 1) -> None:
        return None

    def set_postfix(self, *args, **kwargs) -> None:
        return None

    def set_postfix_str(self, *args, **kwargs) -> None:
        return None

    def close(self) -> None:
        return None


def tqdm(iterable=None, **kwargs):
    """``tqdm.auto.tqdm(iterable, **kwargs)``, or a bar that shows nothing without tqdm."""
    try:
        from tqdm.auto import tqdm as bar
    except ImportError:
        return _NoBar(iterable, **kwargs)
    return bar(iterable, **kwargs)

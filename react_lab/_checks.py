"""The argument checks both loops and every backend share: counts, and a run's arguments.

A bad argument is refused before anything runs, with a message that says what to pass.
"""
from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any


def check_count(name: str, value: Any) -> int:
    """Return ``value`` if it is a whole number >= 1, else raise ``ValueError`` naming ``name``.

    For counts such as ``max_tokens`` and ``max_steps``: ``0`` or ``-1`` would mean
    "unlimited" to llama.cpp and nothing useful to the loop, and ``"3"`` or ``2.5`` is a
    slip, so all of them are refused here rather than misread later. ``True`` is refused
    too (Python counts it as the integer 1).
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
    return int(value)



def check_run_arguments(model_method: str, model, tools, max_steps, max_tokens) -> None:
    """Refuse arguments a loop cannot run with, before it does anything.

    ``model_method`` is the method the loop calls on ``model``: ``"complete"`` for the
    text loop (:func:`run`), ``"chat"`` for the native one. Raises ``TypeError`` when
    ``model`` has no such method or ``tools`` is not a dict of name -> Tool, and
    ``ValueError`` when ``max_steps`` or ``max_tokens`` is not a whole number >= 1.
    """
    if not callable(getattr(model, model_method, None)):
        hint = (" (build one from a spec with react_lab.backends.load_model(...))"
                if isinstance(model, str) else "")
        raise TypeError(f"model must be a backend with a {model_method}(...) method, "
                        f"got {type(model).__name__} {model!r:.60}{hint}")
    if not isinstance(tools, Mapping):
        raise TypeError("tools must be a dict of tool name -> Tool, such as "
                        f"react_lab.tools.default_tools(); got {type(tools).__name__}"
                        + (" (from a list: {t.name: t for t in tools})"
                           if isinstance(tools, (list, tuple)) else ""))
    check_count("max_steps", max_steps)
    check_count("max_tokens", max_tokens)

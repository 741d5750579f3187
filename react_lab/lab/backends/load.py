"""Build a backend from a short spec string: ``local``, ``scripted:FILE.json``, ``openai[:MODEL]``.

One variable, ``REACT_LAB_MODEL``, switches every notebook and command of a room to
another backend. Nothing is imported until a backend is built.
"""

from __future__ import annotations

import os

#: The backend every notebook and command uses when none is named: one variable switches a room.
MODEL_ENV = "REACT_LAB_MODEL"


def model_spec(spec: str | None = None) -> str:
    """``spec``, else ``REACT_LAB_MODEL``, else ``"local"``: the backend to build."""
    return (spec or os.environ.get(MODEL_ENV) or "local").strip()


def _require_openai() -> None:
    """The OpenAI client is the ``openai`` extra's: a missing one is named with its extra."""
    from ..extras import require

    require("openai", "openai", "the openai backend (--model openai, REACT_LAB_MODEL=openai)")


def load_model(spec: str | None = None):
    """Build a backend from a short spec string.

    With none, from ``REACT_LAB_MODEL`` (default local).

    ``"local"`` (the embedded model), ``"scripted:FILE.json"``, ``"openai"`` (model from
    ``OPENAI_MODEL``) or ``"openai:MODEL_NAME"``. The notebooks call ``load_model()``, so
    ``export REACT_LAB_MODEL=openai`` (with ``OPENAI_BASE_URL`` and ``OPENAI_MODEL``) moves
    every notebook to a server. Raises ``ValueError`` on anything else and on a scripted
    file of the wrong shape (see :meth:`ScriptedModel.from_json`); ``FileNotFoundError``
    and the like when the scripted file cannot be read.
    """
    spec = model_spec(spec)
    if spec == "local":
        from .local import local_model

        return local_model()
    if spec.startswith("scripted:"):
        path = spec.split(":", 1)[1].strip()
        if not path:
            raise ValueError(
                "scripted: needs a file name: scripted:FILE.json, holding a JSON "
                'list of strings or {"completions": [...]}'
            )
        from .scripted import ScriptedModel

        return ScriptedModel.from_json(path)
    if spec == "openai" or spec.startswith("openai:"):
        _require_openai()
        from .endpoints import OpenAIModel

        return OpenAIModel(spec.split(":", 1)[1] if ":" in spec else None)
    raise ValueError(
        f"unknown model {spec!r}; use local, scripted:FILE.json, openai or "
        f"openai:MODEL (in --model or {MODEL_ENV})"
    )


def load_chat_model(spec: str | None = None):
    """Build a chat backend: ``local``, ``openai``, ``openai:MODEL`` or ``scripted:FILE.json``.

    With no spec, ``REACT_LAB_MODEL`` names it (default local), as for
    :func:`load_model`. Raises ValueError on anything else.
    """
    from .chat import LocalChatModel, OpenAIChatModel, ScriptedChatModel

    spec = model_spec(spec)
    if spec == "local":
        return LocalChatModel()
    if spec.startswith("scripted:"):
        return ScriptedChatModel.from_json(spec.split(":", 1)[1])
    if spec == "openai" or spec.startswith("openai:"):
        _require_openai()
        return OpenAIChatModel(spec.split(":", 1)[1] if ":" in spec else None)
    raise ValueError(
        f"unknown chat model {spec!r}; use local, scripted:FILE.json, openai or openai:MODEL"
    )

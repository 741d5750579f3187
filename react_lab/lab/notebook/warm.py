"""Pay the lab's one-off costs before a learner's first step, not inside it.

A fresh process pays, once: ``jsonschema``'s import (about 1.3 s where Jupyter is
installed, see :func:`react_lab.schema.schema_validator`), loading cl100k_base for the
guards' token counts (0.2-0.4 s), loading the model, and evaluating the lab's prompt
prefixes (2-3.5 s each on 2 cores). Left alone, all of it lands in whichever step comes
first, and that step looks slow for reasons that have nothing to do with the agent.
:func:`warm_up` pays them now; notebook setup cells, the CLI's model commands and the
benchmark call it. Nothing heavy is imported with this module.
"""

from __future__ import annotations

import os
import time
from functools import partial
from typing import Callable, Sequence

#: Two questions whose prompts differ only after the shared prefix (any two would do).
_PROBES = ("Has invoice INV-2130 been paid?", "Did charge ch_9vVENq go through?")


def _seconds(work: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    work()
    return round(time.perf_counter() - t0, 3)


def warm_schema_check() -> None:
    """Import jsonschema and build the validator of every tool schema the lab ships."""
    from ...schema import schema_validator
    from ...tools import default_tools
    from ..guards import more_tool

    for tool in [*default_tools().values(), more_tool()]:
        schema_validator(tool.parameters)
    schema_validator({"type": "string", "format": "date"}).is_valid("2026-07-01")  # format checker


def text_prompts(model) -> list[str]:
    """The text protocol's first prompt for two questions, rendered as ``model`` reads them."""
    from ...protocol import build_prompt
    from ...tools import default_tools

    tools = default_tools()
    return [model.render(build_prompt(q, tools.values())) for q in _PROBES]


def native_prompts(model) -> list[str]:
    """The native loop's first prompt (system turn with the tool schemas) for two questions."""
    from ...messages import SYSTEM
    from ...tools import default_tools, tool_schemas
    from ..backends.chat import LocalChatModel
    from ..guards import LabGuards

    schemas = tool_schemas(LabGuards().offered_tools(default_tools()))  # as run_native offers them
    chat = LocalChatModel(model)
    return [
        chat.render(
            [{"role": "system", "content": SYSTEM}, {"role": "user", "content": q}], schemas
        )
        for q in _PROBES
    ]


def uses_local_model() -> bool:
    """True when ``REACT_LAB_MODEL`` selects the embedded model (the default)."""
    from ..backends.load import model_spec

    return model_spec(os.environ.get("REACT_LAB_MODEL")) == "local"


def warm_up(*, model: bool | None = None, protocols: Sequence[str] = ("text", "native")) -> dict:
    """Pay every one-off cost now; return ``{part: seconds}``.

    Always: the schema check (``schema_check``) and the cl100k_base token counter
    (``token_counter``). With ``model`` (default: when ``REACT_LAB_MODEL`` selects the
    embedded model): loading it (``model_load``) and a snapshot of the prompt prefix of
    each of ``protocols`` (``native_prefix``, ``text_prefix``:
    :meth:`react_lab.lab.backends.local.LocalModel.remember_prefix`), so the first question of a
    run evaluates only its own tokens. The text prefix goes last and stays in the cache.
    A second call costs milliseconds. Raises ``ValueError`` for an unknown protocol.
    """
    unknown = set(protocols) - {"text", "native"}
    if unknown:
        raise ValueError(f"unknown protocol {sorted(unknown)[0]!r}; use text and/or native")
    from ...cost import count_tokens

    parts = {
        "schema_check": _seconds(warm_schema_check),
        "token_counter": _seconds(lambda: count_tokens("warm up")),
    }
    if model is None:
        model = uses_local_model()
    if model:
        from ..backends.local import local_model

        local = local_model()
        parts["model_load"] = _seconds(lambda: local.llm)
        for protocol, prompts in (("native", native_prompts), ("text", text_prompts)):
            if protocol in protocols:
                parts[f"{protocol}_prefix"] = _seconds(
                    partial(local.remember_prefix, prompts(local))
                )
    return parts

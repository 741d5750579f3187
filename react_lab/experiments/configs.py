"""The agent's named configurations: how the prompt is built and how the model decodes, over the same loop.

A :class:`Config` names everything that changes between the ladder's rungs (the
grammar on the Action line, grounded ids, the tool design, the exemplars and how
many); :data:`CONFIGS` lists them in ladder order, and :func:`get_config` finds one
by name (``react-lab eval --list-configs``). The ladder (:mod:`react_lab.experiments.ladder`)
runs them; :func:`first_prompt` shows what a configuration's first prompt holds.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

from ..guards import Guards
from ..protocol import EXEMPLARS, build_prompt
from ..tools import Tool, tool_schemas
from .evals import EVAL_MAX_STEPS, EVAL_MAX_TOKENS
from .exemplars import get_pool, select
from .tasks import Task
from .tool_designs import get_tools


@dataclass(frozen=True)
class Config:
    """One rung: how the prompt is built and how the model decodes, over the same loop.

    ``grammar``: None (free decoding) or a :data:`react_lab.backends.text_grammar.THOUGHT_MODES`
    mode; ``grounded``: id arguments only from the question and observations;
    ``tools``: a :func:`react_lab.experiments.tool_designs.get_tools` spec; ``exemplars``:
    ``"default"`` (the prompt's one fixed exemplar), ``"pool"`` (``k`` chosen per
    question from the oracle-written dev pool) or ``"runs"`` (``k`` chosen from the
    pool harvested from successful dev runs); ``max_steps``/``max_tokens``: the
    evaluation's limits (tokens per completion); ``protocol``: ``"text"`` or
    ``"native"`` (:func:`react_lab.native.run_native` on the grammar-constrained chat
    backend, greedy; its exemplars prepended as messages, ``"none"`` for none).
    """

    name: str
    about: str
    grammar: str | None = None
    grounded: bool = False
    tools: str = "default"
    exemplars: str = "default"
    k: int = 1
    max_steps: int = EVAL_MAX_STEPS
    max_tokens: int = EVAL_MAX_TOKENS
    distractors: int = 0
    protocol: str = "text"

    def with_(self, name: str, about: str, **changes) -> "Config":
        """A copy named ``name`` with ``changes`` (one rung built on another)."""
        return dataclasses.replace(self, name=name, about=about, **changes)



_BASELINE = Config("baseline", "today's prompt: one fixed exemplar, default tools, free decoding")


_GPOOL = Config("gpool_k1", "grammar on the Action line, grounded ids, 1 pool exemplar per question",
                grammar="free", grounded=True, exemplars="pool", k=1)


#: The named configurations, in ladder order.
CONFIGS: dict[str, Config] = {c.name: c for c in [
    _BASELINE,
    _BASELINE.with_("grammar_action", "rung 1: Action line constrained by the tool schemas, thought free",
                    grammar="free"),
    _BASELINE.with_("grammar_grounded", "rung 1b: rung 1 + id arguments only ids seen in the question "
                    "or an observation", grammar="free", grounded=True),
    _BASELINE.with_("tax_short", "format-tax control: rung 1b with the thought a fixed template",
                    grammar="short", grounded=True),
    _BASELINE.with_("tax_none", "format-tax control: rung 1b with no thought at all",
                    grammar="none", grounded=True),
    *[_BASELINE.with_(f"pool_k{k}", f"rung 3: {k} exemplar(s) chosen per question from the dev pool",
                      exemplars="pool", k=k) for k in (1, 2, 3)],
    _GPOOL,
    *[_GPOOL.with_(f"t_{v}", f"rung 2: gpool_k1 + tool design '{v}'", tools=v)
      for v in ("desc", "slim", "dedupe", "dollars", "sums", "statuses", "since_optional",
                "search1", "oldest_first", "counted")],
    _GPOOL.with_("best", "rung 4: the best combination on the dev half (gpool_k1 + oldest_first)",
                 tools="oldest_first"),
    _GPOOL.with_("runs_k1", "rung 3, runs pool: gpool_k1 with exemplars from successful dev runs",
                 exemplars="runs"),
    _GPOOL.with_("best_runs", "rung 3, runs pool: best with exemplars from successful dev runs",
                 tools="oldest_first", exemplars="runs"),
    *[_GPOOL.with_(f"best_tools{n}", f"best with {n} tools ({n - 6} plausible but useless)",
                   tools="oldest_first", distractors=n - 6) for n in (12, 24)],
    _BASELINE.with_("native", "native tool calls under the reply grammar, no exemplar",
                    protocol="native", exemplars="none"),
    _BASELINE.with_("native_exemplar", "native + the baseline's exemplar as a past call, result "
                    "and answer", protocol="native"),
    _BASELINE.with_("native_pool_k1", "native + 1 exemplar per question from the dev pool, as "
                    "messages", protocol="native", exemplars="pool", k=1),
]}



def get_config(name: str) -> Config:
    """Return the named configuration; ``ValueError`` lists the names for an unknown one."""
    if name not in CONFIGS:
        raise ValueError(f"unknown config {name!r}; known: {', '.join(CONFIGS)} "
                         "(react-lab eval --list-configs)")
    return CONFIGS[name]



@functools.lru_cache(maxsize=None)
def tools_for(cfg: Config) -> dict[str, Tool]:
    """The config's tool set: its design variant, plus ``cfg.distractors`` distractor tools."""
    tools = get_tools(cfg.tools)
    if cfg.distractors:
        from .tool_designs import with_distractors

        tools = with_distractors(tools, cfg.distractors)
    return tools



def exemplars_for(cfg: Config, task: Task) -> list:
    """The exemplars of ``task``'s prompt: the default one, or ``cfg.k`` chosen from the dev pool."""
    if cfg.exemplars in ("default", "none"):
        return list(EXEMPLARS[:1 if cfg.exemplars == "default" else 0])
    if cfg.exemplars in ("pool", "runs"):
        return select(list(get_pool(cfg.tools, "oracle" if cfg.exemplars == "pool" else "runs")),
                      task, k=cfg.k)
    raise ValueError(f"unknown exemplars {cfg.exemplars!r}; use default, pool or runs")



def first_prompt(cfg: Config, task: Task) -> str:
    """The prompt of ``task``'s first step under ``cfg`` (instructions, tools, exemplars, question)."""
    guards = Guards()
    if cfg.protocol == "native":  # what the embedded model reads: system turn with schemas, exemplars, question
        from ..backends.chat import render_messages
        from ..native import first_messages, offered_tools

        offered = offered_tools(tools_for(cfg), guards)
        return render_messages(first_messages(task.question, offered, notes=guards.notes(),
                                              exemplars=exemplars_for(cfg, task)), tool_schemas(offered))
    return build_prompt(task.question, tools_for(cfg).values(), exemplars_for(cfg, task),
                        notes=guards.notes(), mark=guards.mark)

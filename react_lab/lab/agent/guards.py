"""Guards: the limits and checks that keep a ReAct loop from running away.

A loop with a language model in its condition can run forever, spend without limit, repeat
itself and act on the world. What a run is *allowed* is a :class:`Guards` (frozen, so one
object serves any number of runs); what a run *has done* is a :class:`Watch`, which the loop
gets from ``guards.start(question)`` at the start of each run and calls at named places
(the lines marked ``# guard:`` in :mod:`react_lab.lab.agent.loop`):

========================================  ========================================================
``watch.spend(completion)``               after every model call (tokens, dollars)
``watch.check_answer(answer)``            on a final answer: an error observation rejects it
``watch.run_tool(tools, name, args)``     instead of ``call_tool``: refusals, approval, truncation
``watch.stop_reason()``                   at the end of a step: a budget, ignored refusals
========================================  ========================================================

A guard that acts names itself in the observation it returns (``guard``; the loop copies it
to ``Step.guard`` and, when it ends the run, to ``stopped_by``). The step limit is the loop's
``max_steps``; when it trips, the loop asks once more for an answer labelled ``[best effort]``.
Compaction, the guard on the transcript's size, is :mod:`react_lab.lab.agent.context`.

These are the guards a plain call of :func:`react_lab.lab.agent.loop.ask` gets; the lab runs
:class:`react_lab.lab.guards.LabGuards`, which adds near repeats, paging with ``more``, tool
timeouts, placeholder answers, citations, data markers and pinning the question.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Iterable

from ..._parsing.labels import starts_with_label, strip_answer_label
from ...protocol import ParseResult, clip
from ...tools import Observation, Tool, call_tool, declared

#: The limits on what a run spends: a run one of them ended gets no best-effort request.
BUDGETS = ("token_budget", "money_budget", "time_budget")
#: Tool results that look like facts but hold none: not evidence for an answer.
EMPTY_RESULTS = {"", "[]", "{}", '""', "null"}


def deny(tool_name: str, args: Any) -> bool:
    """The default approver: say no to every side-effecting call."""
    return False


@dataclass(frozen=True)
class Guards:
    """What a run is allowed: the limits and checks of a loop. ``None`` switches a guard off.

    * ``token_budget``: prompt + completion tokens over the run, as the backend counts them.
    * ``money_budget``: dollars over the run, priced at ``price_in`` / ``price_out`` dollars
      per million prompt / completion tokens (0 by default: the local model is free).
    * ``time_budget``: wall-clock seconds per run, checked between steps (a model call in
      progress is not interrupted).
    * ``repeats``: refuse a call whose tool and arguments were already run.
    * ``max_refusals``: end the run after this many refused calls in a row.
    * ``retry_cap``: after this many errors in a row from one tool, refuse it.
    * ``observation_chars``: longest observation in characters; the rest is cut off, and a
      marker says how much.
    * ``compact_at``: once the transcript passes this many tokens (``count``, default cl100k_base),
    all but the last ``keep_last`` steps become a summary (``summarize``, default
    :func:`react_lab.lab.agent.context.keep_ids_summary`; :mod:`react_lab.lab.agent.context`).
    * ``require_retrieval``: reject an answer given before any tool returned data (an empty
      result such as ``[]`` is not data). Off by default: only the caller knows whether a
      question needs grounding ("What is 129 * 3?" does not).
    * ``approve``: ``approve(tool_name, args) -> bool`` for tools with ``side_effect=True``;
      only ``True`` approves (any other value, an exception, or no approver at all, ``None``,
      is a no); :func:`deny` by default. The gate is never off: to let a call run, approve it.
    * ``best_effort``: when the steps run out (or after ``max_refusals``), ask once more, no
      tools, for an answer labelled ``[best effort]``.
    """

    token_budget: int | None = 50_000
    money_budget: float | None = 1.00
    price_in: float = 0.0
    price_out: float = 0.0
    time_budget: float | None = 300.0
    repeats: bool = True
    max_refusals: int | None = 2
    retry_cap: int | None = 3
    observation_chars: int | None = 2000
    compact_at: int | None = 2500
    keep_last: int = 2
    summarize: Callable[[str], str] | None = None
    count: Callable[[str], int] | None = None
    require_retrieval: bool = False
    approve: Callable[[str, Any], bool] | None = deny
    best_effort: bool = True

    @classmethod
    def off(cls, **overrides) -> Guards:
        """Every guard switched off: the unguarded loop (the approval gate still says no).

        Each field that may be ``None`` is ``None``, each ``bool`` ``False`` (``overrides`` win).
        """
        switches = [f for f in fields(cls) if "None" in f.type or f.type == "bool"]
        off = {f.name: None if "None" in f.type else False for f in switches}
        return cls(**{**off, **overrides})

    def start(self, question: str = "", exemplars=()) -> Watch:
        """Start a run of ``question``: a new :class:`Watch` (``exemplars``: the prompt's)."""
        return Watch(self, question, exemplars)

    def notes(self) -> list[str]:
        """Lines the prompt's instructions need for these guards (none; the lab's add some)."""
        return []

    def mark(self, text: str, tool: str) -> str:
        """Tool output as the prompt shows it (as it is; the lab's guards may mark it as data)."""
        return text

    def offered_tools(self, tools: dict[str, Tool]) -> dict[str, Tool]:
        """The tools a native run offers the model (``tools``; the lab's guards add ``more``)."""
        return tools


@dataclass
class Watch:
    """What one run has done so far, and the checks that read it; made by :meth:`Guards.start`."""

    guards: Guards
    question: str = ""
    exemplars: Any = ()  # the prompt's (None: its default), for the lab's checks that read them
    tokens: int = 0
    dollars: float = 0.0
    started: float = field(default_factory=time.perf_counter)
    calls: list = field(default_factory=list)  # every call that ran: (tool, key, words)
    errors: dict = field(default_factory=dict)  # tool -> its errors in a row
    refusals: int = 0  # refused calls in a row
    last_refusal: str | None = None
    seen: list = field(default_factory=list)  # observation texts that held data

    def spend(self, completion) -> None:
        """Add one model call's prompt and completion tokens (and their price) to the run."""
        prompt, written = completion.prompt_tokens, completion.completion_tokens
        self.tokens += prompt + written
        self.dollars += (prompt * self.guards.price_in + written * self.guards.price_out) / 1e6

    def stop_reason(self) -> str | None:
        """Name the limit that should end the run now, or None to go on."""
        g = self.guards
        if g.token_budget is not None and self.tokens >= g.token_budget:
            return "token_budget"
        if g.money_budget is not None and self.dollars >= g.money_budget:
            return "money_budget"
        if g.time_budget is not None and time.perf_counter() - self.started >= g.time_budget:
            return "time_budget"
        if g.max_refusals is not None and self.refusals >= g.max_refusals:
            return self.last_refusal  # the model ignores what the guards tell it
        return None

    def tool_names(self, tools: dict[str, Tool]) -> dict[str, dict]:
        """The tools the parser accepts, each name with its parameters (the lab's add ``more``)."""
        return declared(tools)

    def check_question(self, parsed: ParseResult) -> tuple[ParseResult, str | None]:
        """A parsed completion as the loop keeps it, and the guard that changed it (none here)."""
        return parsed, None

    def check_answer(self, answer: str) -> Observation | None:
        """Return an error observation rejecting the final answer, or None to accept it."""
        if self.guards.require_retrieval and not self.seen:
            return Observation.failure(
                "that answer came before any tool returned data. This question needs facts "
                "from the billing system: call a tool first, then answer from its observation.",
                guard="ungrounded_answer",
            )
        return None

    def best_effort_answer(self, text: str, loop_said: Iterable[str] = ()) -> str | None:
        """The first line of a best-effort completion, or None if it holds no answer.

        No answer: an empty line, a line that starts a new protocol label, or a line that
        only repeats what the loop itself wrote (``loop_said``: its nudges, refusals and
        error observations), which a small model does when it has nothing to say.
        """
        first = next((ln.strip() for ln in (text or "").strip().splitlines() if ln.strip()), "")
        first = strip_answer_label(first).strip()  # the loop wrote the label already
        if not first or starts_with_label(first):
            return None
        line, said = normalized(first).strip(" ."), [normalized(s) for s in loop_said]
        if line.startswith("error:") or (len(line) >= 12 and any(line in s for s in said)):
            return None
        return first

    def run_tool(self, tools: dict[str, Tool], name: str, args, *, call=call_tool) -> Observation:
        """Run one tool call through the guards: the observation the loop writes. Never raises.

        Refuse it (:meth:`refuse_again`, :meth:`refuse_unapproved`) or run it with ``call``
        (:func:`react_lab.tools.call_tool`, which turns any failure into an error observation),
        then cut its result (:meth:`observe`); with the ``guard`` that acted and ``seconds``.
        """
        t0 = time.perf_counter()
        obs = self.refuse_again(tools, name, args) or self.refuse_unapproved(tools, name, args)
        if obs is not None:
            self.refusals, self.last_refusal = self.refusals + 1, obs.guard
        else:
            self.refusals = 0
            self.calls.append((name, call_key(args), call_words(args)))
            gate = {"approved": True} if getattr(tools.get(name), "side_effect", False) else {}
            obs = self.observe(name, args, call(tools, name, args, **gate))  # the gate said yes
        obs.seconds = time.perf_counter() - t0
        return obs

    def refuse_again(self, tools: dict[str, Tool], name: str, args) -> Observation | None:
        """Refuse a tool that failed ``retry_cap`` times in a row, or a call already run."""
        g, failed = self.guards, self.errors.get(name, 0)
        if g.retry_cap is not None and failed >= g.retry_cap:
            message = f"{name} failed {failed} times in a row, so the loop will not run it again "
            return Observation.failure(message + "in this run.", guard="retry_cap")
        key = call_key(args)
        earlier = [i for i, (n, k, _) in enumerate(self.calls, 1) if n == name and k == key]
        if g.repeats and earlier:
            message = f"{shown_call(name, args)} was already run (tool call {earlier[0]}); its "
            message += "observation is above and running it again gives the same."
            return Observation.failure(message, guard="repeat")
        return None

    def refuse_unapproved(self, tools: dict[str, Tool], name: str, args) -> Observation | None:
        """The approval gate: refuse a side-effecting call unless ``approve`` says ``True``."""
        tool, approve = tools.get(name), self.guards.approve
        if tool is None or not tool.side_effect:
            return None
        try:  # only True approves: "no", "n" or None from an input() prompt must not move money
            approved = approve is not None and approve(name, args) is True  # no approver: no
        except Exception:  # noqa: BLE001 -- a broken approver is a "no"
            approved = False
        if approved:
            return None
        message = f"{shown_call(name, args)} changes the world and was not approved, so it did "
        message += "not run and nothing changed. Go on without it."
        return Observation.failure(message, guard="approval")

    def observe(self, name: str, args, obs: Observation) -> Observation:
        """Count the tool's errors in a row; cut its result to ``observation_chars``, marked."""
        limit = self.guards.observation_chars
        if obs.error is not None:  # an error can echo a huge argument back: it is cut too
            self.errors[name] = self.errors.get(name, 0) + 1
            return Observation(truncated(obs.text, limit), truncated(obs.error, limit))
        self.errors[name] = 0
        if obs.text.strip() not in EMPTY_RESULTS:  # an empty result is not evidence for an answer
            self.seen.append(obs.text[:limit])
        text = truncated(obs.text, limit)
        return Observation(text, guard="truncated" if text != obs.text else None)


# --------------------------------------------------------------------------- small helpers


def truncated(text: str, limit: int | None) -> str:
    """``text`` cut to ``limit`` characters with a marker saying how much was dropped."""
    if limit is None or len(text) <= limit:
        return text
    return f"{text[:limit]} [truncated by the loop: {len(text) - limit} more characters not shown]"


def shown_call(name: str, args) -> str:
    """A call as the text protocol writes it, ``tool[a, b]``; a huge argument is cut."""
    return f"{name}[{clip(_show(args), 300)}]"


def _show(args) -> str:
    """Arguments as the text protocol writes them."""
    if isinstance(args, dict):
        return json.dumps(args, ensure_ascii=False)
    return ", ".join(str(a) for a in (args if isinstance(args, (list, tuple)) else [args]))


def call_words(args) -> list[str]:
    """The lower-cased words of a call's arguments (a list, a dict's values or one value)."""
    if isinstance(args, dict):
        args = list(args.values())
    values = args if isinstance(args, (list, tuple)) else [args]
    return re.findall(r"[\w.-]+", " ".join(str(v) for v in values).lower())


def call_key(args) -> str:
    """A call's arguments normalised (case, spacing, punctuation) for exact-repeat detection;
    named ones keep their names (a wrong name corrected is no repeat), wordless ones as written."""
    if isinstance(args, dict):
        named = sorted(args.items(), key=lambda kv: str(kv[0]))
    else:
        named = [(None, args)]
    keys = [
        ("" if k is None else f"{str(k).lower()}: ") + (" ".join(call_words(v)) or _show(v))
        for k, v in named
    ]
    return " ".join(keys)


def normalized(text: str) -> str:
    """``text`` in lower case, each run of white space one space: how the guards compare texts."""
    return " ".join(str(text).lower().split())

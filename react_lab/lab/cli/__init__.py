"""The ``react-lab`` command: run the loop, parse model text, and the notebooks' experiments.

``react-lab ask "QUESTION" [--model local|scripted:FILE.json|openai] [--no-stop] [--json]
[--mcp COMMAND]``
``react-lab ask "QUESTION" --config NAME`` (a named configuration; ``best``: the working agent)
``react-lab ask "QUESTION" --agent my_agent.py|reference [--protocol native]`` (your agent)
``react-lab eval [--model local|oracle|dont_know|...] [--n N] [--exemplars N] [--json]
[--save-results NAME [--overwrite]]``
``react-lab eval --config NAME [--split dev|test|paraphrase|seeds | --tasks FILE.json]
[--trials K] [--temperature T] [--seed S] [--save-results NAME [--overwrite]]``
``react-lab eval --agent my_agent.py|reference [--protocol native] [--split ...]
[--save-results NAME]`` (your agent on the bench's tasks)
``react-lab parse [--tools a,b]`` (model text on stdin)
Run ``react-lab --help`` for every subcommand, ``react-lab ask --help`` for one.

A bad option value stops the command before anything runs, with
``react-lab CMD: error: argument --OPTION: ...`` and exit code 2; so does a model or
file that cannot be loaded (``react-lab: error: ...``).
"""

from __future__ import annotations

import argparse
import math
import os
import sys

from ..._parsing.calls import TOOL_NAME, TOOL_NAME_RULE
from ...protocol import EXEMPLARS, MAX_TOKENS
from ..agent.loop import MAX_STEPS
from ..backends import doctor
from ..backends.endpoints import EndpointError
from ..backends.local import N_CTX
from ..experiments.forge import BATCH
from ..extras import MissingExtra
from ..guards import LabGuards
from . import commands

#: ``cost --steps`` above this is refused: the table has one row per step, and 10 million
#: steps took 600 MB to print 108 MB. A real agent run is tens of steps.
MAX_COST_STEPS = 1000

#: The ``--model`` specs :func:`react_lab.lab.backends.load.load_model` understands.
MODEL_HELP = (
    "local (the embedded SmolLM2; the default unless REACT_LAB_MODEL names "
    "another), scripted:FILE.json (replays a JSON "
    "list of completions), openai (model from OPENAI_MODEL) or openai:MODEL"
)
#: ``eval`` also takes the two scripted baselines of :mod:`react_lab.lab.experiments.evals`.
EVAL_MODEL_HELP = (
    "local (the embedded SmolLM2; the default unless REACT_LAB_MODEL names "
    "another); oracle (scripted: makes each task's "
    "right tool calls, then gives the gold answer: scores 100%%); dont_know "
    '(scripted: always answers "I don\'t know": scores 0%%); scripted:FILE.json; '
    "openai (model from OPENAI_MODEL) or openai:MODEL"
)


# --------------------------------------------------------------------------- option types


def whole_number(
    low: int = 1, high: int | None = None, *, zero_is_off: bool = False, why: str = ""
):
    """An argparse ``type=``: a whole number from ``low`` to ``high`` (None: no upper bound).

    A bad value becomes ``error: argument --x: must be ...`` (exit code 2) instead of a
    model call with a nonsense limit. ``zero_is_off`` says so in the message; ``why``
    (such as ``" (the model's context window)"``) follows the bound.
    """

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < low or (high is not None and value > high):
            bound = f">= {low}" if high is None else f"from {low} to {high}"
            off = " (0 switches the limit off)" if zero_is_off else ""
            raise argparse.ArgumentTypeError(
                f"must be a whole number {bound}{why}{off}, got {text}"
            )
        return value

    return parse


def non_negative(*, zero_is_off: bool = False):
    """An argparse ``type=``: a finite number >= 0 (``nan``, ``inf`` and negatives refused).

    For seconds, dollars and prices; with ``zero_is_off`` the message reminds that 0
    switches a guard's limit off (there is no other way to say "no limit").
    """

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not math.isfinite(value) or value < 0:
            off = " (0 switches the limit off)" if zero_is_off else ""
            raise argparse.ArgumentTypeError(f"must be a finite number >= 0{off}, got {text}")
        return value

    return parse


def tool_names(text: str) -> list[str]:
    """An argparse ``type=``: a comma-separated list of tool names, each by the one rule.

    ``"search,calc"`` is ``["search", "calc"]`` (spaces around a comma are fine); an empty
    item (``""``, ``","``, ``"a,,b"``) or a name the rule refuses (``"a b"``, ``"c;d"``) is
    refused, naming it. The rule is the parser's and the native check's
    (:data:`react_lab._parsing.calls.TOOL_NAME`: what OpenAI and MCP accept, so
    ``web-search`` and ``files.read`` are names).
    """
    names = [item.strip() for item in text.split(",")]
    for name in names:
        if not name:
            raise argparse.ArgumentTypeError(
                f"an empty tool name in {text!r}; give names "
                "separated by commas, such as search,calc"
            )
        if not TOOL_NAME.fullmatch(name):
            raise argparse.ArgumentTypeError(
                f"{name!r} is not a tool name ({TOOL_NAME_RULE}); separate names with commas"
            )
    return names


def _add_guard_options(parser: argparse.ArgumentParser) -> None:
    """The guard limits of ``ask``; defaults are :class:`react_lab.lab.guards.LabGuards`'s."""
    d = LabGuards()
    limit = non_negative(zero_is_off=True)
    g = parser.add_argument_group("guards (0 switches a limit off)")
    g.add_argument(
        "--token-budget",
        type=whole_number(0, zero_is_off=True),
        default=d.token_budget,
        help="prompt + completion tokens per run (default %(default)s)",
    )
    g.add_argument(
        "--time-budget",
        type=limit,
        default=d.time_budget,
        help="wall-clock seconds per run (default %(default)s)",
    )
    g.add_argument(
        "--tool-timeout",
        type=limit,
        default=d.tool_timeout,
        help="seconds per tool call (default %(default)s)",
    )
    g.add_argument(
        "--price-in",
        type=non_negative(),
        default=d.price_in,
        help="dollars per million prompt tokens (default %(default)s)",
    )
    g.add_argument(
        "--price-out",
        type=non_negative(),
        default=d.price_out,
        help="dollars per million completion tokens (default %(default)s)",
    )
    g.add_argument(
        "--money-budget",
        type=limit,
        default=d.money_budget,
        help="dollars per run at those prices (default %(default)s)",
    )


#: ``--agent``'s help: whose loop runs, and what it is given.
AGENT_HELP = (
    "run YOUR agent instead of the bench's: the path of the my_agent.py the notebooks saved "
    "(any path; read, never changed), or reference (react_lab.agent.composed(), the file "
    "after notebook 08). Text runs its run_loop, --protocol native its run_native (the chat "
    "backend the bench uses); each question gets the exemplar its pick_exemplar picks from "
    "the dev pool (without one, its loop's default)"
)


def _add_agent_option(parser: argparse.ArgumentParser, command: str) -> None:
    """``--agent FILE|reference`` (react_lab.lab.experiments.agent_runs)."""
    more = {
        "ask": "; --no-exemplar: its loop's default instead; --max-steps is passed on, the "
        "guard and token options are the bench's (your code has its own)",
        "eval": "; the tasks, splits, scorer and results files are the bench's (--split, "
        "--tasks, --per-category, --n, --save-results; default split dev), with the "
        "evaluation's 4 steps",
    }[command]
    parser.add_argument("--agent", metavar="FILE", default=None, help=AGENT_HELP + more)


def _add_save_results(parser: argparse.ArgumentParser, saves: str) -> None:
    """``--save-results NAME [--overwrite]``: save a run as a fingerprinted results file.

    ``saves`` is the help of ``--save-results``: what the command saves, and when;
    ``--overwrite`` reads the same everywhere.
    """
    parser.add_argument("--save-results", metavar="NAME", default=None, help=saves)
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="with --save-results: replace that file if it exists (else refused)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with one subcommand per experiment."""
    p = argparse.ArgumentParser(prog="react-lab", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    _add_ask(sub)
    _add_forge_rate(sub)
    _add_failures(sub)
    _add_abuses(sub)
    _add_cost(sub)
    _add_eval(sub)
    _add_injection(sub)
    _add_doctor(sub)
    _add_parse(sub)
    return p


def _add_ask(sub) -> None:
    """The ``ask`` subcommand."""
    a = sub.add_parser(
        "ask",
        help="run the ReAct loop (react_lab.lab.agent.loop, or react_lab.lab.agent.native) on one "
        "question and print the trace",
    )
    a.add_argument("question", nargs="?")
    a.add_argument(
        "--model",
        default=None,
        help=MODEL_HELP + "; with --protocol native, "
        "scripted:FILE.json replays JSON replies instead",
    )
    a.add_argument(
        "--protocol",
        choices=["text", "native"],
        default="text",
        help="text: ReAct labels read by the tolerant parser (react_lab.lab.agent.loop, "
        "react_lab.lab.agent.parser); native: structured tool calls "
        "(react_lab.lab.agent.native; the local model's replies constrained by a JSON-Schema "
        "grammar, react_lab.lab.backends.grammar)",
    )
    a.add_argument(
        "--no-stop",
        action="store_true",
        help="send no stop sequence (text protocol only), to see forged observations",
    )
    a.add_argument(
        "--max-steps",
        type=whole_number(1),
        default=MAX_STEPS,
        help="model calls per run, plus one best-effort answer if they run out "
        "(default %(default)s)",
    )
    a.add_argument(
        "--max-tokens",
        type=whole_number(
            1, N_CTX, why=" (the embedded model's context window: no completion is longer)"
        ),
        default=MAX_TOKENS,
        help=f"completion tokens per step (default %(default)s, at most {N_CTX})",
    )
    a.add_argument("--json", action="store_true", help="print one JSON object")
    a.add_argument(
        "--no-exemplar",
        action="store_true",
        help="native protocol: start with no past exchange (the 135M model then calls "
        "no tool); by default one exemplar chosen for the question is sent as past "
        "messages, as the native_pool_k1 configuration does",
    )
    a.add_argument(
        "--mcp",
        metavar="COMMAND",
        default=None,
        help='take the tools from this MCP server over stdio, e.g. "python -m react_lab.lab.mcp" '
        "(react_lab.lab.mcp); only the lab's own read-only tools run without approval",
    )
    a.add_argument(
        "--config",
        default=None,
        help="run the text loop as this named configuration "
        "(react_lab.lab.experiments.configs; best: the working agent), with its own step and token "
        "limits; --list-configs names them",
    )
    a.add_argument("--list-configs", action="store_true", help="list the configurations")
    _add_agent_option(a, "ask")
    _add_guard_options(a)
    a.set_defaults(func=commands.cmd_ask, usage_error=a.error)


def _add_forge_rate(sub) -> None:
    """The ``forge-rate`` subcommand."""
    f = sub.add_parser(
        "forge-rate",
        help="measure how often the model forges an Observation, "
        "with and without the stop sequence (react_lab.lab.experiments.forge)",
    )
    f.add_argument(
        "--n", type=whole_number(1), default=100, help="number of questions (default %(default)s)"
    )
    f.add_argument("--model", default=None, help=MODEL_HELP)
    f.add_argument(
        "--batch",
        type=whole_number(1, 255),
        default=BATCH,  # llama.cpp's limit
        help="embedded model: questions decoded side by side (default %(default)s; "
        "1 = one at a time, exactly create_completion's tokens)",
    )
    f.add_argument("--json", action="store_true", help="print one JSON object, no progress bar")
    _add_save_results(
        f,
        "also save the result, fingerprinted, as react_lab/data/results/NAME.json "
        "(react_lab.lab.experiments.results); checked before the run starts",
    )
    f.set_defaults(func=commands.cmd_forge_rate, usage_error=f.error)


def _add_failures(sub) -> None:
    """The ``failures`` subcommand."""
    f = sub.add_parser(
        "failures",
        help="bench notebook 06's pass: questions of ten categories through the text loop "
        "with every guard off, read by the failure-mode detectors "
        "(react_lab.lab.experiments.failures)",
    )
    f.add_argument("--model", default=None, help=MODEL_HELP)
    f.add_argument(
        "--per-category",
        type=whole_number(1, 3, why=" (the smallest category has 3 questions)"),
        default=3,
        help="questions per category (default %(default)s)",
    )
    _add_save_results(
        f,
        "also save the runs, fingerprinted, as react_lab/data/results/NAME.json "
        "(react_lab.lab.experiments.results); checked before the run starts",
    )
    f.set_defaults(func=commands.cmd_failures, usage_error=f.error)


def _add_abuses(sub) -> None:
    """The ``abuses`` subcommand."""
    ab = sub.add_parser(
        "abuses",
        help="feed three argument abuses to regex, schema and constrained "
        "decoding (react_lab.lab.experiments.abuses)",
    )
    ab.add_argument("--json", action="store_true", help="print a JSON list of outcomes")
    ab.set_defaults(func=commands.cmd_abuses)


def _add_cost(sub) -> None:
    """The ``cost`` subcommand."""
    c = sub.add_parser(
        "cost",
        help="prompt tokens of an N-step run: linear prefix vs quadratic re-sends (react_lab.cost)",
    )
    c.add_argument("--prefix", type=int, required=True, help="prompt prefix P, tokens")
    c.add_argument("--observation", type=int, required=True, help="observation O per step, tokens")
    c.add_argument("--assistant", type=int, required=True, help="assistant text A per step, tokens")
    # The sizes stay plain ints: react_lab.cost checks them and names P, O and A.
    c.add_argument(
        "--steps",
        type=whole_number(1, MAX_COST_STEPS),
        required=True,
        help=f"number of steps N (at most {MAX_COST_STEPS})",
    )
    c.add_argument("--plot", help="write a PNG plot to this file")
    c.add_argument("--json", action="store_true", help="print one JSON object")
    c.set_defaults(func=commands.cmd_cost)


def _add_eval(sub) -> None:
    """The ``eval`` subcommand."""
    e = sub.add_parser(
        "eval",
        help="evaluate a model and protocol on the fixed task set "
        "(react_lab.lab.experiments.evals, react_lab.lab.experiments.tasks; --model oracle and "
        "dont_know: the 100%% and 0%% baselines)",
    )
    e.add_argument("--n", type=whole_number(1), default=None, help="first N tasks only")
    e.add_argument(
        "--protocol",
        choices=["text", "native"],
        default="text",
        help="text (ReAct labels) or native (structured tool calls)",
    )
    e.add_argument("--model", default=None, help=EVAL_MODEL_HELP)
    e.add_argument(
        "--exemplars",
        type=whole_number(0, len(EXEMPLARS)),
        default=None,
        help="text protocol: put the first N worked exchanges of "
        "react_lab.protocol.EXEMPLARS in the prompt (default: the prompt's own, 1)",
    )
    e.add_argument(
        "--json", action="store_true", help="print the metrics as one JSON object, no progress bar"
    )
    e.add_argument(
        "--concurrency",
        type=whole_number(1, 64),
        default=1,
        help="runs in flight at once against an endpoint (default %(default)s); "
        "records come back in task order, as a serial run's",
    )
    _add_save_results(
        e,
        "compute every task afresh (no cache) and save metrics and records, "
        "fingerprinted, as react_lab/data/results/NAME.json (react_lab.lab.experiments.results); "
        "with --config: save the finished ladder run; checked before the run starts",
    )
    _add_agent_option(e, "eval")
    ladder_group = e.add_argument_group(
        "the ladder (react_lab.lab.experiments.ladder)",
        "--config NAME runs a named configuration of the "
        "loop over the dev or test half; --list-configs names them",
    )
    ladder_group.add_argument(
        "--config",
        default=None,
        help="a configuration of react_lab.lab.experiments.ladder "
        "(baseline, grammar_action, ..., best)",
    )
    ladder_group.add_argument("--list-configs", action="store_true", help="list the configurations")
    ladder_group.add_argument(
        "--split",
        choices=["dev", "test", "all", "paraphrase", "seeds"],
        default=None,
        help="the tasks to run (with --config; default dev): a "
        "half, the paraphrase test set, or the seed articles' questions",
    )
    ladder_group.add_argument(
        "--tasks",
        metavar="FILE.json",
        default=None,
        help="run every task of this task file instead (the format: "
        "react_lab.lab.experiments.tasks)",
    )
    ladder_group.add_argument(
        "--per-category",
        type=whole_number(1),
        default=None,
        help="only the first N tasks of each category of the split",
    )
    ladder_group.add_argument(
        "--trials",
        type=whole_number(1, 100),
        default=1,
        help="runs per task, with seeds S, S+1, ... (default 1)",
    )
    ladder_group.add_argument(
        "--temperature", type=float, default=0.0, help="sampling temperature (default 0: greedy)"
    )
    ladder_group.add_argument("--seed", type=int, default=0, help="seed of the first trial")
    ladder_group.add_argument(
        "--budget",
        type=float,
        default=None,
        help="seconds; start no run after them (run again to resume)",
    )
    e.set_defaults(func=commands.cmd_eval, usage_error=e.error)


def names_of(known) -> callable:
    """An argparse ``type=``: a comma-separated list of names, each one of ``known``."""

    def parse(text: str) -> list[str]:
        names = [name.strip() for name in text.split(",") if name.strip()]
        wrong = [name for name in names if name not in known] or ([] if names else [text])
        if wrong:
            raise argparse.ArgumentTypeError(
                f"unknown name {wrong[0]!r}; give some of {', '.join(known)}, with commas"
            )
        return names

    return parse


#: ``react-lab injection --help``: what it runs, and its ``--model``.
INJECTION_HELP = (
    "the injection suite: instructions planted in memos, names and decline texts, two "
    "agents, each defence alone and together (react_lab.lab.experiments.injection)",
    "follower (scripted: follows every instruction it reads), local (the default; best "
    "decodes under its grammar), openai or openai:MODEL (best without its grammar)",
)


def _add_injection(sub) -> None:
    """The ``injection`` subcommand."""
    from ..experiments.injection import AGENTS, DEFENCES, QUESTION_NAMES

    i = sub.add_parser("injection", help=INJECTION_HELP[0])
    i.add_argument("--model", help=INJECTION_HELP[1])
    i.add_argument("--agents", type=names_of(AGENTS), help=f"some of {', '.join(AGENTS)}")
    i.add_argument("--defences", type=names_of(DEFENCES), help=f"some of {', '.join(DEFENCES)}")
    i.add_argument(
        "--questions",
        type=names_of(QUESTION_NAMES),
        help="only the cases asking these, e.g. total: one case per attacked row",
    )
    i.add_argument("--n", type=whole_number(1), help="only the first N attack cases")
    i.add_argument(
        "--spread",
        nargs="?",
        const=1,
        type=whole_number(1),
        metavar="K",
        help="K cases per template, fields and questions taking turns (K=1: 12 cases)",
    )
    i.add_argument("--no-benign", action="store_true", help="no benign twins (no utility)")
    runs = {"type": whole_number(1, 64), "default": 1}
    i.add_argument("--concurrency", **runs, help="runs in flight at once (an endpoint)")
    i.add_argument("--budget", type=float, help="seconds; start no run after them (resume)")
    i.add_argument("--json", action="store_true", help="print the table as JSON")
    _add_save_results(
        i,
        "save every run of this model's log (every command so far) as "
        "react_lab/data/results/NAME.json, fingerprinted",
    )
    i.set_defaults(func=commands.cmd_injection, usage_error=i.error)


def _add_doctor(sub) -> None:
    """The ``doctor`` subcommand."""
    d = sub.add_parser(
        "doctor",
        help="check the install offline (model file, llama.cpp, database), "
        "and the endpoint when OPENAI_BASE_URL is set",
    )
    d.set_defaults(func=lambda a: doctor.main())


def _add_parse(sub) -> None:
    """The ``parse`` subcommand."""
    pr = sub.add_parser(
        "parse",
        help="parse model text from stdin with the tolerant parser (react_lab.lab.agent.parser)",
    )
    pr.add_argument(
        "--tools",
        type=tool_names,
        default=None,
        help="comma-separated tool names, such as search,calc; any other name is an error",
    )
    pr.set_defaults(func=commands.cmd_parse)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``react-lab`` console script; returns the exit code.

    A bad option exits through argparse (``SystemExit(2)``, usage on stderr). A model or
    file that cannot be loaded (``ValueError``, a missing, unreadable or directory path)
    prints ``react-lab: error: ...`` on stderr and returns 2, and so does an endpoint
    that cannot serve a request (:class:`react_lab.lab.backends.endpoints.EndpointError`:
    unreachable, unknown model, refused key, timeout, still failing after the retries); any
    other exception is a bug and keeps its traceback.
    """
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (
        ValueError,
        FileNotFoundError,
        IsADirectoryError,
        NotADirectoryError,
        PermissionError,
        EndpointError,
        MissingExtra,
    ) as exc:
        print(f"react-lab: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `react-lab parse ... | head`: the reader left; no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's own recipe
        return 141

"""The ``react-lab`` command: run the loop, parse model text, and the notebooks' experiments.

``react-lab ask "QUESTION" [--model local|scripted:FILE.json|openai] [--no-stop] [--json] [--mcp COMMAND]``
``react-lab eval [--model local|oracle|dont_know|...] [--n N] [--exemplars N] [--json]
[--save-results NAME]``
``react-lab eval --config NAME [--split dev|test] [--trials K] [--temperature T] [--seed S] [--save-results NAME]``
``react-lab parse [--tools a,b]`` (model text on stdin)
Run ``react-lab --help`` for every subcommand, ``react-lab ask --help`` for one.

A bad option value stops the command before anything runs, with
``react-lab CMD: error: argument --OPTION: ...`` and exit code 2; so does a model or
file that cannot be loaded (``react-lab: error: ...``).
"""
from __future__ import annotations

import argparse
import functools
import json
import math
import sys

from . import cost
from .backends import doctor
from .backends.endpoints import EndpointError
from .backends.load import load_chat_model, load_model, model_spec
from .experiments import abuses, evals, forge
from .experiments.results import save_eval
from .experiments.tasks import load_tasks
from .guards import Guards
from .loop import MAX_STEPS, ask
from .native import ask_native
from .notebook.warm import warm_up
from .parser import parse
from .protocol import EXEMPLARS, MAX_TOKENS
from .tools import default_tools

#: ``cost --steps`` above this is refused: the table has one row per step, and 10 million
#: steps took 600 MB to print 108 MB. A real agent run is tens of steps.
MAX_COST_STEPS = 1000

#: The ``--model`` specs :func:`react_lab.backends.load.load_model` understands.
MODEL_HELP = ("local (the embedded SmolLM2; the default unless REACT_LAB_MODEL names "
              "another), scripted:FILE.json (replays a JSON "
              "list of completions), openai (model from OPENAI_MODEL) or openai:MODEL")
#: ``eval`` also takes the two scripted baselines of :mod:`react_lab.experiments.evals`.
EVAL_MODEL_HELP = ("local (the embedded SmolLM2; the default unless REACT_LAB_MODEL names "
                   "another); oracle (scripted: makes each task's "
                   "right tool calls, then gives the gold answer: scores 100%%); dont_know "
                   "(scripted: always answers \"I don't know\": scores 0%%); scripted:FILE.json; "
                   "openai (model from OPENAI_MODEL) or openai:MODEL")


# --------------------------------------------------------------------------- option types

def whole_number(low: int = 1, high: int | None = None, *, zero_is_off: bool = False):
    """An argparse ``type=``: a whole number from ``low`` to ``high`` (None: no upper bound).

    A bad value becomes ``error: argument --x: must be ...`` (exit code 2) instead of a
    model call with a nonsense limit. ``zero_is_off`` says so in the message.
    """
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < low or (high is not None and value > high):
            bound = f">= {low}" if high is None else f"from {low} to {high}"
            off = " (0 switches the limit off)" if zero_is_off else ""
            raise argparse.ArgumentTypeError(f"must be a whole number {bound}{off}, got {text}")
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


def _print_json(obj) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False, default=str))


def cmd_ask(args) -> int:
    """``react-lab ask``: one run of the text or native loop; prints the trace or ``--json``."""
    if getattr(args, "protocol", "text") == "native" and args.no_stop:
        args.usage_error("argument --no-stop: the native protocol sends no stop sequence; "
                         "drop --no-stop, or use --protocol text to see forged observations")
    tools = _mcp_tools(args) if getattr(args, "mcp", None) else default_tools()
    if model_spec(args.model) == "local":
        warm_up(model=True, protocols=[getattr(args, "protocol", "text")])  # one-off costs first
    if getattr(args, "protocol", "text") == "native":
        result = ask_native(args.question, load_chat_model(args.model), tools,
                            max_steps=args.max_steps, max_tokens=args.max_tokens,
                            guards=_guards(args))
    else:
        model = load_model(args.model)
        result = ask(args.question, model, tools, stop=not args.no_stop,
                     max_steps=args.max_steps, max_tokens=args.max_tokens, guards=_guards(args))
    getattr(tools, "close", lambda: None)()  # an MCP session ends with the run (else at exit)
    if args.json:
        _print_json(result.to_dict())
    else:
        print(result.transcript.render_text())
        print(f"\nanswer: {result.answer}\nstopped_by: {result.stopped_by}")
    return 0


def _mcp_tools(args):
    """``--mcp COMMAND``: the tools of that MCP server (react_lab.mcp); a bad one is a usage error."""
    from .mcp import MCPServerError, mcp_tools  # the MCP SDK loads only when --mcp asks for it

    try:
        return mcp_tools(args.mcp)
    except MCPServerError as exc:
        args.usage_error(f"argument --mcp: {exc}")


def _guards(args):
    """The run's :class:`react_lab.guards.Guards` from the ``ask`` options (0 switches a limit off)."""
    return Guards(token_budget=args.token_budget or None, time_budget=args.time_budget or None,
                  tool_timeout=args.tool_timeout or None, money_budget=args.money_budget or None,
                  price_in=args.price_in, price_out=args.price_out)


def _add_guard_options(parser: argparse.ArgumentParser) -> None:
    """The guard limits of ``ask``; defaults are :class:`react_lab.guards.Guards`'s."""
    d = Guards()
    limit = non_negative(zero_is_off=True)
    g = parser.add_argument_group("guards (0 switches a limit off)")
    g.add_argument("--token-budget", type=whole_number(0, zero_is_off=True), default=d.token_budget,
                   help="prompt + completion tokens per run (default %(default)s)")
    g.add_argument("--time-budget", type=limit, default=d.time_budget,
                   help="wall-clock seconds per run (default %(default)s)")
    g.add_argument("--tool-timeout", type=limit, default=d.tool_timeout,
                   help="seconds per tool call (default %(default)s)")
    g.add_argument("--price-in", type=non_negative(), default=d.price_in,
                   help="dollars per million prompt tokens (default %(default)s)")
    g.add_argument("--price-out", type=non_negative(), default=d.price_out,
                   help="dollars per million completion tokens (default %(default)s)")
    g.add_argument("--money-budget", type=limit, default=d.money_budget,
                   help="dollars per run at those prices (default %(default)s)")


def cmd_parse(args) -> int:
    """``react-lab parse``: read model text on stdin with the tolerant parser; print its JSON."""
    text = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    tools = [t.strip() for t in args.tools.split(",") if t.strip()] if args.tools else None
    _print_json(parse(text, tools=tools).to_dict())
    return 0


def _eval_model(spec: str, protocol: str):
    """Build the backend for ``--model``: oracle, dont_know, or a model spec for the protocol.

    Text: :func:`react_lab.backends.load.load_model` specs; native: :func:`react_lab.backends.load.load_chat_model`.
    """
    if spec in evals.SCRIPTED:
        return functools.partial(evals.SCRIPTED[spec], protocol=protocol)
    return load_chat_model(spec) if protocol == "native" else load_model(spec)


def cmd_eval(args) -> int:
    """``react-lab eval``: run the set, print per-task lines and metrics (or ``--json`` metrics).

    With ``--config NAME`` or ``--list-configs``: :func:`react_lab.experiments.ladder.cli_ladder`.
    ``args``: ``n`` (first N tasks), ``protocol`` (text|native), ``model`` (local, oracle,
    dont_know, scripted:FILE.json, openai[:MODEL]), ``exemplars`` (text only: the first
    N of :data:`react_lab.protocol.EXEMPLARS` in the prompt; None: the prompt's default),
    ``json``, ``concurrency`` (runs in flight against an endpoint,
    :func:`react_lab.experiments.evals.evaluate`), ``save_results`` (a name: every task computed
    afresh, then saved by :func:`react_lab.experiments.results.save_eval`). Records are cached under
    :func:`react_lab.experiments.evals.default_cache_dir`. Raises ``ValueError`` for ``exemplars``
    with the native protocol. Returns the exit code.
    """
    if args.config or args.list_configs:  # the ladder's named configurations (issue 15)
        from .experiments import ladder

        return ladder.cli_ladder(args)
    tasks = load_tasks(n=args.n)
    args.model = model_spec(args.model)  # --model, else REACT_LAB_MODEL, else local
    save_as = getattr(args, "save_results", None)
    n_exemplars = getattr(args, "exemplars", None)
    if n_exemplars is not None and args.protocol != "text":
        raise ValueError("--exemplars is for the text protocol (native calls have no exemplars)")
    exemplars = None if n_exemplars is None else EXEMPLARS[:n_exemplars]
    try:
        model = _eval_model(args.model, args.protocol)
        if args.model == "local":
            warm_up(model=True, protocols=[args.protocol])  # one-off costs out of the first task
        run = evals.evaluate(tasks, model, protocol=args.protocol, progress=not args.json,
                             model_name=args.model if args.model in evals.SCRIPTED else None,
                             exemplars=exemplars,
                             concurrency=getattr(args, "concurrency", 1), use_cache=not save_as)
    except RuntimeError as exc:
        if isinstance(exc, EndpointError):
            raise  # the CLI prints it as one "react-lab: error: ..." line
        print(f"react-lab eval: {exc}", file=sys.stderr)
        return 2
    if save_as:
        path = save_eval(save_as, run, protocol=args.protocol, model=args.model, n=args.n,
                         exemplars=n_exemplars)
        print(f"saved: {path}", file=sys.stderr)
    m = run.metrics
    summary = {**m, "model": run.records[0]["model"] if run.records else args.model,
               "protocol": args.protocol, "run_id": run.run_id, "computed": run.computed,
               "seconds": round(run.seconds, 2), "log": str(run.log_path)}
    if args.json:
        print(json.dumps(summary, indent=2, ensure_ascii=False))
        return 0
    for r in run.records:
        answer = (r["answer"] or "").replace("\n", " ")
        print(f"{'✓' if r['correct'] else '✗'} {r['task_id']:<18} {r['stopped_by']:<10} "
              f"{len(r['steps'])} steps  gold={r['gold']!r}  answer={answer[:60]!r}")
    print()
    for key in evals.METRIC_ROWS:
        print(f"{key:>20}: {m[key]:.3f}")
    print(f"{'tasks':>20}: {m['n']} ({run.computed} computed, the rest cached)")
    print(f"{'wall clock':>20}: {run.seconds:.1f} s   log: {run.log_path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with one subcommand per experiment."""
    p = argparse.ArgumentParser(prog="react-lab", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)

    a = sub.add_parser("ask", help="run the ReAct loop (react_lab.loop, or react_lab.native) on one "
                                   "question and print the trace")
    a.add_argument("question")
    a.add_argument("--model", default=None, help=MODEL_HELP + "; with --protocol native, "
                   "scripted:FILE.json replays JSON replies instead")
    a.add_argument("--protocol", choices=["text", "native"], default="text",
                   help="text: ReAct labels read by the tolerant parser (react_lab.loop, "
                        "react_lab.parser); native: structured tool calls (react_lab.native; the "
                        "local model's replies constrained by a JSON-Schema grammar, react_lab.backends.grammar)")
    a.add_argument("--no-stop", action="store_true",
                   help="send no stop sequence (text protocol only), to see forged observations")
    a.add_argument("--max-steps", type=whole_number(1), default=MAX_STEPS,
                   help="model calls per run, plus one best-effort answer if they run out "
                        "(default %(default)s)")
    a.add_argument("--max-tokens", type=whole_number(1), default=MAX_TOKENS,
                   help="completion tokens per step (default %(default)s)")
    a.add_argument("--json", action="store_true", help="print one JSON object")
    a.add_argument("--mcp", metavar="COMMAND", default=None,
                   help='take the tools from this MCP server over stdio, e.g. "python -m react_lab.mcp" '
                        "(react_lab.mcp); only the lab's own read-only tools run without approval")
    _add_guard_options(a)
    a.set_defaults(func=cmd_ask, usage_error=a.error)

    f = sub.add_parser("forge-rate", help="measure how often the model forges an Observation, "
                                          "with and without the stop sequence (react_lab.experiments.forge)")
    f.add_argument("--n", type=whole_number(1), default=100,
                   help="number of questions (default %(default)s)")
    f.add_argument("--model", default=None, help=MODEL_HELP)
    f.add_argument("--batch", type=whole_number(1, 255), default=forge.BATCH,  # llama.cpp's limit
                   help="embedded model: questions decoded side by side (default %(default)s; "
                        "1 = one at a time, exactly create_completion's tokens)")
    f.add_argument("--json", action="store_true", help="print one JSON object, no progress bar")
    f.add_argument("--save-results", metavar="NAME", default=None,
                   help="also save the result, fingerprinted, as react_lab/data/results/NAME.json "
                        "(react_lab.experiments.results)")
    f.set_defaults(func=forge.cli_forge_rate)

    ab = sub.add_parser("abuses", help="feed three argument abuses to regex, schema and constrained "
                                       "decoding (react_lab.experiments.abuses)")
    ab.add_argument("--json", action="store_true", help="print a JSON list of outcomes")
    ab.set_defaults(func=abuses.cli_abuses)

    c = sub.add_parser("cost", help="prompt tokens of an N-step run: linear prefix vs quadratic "
                                    "re-sends (react_lab.cost)")
    c.add_argument("--prefix", type=int, required=True, help="prompt prefix P, tokens")
    c.add_argument("--observation", type=int, required=True, help="observation O per step, tokens")
    c.add_argument("--assistant", type=int, required=True, help="assistant text A per step, tokens")
    # The sizes stay plain ints: react_lab.cost checks them and names P, O and A.
    c.add_argument("--steps", type=whole_number(1, MAX_COST_STEPS), required=True,
                   help=f"number of steps N (at most {MAX_COST_STEPS})")
    c.add_argument("--plot", help="write a PNG plot to this file")
    c.add_argument("--json", action="store_true", help="print one JSON object")
    c.set_defaults(func=cost.cli_cost)

    e = sub.add_parser("eval", help="evaluate a model and protocol on the fixed task set "
                                    "(react_lab.experiments.evals, react_lab.experiments.tasks; --model oracle and "
                                    "dont_know: the 100%% and 0%% baselines)")
    e.add_argument("--n", type=whole_number(1), default=None, help="first N tasks only")
    e.add_argument("--protocol", choices=["text", "native"], default="text",
                   help="text (ReAct labels) or native (structured tool calls)")
    e.add_argument("--model", default=None, help=EVAL_MODEL_HELP)
    e.add_argument("--exemplars", type=whole_number(0, len(EXEMPLARS)), default=None,
                   help="text protocol: put the first N worked exchanges of "
                        "react_lab.protocol.EXEMPLARS in the prompt (default: the prompt's own, 1)")
    e.add_argument("--json", action="store_true", help="print the metrics as one JSON object, "
                                                       "no progress bar")
    e.add_argument("--concurrency", type=whole_number(1, 64), default=1,
                   help="runs in flight at once against an endpoint (default %(default)s); "
                        "records come back in task order, as a serial run's")
    e.add_argument("--save-results", metavar="NAME", default=None,
                   help="compute every task afresh (no cache) and save metrics and records, "
                        "fingerprinted, as react_lab/data/results/NAME.json (react_lab.experiments.results); "
                        "with --config: save the finished ladder run")
    ladder_group = e.add_argument_group(
        "the ladder (react_lab.experiments.ladder)", "--config NAME runs a named configuration of the "
        "loop over the dev or test half; --list-configs names them")
    ladder_group.add_argument("--config", default=None, help="a configuration of react_lab.experiments.ladder "
                              "(baseline, grammar_action, ..., best)")
    ladder_group.add_argument("--list-configs", action="store_true", help="list the configurations")
    ladder_group.add_argument("--split", choices=["dev", "test", "all"], default=None,
                              help="the task half to run (with --config; default dev)")
    ladder_group.add_argument("--per-category", type=whole_number(1), default=None,
                              help="only the first N tasks of each category of the split")
    ladder_group.add_argument("--trials", type=whole_number(1, 100), default=1,
                              help="runs per task, with seeds S, S+1, ... (default 1)")
    ladder_group.add_argument("--temperature", type=float, default=0.0,
                              help="sampling temperature (default 0: greedy)")
    ladder_group.add_argument("--seed", type=int, default=0, help="seed of the first trial")
    ladder_group.add_argument("--budget", type=float, default=None,
                              help="seconds; start no run after them (run again to resume)")
    e.set_defaults(func=cmd_eval)

    d = sub.add_parser("doctor", help="check the install offline (model file, llama.cpp, database), "
                                      "and the endpoint when OPENAI_BASE_URL is set")
    d.set_defaults(func=lambda a: doctor.main())

    pr = sub.add_parser("parse", help="parse model text from stdin with the tolerant parser "
                                      "(react_lab.parser)")
    pr.add_argument("--tools", help="comma-separated tool names; any other name is an error")
    pr.set_defaults(func=cmd_parse)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``react-lab`` console script; returns the exit code.

    A bad option exits through argparse (``SystemExit(2)``, usage on stderr). A model or
    file that cannot be loaded (``ValueError``, a missing, unreadable or directory path)
    prints ``react-lab: error: ...`` on stderr and returns 2, and so does an endpoint
    that cannot serve a request (:class:`react_lab.backends.endpoints.EndpointError`: unreachable,
    unknown model, refused key, timeout, still failing after the retries); any other
    exception is a bug and keeps its traceback.
    """
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError, IsADirectoryError, NotADirectoryError,
            PermissionError, EndpointError) as exc:
        print(f"react-lab: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

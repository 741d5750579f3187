"""The ``react-lab`` command: run the loop, parse model text, and the notebooks' experiments.

``react-lab ask "QUESTION" [--model local|scripted:FILE.json|openai] [--no-stop] [--json]``
``react-lab parse [--tools a,b]`` (model text on stdin)
Run ``react-lab --help`` for every subcommand.
"""
from __future__ import annotations

import argparse
import json
import sys

from . import protocol


def _print_json(obj) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False, default=str))


def cmd_ask(args) -> int:
    from .loop import ask
    from .models import load_model
    from .tools import default_tools

    if getattr(args, "protocol", "text") == "native":
        from .native import ask_native, load_chat_model

        result = ask_native(args.question, load_chat_model(args.model), default_tools(),
                            max_steps=args.max_steps, max_tokens=args.max_tokens,
                            guards=_guards(args))
    else:
        model = load_model(args.model)
        result = ask(args.question, model, default_tools(), stop=not args.no_stop,
                     max_steps=args.max_steps, max_tokens=args.max_tokens, guards=_guards(args))
    if args.json:
        _print_json(result.to_dict())
    else:
        print(result.transcript.render_text())
        print(f"\nanswer: {result.answer}\nstopped_by: {result.stopped_by}")
    return 0


def _guards(args):
    """The run's :class:`react_lab.guards.Guards` from the ``ask`` options (0 switches a limit off)."""
    from .guards import Guards

    return Guards(token_budget=args.token_budget or None, time_budget=args.time_budget or None,
                  tool_timeout=args.tool_timeout or None, money_budget=args.money_budget or None,
                  price_in=args.price_in, price_out=args.price_out)


def _add_guard_options(parser: argparse.ArgumentParser) -> None:
    """The guard limits of ``ask``; defaults are :class:`react_lab.guards.Guards`'s."""
    from .guards import Guards

    d = Guards()
    g = parser.add_argument_group("guards (0 switches a limit off)")
    g.add_argument("--token-budget", type=int, default=d.token_budget,
                   help="prompt + completion tokens per run (default %(default)s)")
    g.add_argument("--time-budget", type=float, default=d.time_budget,
                   help="wall-clock seconds per run (default %(default)s)")
    g.add_argument("--tool-timeout", type=float, default=d.tool_timeout,
                   help="seconds per tool call (default %(default)s)")
    g.add_argument("--price-in", type=float, default=d.price_in,
                   help="dollars per million prompt tokens (default %(default)s)")
    g.add_argument("--price-out", type=float, default=d.price_out,
                   help="dollars per million completion tokens (default %(default)s)")
    g.add_argument("--money-budget", type=float, default=d.money_budget,
                   help="dollars per run at those prices (default %(default)s)")


def cmd_parse(args) -> int:
    text = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    tools = [t.strip() for t in args.tools.split(",") if t.strip()] if args.tools else None
    _print_json(protocol.parse(text, tools=tools).to_dict())
    return 0


def _handler(module: str, name: str):
    """Import ``react_lab.<module>.<name>`` only when its subcommand runs (keeps startup fast)."""
    import importlib

    return getattr(importlib.import_module(f"react_lab.{module}"), name)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with one subcommand per experiment."""
    p = argparse.ArgumentParser(prog="react-lab", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)

    a = sub.add_parser("ask", help="run the ReAct loop on one question and print the trace")
    a.add_argument("question")
    a.add_argument("--model", default="local",
                   help="local (embedded SmolLM2), scripted:FILE.json, openai or openai:MODEL")
    a.add_argument("--protocol", choices=["text", "native"], default="text",
                   help="text: ReAct labels parsed by regex; native: structured tool calls "
                        "(the local model's replies constrained by a JSON-Schema grammar)")
    a.add_argument("--no-stop", action="store_true", help="send no stop sequence")
    a.add_argument("--max-steps", type=int, default=6)
    a.add_argument("--max-tokens", type=int, default=192, help="completion tokens per step")
    a.add_argument("--json", action="store_true", help="print one JSON object")
    _add_guard_options(a)
    a.set_defaults(func=cmd_ask)

    f = sub.add_parser("forge-rate", help="measure how often the model forges an Observation, "
                                          "with and without the stop sequence")
    f.add_argument("--n", type=int, default=100, help="number of questions")
    f.add_argument("--model", default="local")
    f.add_argument("--json", action="store_true")
    f.set_defaults(func=lambda a: _handler("forge", "cli_forge_rate")(a))

    ab = sub.add_parser("abuses", help="feed three argument abuses to regex, schema and constrained decoding")
    ab.add_argument("--json", action="store_true")
    ab.set_defaults(func=lambda a: _handler("abuses", "cli_abuses")(a))

    c = sub.add_parser("cost", help="prompt tokens of an N-step run: linear prefix vs quadratic re-sends")
    c.add_argument("--prefix", type=int, required=True, help="prompt prefix P, tokens")
    c.add_argument("--observation", type=int, required=True, help="observation O per step, tokens")
    c.add_argument("--assistant", type=int, required=True, help="assistant text A per step, tokens")
    c.add_argument("--steps", type=int, required=True, help="number of steps N")
    c.add_argument("--plot", help="write a PNG plot to this file")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=lambda a: _handler("cost", "cli_cost")(a))

    e = sub.add_parser("eval", help="evaluate a model and protocol on the fixed task set")
    e.add_argument("--n", type=int, default=None, help="first N tasks only")
    e.add_argument("--protocol", choices=["text", "native"], default="text")
    e.add_argument("--model", default="local")
    e.add_argument("--json", action="store_true")
    e.set_defaults(func=lambda a: _handler("evals", "cli_eval")(a))

    pr = sub.add_parser("parse", help="parse model text from stdin with the tolerant parser")
    pr.add_argument("--tools", help="comma-separated tool names; any other name is an error")
    pr.set_defaults(func=cmd_parse)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``react-lab`` console script; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError) as exc:
        print(f"react-lab: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

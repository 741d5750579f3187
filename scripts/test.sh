#!/usr/bin/env bash
# The whole test suite from a fresh clone: the development environment, ruff's format and lint
# checks and the unit tests (the browser test included), then the Binder environment and every
# notebook under nbval with the network off.
set -euo pipefail
cd "$(dirname "$0")/.."
# The browser test (tests/browser) drives JupyterLab in the distribution's Chromium.
# REACT_LAB_SKIP_BROWSER=1 skips it on a machine without Chromium; CI never sets it.
heavy="model or server or browser"
if [[ "${REACT_LAB_SKIP_BROWSER:-}" =~ ^(1|true|yes)$ ]]; then
  echo "==> REACT_LAB_SKIP_BROWSER is set: skipping the browser test"
  heavy="model or server"
elif ! command -v "${REACT_LAB_CHROMIUM:-chromium}" >/dev/null \
    || ! command -v "${REACT_LAB_CHROMEDRIVER:-chromedriver}" >/dev/null; then
  echo "The browser test needs Chromium and its driver, and they are missing. Install them:" >&2
  echo "  Debian/Ubuntu:  sudo apt-get install -y chromium chromium-driver" >&2
  echo "(or set REACT_LAB_CHROMIUM and REACT_LAB_CHROMEDRIVER to another install's paths)," >&2
  echo "or skip the browser test on this machine:  REACT_LAB_SKIP_BROWSER=1 bash scripts/test.sh" >&2
  exit 1
fi
bash scripts/setup-env.sh
echo "==> ruff: the format and the lint rules of pyproject.toml (${SECONDS} s so far)"
# Two commands, not `a && b`: set -e does not stop on a failure before `&&`.
.venv/bin/ruff format --check .
.venv/bin/ruff check .
# The Binder environment is built from the binder/ files alone, while the unit tests run
# (pip leaves a core idle much of the time); its log is shown if the build fails.
binder_log="$(mktemp)"
echo "==> building the Binder environment in the background (log: $binder_log)"
setsid bash scripts/binder-check.sh build >"$binder_log" 2>&1 &   # its own process group
binder_build=$!
trap 'kill -- "-$binder_build" 2>/dev/null || true' EXIT   # a failing test stops the build too
export PYTHONHASHSEED=0 MPLBACKEND=Agg REACT_LAB_SOLUTIONS=1 REACT_LAB_DERANDOMIZE=1
echo "==> unit tests without the model, on both cores (${SECONDS} s so far)"
# The tests that need no model run on both cores (pytest-xdist). The ones that load the model,
# start its server or drive the browser run after them (below).
.venv/bin/python -m pytest tests -p no:cacheprovider -m "not model and not server and not browser" -n 2
echo "==> model, server and browser tests, two processes side by side (${SECONDS} s so far)"
# Two pytest processes, one core each, rather than pytest-xdist's two workers: xdist hands a
# worker its next file once that worker has two tests left, so it gave the forgery tests to
# the worker still busy with the browser file (the longest) and left the other idle at the
# end. These two lists split the files' times (measured alone on 2 December) about evenly:
# the browser file (about 135 s) with the forgery file (60 s); the server (99 s), speed
# (62 s) and the short files, with every other test file, so that a model test in a new file
# runs too. Each llama.cpp on one thread: two models with two threads each on two cores are
# several times slower (their threads wait for each other), one thread each is not.
with_browser=(tests/browser/test_jupyterlab.py tests/lab/experiments/test_forge_model.py)
mapfile -t the_rest < <(find tests -name "test_*.py" | sort | grep -vxF -f <(printf "%s\n" "${with_browser[@]}"))
browser_log="$(mktemp)"
REACT_LAB_THREADS="${REACT_LAB_THREADS:-1}" \
  .venv/bin/python -m pytest "${with_browser[@]}" -p no:cacheprovider -m "$heavy" >"$browser_log" 2>&1 &
browser_run=$!
failed=0
REACT_LAB_THREADS="${REACT_LAB_THREADS:-1}" \
  .venv/bin/python -m pytest "${the_rest[@]}" -p no:cacheprovider -m "$heavy" || failed=1
wait "$browser_run" || failed=1
echo "==> the browser test's process (${browser_log}):"
cat "$browser_log"
if [ "$failed" != 0 ]; then
  echo "model, server or browser tests failed (above)" >&2
  exit 1
fi
if ! wait "$binder_build"; then
  cat "$binder_log" >&2
  echo "building the Binder environment failed (its log is above)" >&2
  exit 1
fi
grep -v "is ignored: it is neither a file nor a directory" "$binder_log" || true
echo "==> every notebook under nbval, in the Binder environment (${SECONDS} s so far)"
bash scripts/binder-check.sh run
echo "==> all passed in ${SECONDS} s"

#!/usr/bin/env bash
# The whole test suite from a fresh clone: environment, unit tests, notebooks under nbval.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-env.sh
export PYTHONHASHSEED=0 MPLBACKEND=Agg REACT_LAB_SOLUTIONS=1
.venv/bin/python -m pytest tests notebooks \
  --nbval-lax --nbval-current-env --nbval-sanitize-with notebooks/sanitize.cfg \
  --nbval-cell-timeout=900 -p no:cacheprovider "$@"

#!/usr/bin/env bash
# The whole test suite from a fresh clone: the development environment and the unit tests,
# then the Binder environment and every notebook under nbval with the network off.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-env.sh
export PYTHONHASHSEED=0 MPLBACKEND=Agg REACT_LAB_SOLUTIONS=1
.venv/bin/python -m pytest tests -p no:cacheprovider
bash scripts/binder-check.sh

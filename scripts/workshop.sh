#!/usr/bin/env bash
# Set up (first time only) and open JupyterLab on the notebooks, with the embedded model ready.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-env.sh
exec .venv/bin/jupyter lab --notebook-dir=notebooks "$@" notebooks/01_text_protocol.ipynb

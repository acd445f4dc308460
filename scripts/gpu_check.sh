#!/usr/bin/env bash
# On a GPU machine, from a source checkout (no install needed): the GPU tests and every
# benchmark whose figures are in docs/benchmarks.md, written into OUTDIR.
#   bash scripts/gpu_check.sh OUTDIR [SECTION,SECTION,...|generate|rest|all]
# Sections (each bounded by timeouts; minutes on an H200):
#   decode    8B-shape decode benchmark: greedy, sampled, and a batch-8 profile (about 5)
#   gentests  decode fast-path tests (about 1)
#   bytecode  compile the packages' bytecode where this Python has none (as pip does; seconds)
#   oneshot   imports on this host, then one-shot CLI verifies with their timelines (about 1.5)
#   decodecache  the first decode batch of a new process, with empty compile caches and
#             then with the caches the first left, then profiled (issue 14's target: 5 s; about 4)
#   hfdecode  transformers' own StaticCache path, for comparison (about 2)
#   tests     the verifier's GPU tests, sandboxed, but the real-world corpus (about 4)
#   realworld the real-world corpus on the GPU, timing on (about 6)
#   attacks   every attack of tests/attacks on the GPU, timing on (about 4)
#   finetune  LoRA training benchmark (about 1)
#   pipeline  cell to result view with known candidates (about 1.5)
#   latency   a kernel session's cells and one-shot CLI verifies, cold and cached (about 3)
#   eval      eval twice over examples/tasks and examples/gpu_tasks (about 4)
#   verify    the verifier's own costs, with and without the sandbox (about 2)
#   speed     launch overhead, both timing figures and the tuning pass on 14 kernels (about 8)
#   launch    only the launch overhead, and three ways of launching a small kernel (about 1)
#   harness   where a timed figure comes from: as a user times it, the timing loop, its checks,
#             the verifier (the GPU examples; about 2)
#   steps     a candidate worker's one-call gap: its instruments added in-process one at a time
#             (about 1.5)
#   cpu       the CPU suite on this machine's software (about 4)
# generate = decode,gentests,hfdecode; rest = tests,realworld,finetune,pipeline,eval,verify;
# all = both, then cpu. On the device machine give an OUTDIR under $OUT: what a section
# wrote there comes back even when the call runs out of time.
set -uo pipefail
OUT=${1:?usage: scripts/gpu_check.sh OUTDIR [SECTION,...|generate|rest|all]}
WHAT=${2:-all}
case "$WHAT" in
    generate) WHAT=decode,gentests,hfdecode ;;
    rest) WHAT=tests,realworld,finetune,pipeline,eval,verify ;;
    all) WHAT=decode,gentests,hfdecode,tests,realworld,finetune,pipeline,eval,verify,cpu ;;
esac
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
# The verifier's sandbox needs bubblewrap; a GPU machine without a package registry gets
# it from .deb files carried in .deb/ (apt-get download bubblewrap libcap2 libselinux1).
if ! command -v bwrap >/dev/null && [ -z "${AUTOTRITON_BWRAP:-}" ] && ls .deb/bubblewrap_*.deb >/dev/null 2>&1; then
    mkdir -p /tmp/bwrap-root
    for f in .deb/*.deb; do dpkg -x "$f" /tmp/bwrap-root; done
    export AUTOTRITON_BWRAP=/tmp/bwrap-root/usr/bin/bwrap
    if ldd "$AUTOTRITON_BWRAP" | grep -q "not found"; then
        export LD_LIBRARY_PATH=/tmp/bwrap-root/usr/lib/x86_64-linux-gnu:/tmp/bwrap-root/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    fi
fi
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
since() { "$PY" -c "import sys; print(round(float(sys.argv[1]) - float(sys.argv[2]), 2))" "$(date +%s.%N)" "$1"; }
want() { [[ ",$WHAT," == *",$1,"* ]]; }

if want bytecode; then
    # What `pip install` does by default: compile the packages' bytecode. A Python image
    # built without it (PYTHONDONTWRITEBYTECODE=1) compiles torch in every process, which
    # adds seconds to every figure below (docs/benchmarks.md, 2026-12-06 evening).
    echo "== bytecode of the packages this tool imports"
    "$PY" - <<'PYEOF'
import importlib.util, os, subprocess, sys, time
from autotriton_jupyter import bytecode
names = (*bytecode.CHECKED, "transformers", "networkx", "mpmath", "numpy")
folders = [os.path.dirname(s.origin) for s in map(importlib.util.find_spec, names) if s and s.origin]
t0 = time.perf_counter()
got = subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0", "-x", bytecode.SKIP, *folders],
                     stdout=subprocess.DEVNULL)
print(f"compileall of {len(folders)} packages: exit {got.returncode}, {time.perf_counter() - t0:.1f} s; "
      f"still without bytecode: {bytecode.missing()}")
PYEOF
fi

if want decode; then
    echo "== decode benchmark, 8B shape, fused decoder, cache sized for an 8k-token answer: greedy"
    timeout 200 $AT bench generate --new-tokens 256 --budget-tokens 8192 --json \
        > "$OUT/bench-generate-greedy.json" 2> "$OUT/bench-generate-greedy.log" \
        && show "$OUT/bench-generate-greedy.json"
    tail -2 "$OUT/bench-generate-greedy.log"
    echo "== the same, sampled (temperature 0.6, top_p 0.95, the product's default), with a profile"
    timeout 260 $AT bench generate --new-tokens 256 --budget-tokens 8192 --temperature 0.6 \
        --profile --json > "$OUT/bench-generate-sampled.json" 2> "$OUT/bench-generate-sampled.log" \
        && show "$OUT/bench-generate-sampled.json" \
        && "$PY" -c "import json,sys; [print('-- batch', b, 'profile\n', t) for b, t in json.load(open(sys.argv[1]))['profiles'].items()]" "$OUT/bench-generate-sampled.json" | head -60
    tail -2 "$OUT/bench-generate-sampled.log"
fi

if want oneshot; then
    # The one-shot CLI verify's own timeline (issue 14): each progress line is stamped with
    # the seconds since the command started, the fork server's start and preload included.
    echo "== imports on this host, a fresh process each: torch, then torch._dynamo after it"
    for i in 1 2; do
        TRITON_CACHE_DIR=$(mktemp -d) "$PY" -X importtime -c "import time; t=time.perf_counter(); import torch; a=time.perf_counter(); import torch._dynamo; b=time.perf_counter(); print(f'torch {a-t:.2f} s, torch._dynamo after it {b-a:.2f} s')" 2> "$OUT/importtime-$i.txt"
    done
    "$PY" - "$OUT/importtime-2.txt" <<'PYEOF'
import sys
rows = []
for line in open(sys.argv[1]):
    parts = line.split("|")
    if len(parts) == 3 and parts[0].startswith("import time:") and parts[1].strip().isdigit():
        rows.append((int(parts[1]), parts[2].rstrip()))
start = next(i for i, (_, n) in enumerate(rows) if n.strip() == "torch") + 1
print("slowest modules imported by torch._dynamo (cumulative s):")
for cum, name in sorted(rows[start:], key=lambda r: -r[0])[:25]:
    print(f"  {cum / 1e6:6.3f} {name}")
PYEOF
    export AUTOTRITON_CACHE=$(mktemp -d)
    for cand in wrong_axis rowwise wrong_axis rowwise wrong_axis; do
        s0=$(date +%s.%N)
        timeout 100 $AT verify examples/gpu_tasks/softmax.py examples/candidates/softmax/$cand.py --json \
            > "$OUT/oneshot-$cand.json" 2> "$OUT/oneshot-$cand.log"
        code=$?
        took=$(since "$s0")
        # Its answer's last write (the file's time) against its exit: the process's end.
        wrote=$("$PY" -c "import os,sys; print(f'{os.stat(sys.argv[1]).st_mtime - float(sys.argv[2]):.2f}')" "$OUT/oneshot-$cand.json" "$s0")
        echo "verify $cand: exit $code, $took s (its answer written at $wrote s)"
        cut -c1-150 "$OUT/oneshot-$cand.log" | grep -v "started its own verifier" | tail -14
        "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['verdict'], {k: round(v, 2) for k, v in d['seconds'].items()})" "$OUT/oneshot-$cand.json"
    done
    unset AUTOTRITON_CACHE
fi

if want decodecache; then
    # A cache folder of its own, empty at first: the first process fills it, the second
    # (a new kernel session on the same machine) should only read it.
    export TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) TRITON_CACHE_DIR=$(mktemp -d)
    for pass in empty filled; do
        echo "== the first decode batch in a new process, compile caches $pass"
        timeout 200 $AT bench generate --batches 1 --new-tokens 32 --budget-tokens 8192 --json \
            > "$OUT/bench-decodecache-$pass.json" 2> "$OUT/bench-decodecache-$pass.log"
        "$PY" -c "import json,sys; r=json.load(open(sys.argv[1]))['runs'][0]; print(r['run'], round(r['seconds'], 2), 's;', r.get('marks_s'), json.dumps(r.get('compile'))[:900])" "$OUT/bench-decodecache-$pass.json"
        tail -2 "$OUT/bench-decodecache-$pass.log"
    done
    echo "== the same, filled caches, with the first run's Python calls profiled"
    timeout 200 $AT bench generate --batches 1 --new-tokens 32 --budget-tokens 8192 --json --profile-first \
        > "$OUT/bench-decodecache-profile.json" 2> "$OUT/bench-decodecache-profile.log"
    "$PY" -c "import json,sys; r=json.load(open(sys.argv[1]))['runs'][0]; print(r['run'], round(r['seconds'], 2), 's;', r.get('marks_s')); print(r.get('profile', '')[:9000])" "$OUT/bench-decodecache-profile.json"
    unset TORCHINDUCTOR_CACHE_DIR TRITON_CACHE_DIR
fi

if want gentests; then
    echo "== decode fast-path tests"
    timeout 150 "$PY" -m pytest tests/gpu/test_gpu_generate.py -v -p no:cacheprovider --timeout 140 2>&1 | tee "$OUT/gpu-generate-tests.log" | tail -8
fi

if want hfdecode; then
    echo "== decode benchmark, transformers' StaticCache path, same settings (for comparison)"
    timeout 130 $AT bench generate --decoder hf --batches 1 --new-tokens 128 --budget-tokens 8192 --json \
        > "$OUT/bench-generate-hf.json" 2> "$OUT/bench-generate-hf.log" && show "$OUT/bench-generate-hf.json"
fi

if want tests; then
    echo "== GPU tests"
    # GPU_TESTS picks test files (default: all but the decode and real-world tests),
    # GPU_TESTS_TIMEOUT the limit.
    timeout "${GPU_TESTS_TIMEOUT:-470}" "$PY" -m pytest \
        ${GPU_TESTS:-tests/gpu --ignore=tests/gpu/test_gpu_generate.py --ignore=tests/gpu/test_gpu_realworld.py} \
        -v -s -p no:cacheprovider --timeout 300 --durations=10 2>&1 | tee "$OUT/gpu-tests.log" | tail -15
fi

if want realworld; then
    echo "== the real-world corpus on the GPU"
    timeout "${REALWORLD_TIMEOUT:-470}" "$PY" -m pytest tests/gpu/test_gpu_realworld.py \
        -v -s -p no:cacheprovider --timeout 300 2>&1 | tee "$OUT/gpu-realworld.log" | tail -40
fi

if want attacks; then
    echo "== the attack corpus on the GPU, timing on (the timing attacks need it)"
    # ATTACK_FILES picks some of them (the whole corpus takes longer than one device call).
    timeout "${ATTACKS_TIMEOUT:-400}" "$PY" tests/attacks/run_attacks.py --device cuda --out "$OUT/attacks-gpu.json" \
        ${ATTACK_FILES:-} > "$OUT/attacks-gpu.log" 2>&1
    grep -E ": (pass|conditional) " "$OUT/attacks-gpu.log"
    echo "attacks run: $(grep -cE '^[a-z_]+__.*: (pass|fail|conditional|inconclusive) ' "$OUT/attacks-gpu.log")," \
        "passed: $(grep -cE ': pass ' "$OUT/attacks-gpu.log")"
fi

if want finetune; then
    echo "== LoRA training benchmark, 8B shape"
    timeout 150 $AT bench finetune --json > "$OUT/bench-finetune.json" 2> "$OUT/bench-finetune.log" \
        && show "$OUT/bench-finetune.json"
    tail -2 "$OUT/bench-finetune.log"
fi

if want pipeline; then
    echo "== pipeline: cell to result view, known candidates replayed"
    timeout 120 $AT bench pipeline examples/gpu_tasks/softmax.py examples/candidates/softmax \
        -n 2 --repeats 3 --json > "$OUT/bench-pipeline.json" 2> "$OUT/bench-pipeline.log" \
        && show "$OUT/bench-pipeline.json"
fi

if want latency; then
    # A fresh reference-timing cache first (what a new machine pays), then the same again
    # (what a machine that has seen the tasks pays).
    export AUTOTRITON_CACHE=$(mktemp -d)
    # Four different passing softmax kernels (the replayed folder has two files, so its 4
    # samples are 2 codes, each judged once): what a cell of 4 distinct kernels costs.
    DISTINCT=$(mktemp -d)
    for w in 1 2 4 8; do
        sed "s/BLOCK=triton.next_power_of_2(cols))/BLOCK=triton.next_power_of_2(cols), num_warps=$w)/" \
            examples/candidates/softmax/rowwise.py > "$DISTINCT/rowwise_w$w.py"
    done
    for pass in cold cached; do
        echo "== a kernel session, $pass reference timings: softmax twice, then row_sum, 4 candidates each, then softmax with 4 distinct passing kernels"
        timeout 200 $AT bench pipeline examples/gpu_tasks/softmax.py examples/candidates/softmax \
            -n 4 --repeats 2 --then examples/gpu_tasks/row_sum.py:examples/candidates/row_sum \
            --then examples/gpu_tasks/softmax.py:$DISTINCT \
            --json > "$OUT/bench-session-$pass.json" 2> "$OUT/bench-session-$pass.log" \
            && show "$OUT/bench-session-$pass.json"
        tail -3 "$OUT/bench-session-$pass.log"
        echo "== one-shot CLI verify, $pass: a failing pair, then a passing pair with timing"
        for cand in wrong_axis rowwise; do
            s0=$(date +%s.%N)
            timeout 100 $AT verify examples/gpu_tasks/softmax.py examples/candidates/softmax/$cand.py --json \
                > "$OUT/cli-$pass-$cand.json" 2> "$OUT/cli-$pass-$cand.log"
            code=$?
            echo "verify $cand: exit $code, $(since "$s0") s"
            cut -c1-150 "$OUT/cli-$pass-$cand.log" | tail -12
            "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['verdict'], d['reasons'][:2], d['seconds'])" "$OUT/cli-$pass-$cand.json"
        done
    done
    echo "== the CLI's quick path: autotriton verifier start, then each pair twice (the first pays the reference)"
    s0=$(date +%s.%N)
    timeout 120 $AT verifier start -q > "$OUT/service-start.log" 2>&1
    echo "verifier start: exit $?, $(since "$s0") s"
    for round in 1 2; do
        for cand in wrong_axis rowwise; do
            s0=$(date +%s.%N)
            timeout 100 $AT verify examples/gpu_tasks/softmax.py examples/candidates/softmax/$cand.py --json \
                > "$OUT/svc-$round-$cand.json" 2> "$OUT/svc-$round-$cand.log"
            code=$?
            echo "service verify $cand ($round): exit $code, $(since "$s0") s"
            "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['verdict'], d['reasons'][:2], {k: round(v, 2) for k, v in d['seconds'].items()})" "$OUT/svc-$round-$cand.json"
        done
    done
    timeout 60 $AT verifier stop >> "$OUT/service-start.log" 2>&1
    unset AUTOTRITON_CACHE
fi

if want speed; then
    echo "== issue 17: launch overhead, per-call and back-to-back figures, the tuning pass"
    # SPEED_SKIP starts further in (a run cut short goes on; give it another OUTDIR, the
    # file is written anew); SPEED_ONLY set to anything leaves out the launch-overhead section.
    timeout "${SPEED_TIMEOUT:-560}" "$PY" scripts/bench_speed.py "$OUT/bench-speed.json" --pairs "${SPEED_PAIRS:-14}" \
        --skip "${SPEED_SKIP:-0}" ${SPEED_ONLY:+--kernels-only} \
        2> "$OUT/bench-speed.log" | tail -40
    tail -3 "$OUT/bench-speed.log"
fi

if want launch; then
    echo "== issue 17: launch overhead and what cheaper launches could save (a minute)"
    timeout 120 "$PY" scripts/bench_speed.py "$OUT/bench-launch.json" --launch-only 2> "$OUT/bench-launch.log" | tail -5
    tail -3 "$OUT/bench-launch.log"
fi

if want harness; then
    echo "== issue 17: a figure from the user's timing to the verifier's, step by step"
    timeout 240 "$PY" scripts/bench_speed.py "$OUT/bench-harness.json" --harness 2> "$OUT/bench-harness.log" | tail -5
    tail -3 "$OUT/bench-harness.log"
fi

if want steps; then
    echo "== issue 17: a candidate worker's one-call gap, its instruments one at a time"
    timeout 200 "$PY" scripts/bench_speed.py "$OUT/bench-steps.json" --harness-steps 2> "$OUT/bench-steps.log" | tail -20
    tail -3 "$OUT/bench-steps.log"
fi

if want eval; then
    # The same candidates on CPU-sized tasks (launch-bound on a GPU) and on GPU-sized ones.
    for tasks in tasks gpu_tasks; do
        echo "== eval over examples/$tasks with the known candidates, twice"
        for i in 1 2; do
            timeout 200 $AT eval "examples/$tasks" --candidates examples/candidates \
                --out "$OUT/eval-$tasks-$i" -q > "$OUT/eval-$tasks-$i.md" 2> "$OUT/eval-$tasks-$i.log"
        done
        cat "$OUT/eval-$tasks-1.md"
        "$PY" scripts/compare_evals.py "$OUT/eval-$tasks-1" "$OUT/eval-$tasks-2"
    done
fi

if want verify; then
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
    echo "== the same without the sandbox (its cost per worker is the difference)"
    timeout 90 $AT bench verify examples/tasks/softmax.py "$VAR"/*.py --json --no-sandbox \
        > "$OUT/bench-verify-nosandbox.json" 2> "$OUT/bench-verify-nosandbox.log" && show "$OUT/bench-verify-nosandbox.json"
fi

if want cpu; then
    echo "== CPU suite (Triton interpreter) on this machine's Python/torch/triton"
    timeout 240 "$PY" -m pytest tests -q -p no:cacheprovider --ignore=tests/gpu --timeout 120 2>&1 | tail -25 | tee "$OUT/cpu-tests.log"
fi
exit 0

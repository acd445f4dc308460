"""On a real GPU: the corpus verdicts, real timing, runtime cheats and CUDA-error containment."""

from __future__ import annotations

import pytest

from autotriton_jupyter.task import Candidate, Task
from autotriton_jupyter.verify import Verifier, VerifyOptions
from tests.conftest import CORPUS, corpus_cases, expectation
from tests.test_judge_robustness import judge_without_lint

CASES = corpus_cases()

BIG_TASK = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y)


def get_inputs():
    return [torch.randn(4096, 4099), torch.randn(4096, 4099)]


def get_init_inputs():
    return []
"""

HEAD = """
import torch
import torch.nn as nn
import triton
import triton.language as tl
"""

FAST = (
    HEAD
    + """

@triton.jit
def add_relu_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x + y, 0.0), mask=mask)


def launch(x, y, out):
    n = x.numel()
    add_relu_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    return out


class ModelNew(nn.Module):
    def forward(self, x, y):
        return launch(x, y, torch.empty_like(x))
"""
)

SLOW = (
    HEAD
    + """

@triton.jit
def slow_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for _ in range(16):  # re-reads the inputs 16 times: honest but slow
        x = tl.load(x_ptr + offs, mask=mask, volatile=True)
        y = tl.load(y_ptr + offs, mask=mask, volatile=True)
        acc = tl.maximum(x + y, 0.0)
    tl.store(out_ptr + offs, acc, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        n = x.numel()
        slow_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
        return out
"""
)


@pytest.fixture(scope="module")
def verifier():
    with Verifier(VerifyOptions(device="cuda", seed=99)) as v:
        yield v


@pytest.fixture(scope="module")
def big_task():
    return Task.from_source(BIG_TASK, "add_relu_4096")


@pytest.mark.parametrize(
    "task_path,cand_path", CASES, ids=[f"{t.parent.name}/{c.stem}" for t, c in CASES]
)
def test_corpus_verdict_on_gpu(verifier, task_path, cand_path):
    verdict, checks = expectation(cand_path)
    report = verifier.verify(Task.from_file(task_path), Candidate.from_file(cand_path))
    detail = "\n".join(f"{c.name}: {c.message}" for c in report.failed())
    assert report.verdict == verdict, detail
    if verdict == "fail":
        assert {c.name for c in report.failed()} & checks, detail
    else:
        t = report.timing
        assert t and t["candidate_ms"] > 0 and t["eager_ms"] > 0, report.to_json()
        assert not report.interpreted and report.device == "cuda"


def test_slower_kernel_is_reported_slower(verifier, big_task):
    fast = verifier.verify(big_task, Candidate(FAST, "fast"))
    slow = verifier.verify(big_task, Candidate(SLOW, "slow"))
    assert fast.verdict == slow.verdict == "pass", (fast.reasons, slow.reasons)
    assert slow.timing["candidate_ms"] > 2 * fast.timing["candidate_ms"]
    assert fast.timing["speedup_vs_eager"] > slow.timing["speedup_vs_eager"]
    assert fast.timing["compile_ms"] and fast.timing["compile_ms"] > 0
    # The same task's reference figures are shared by both candidates.
    assert fast.timing["eager_ms"] == slow.timing["eager_ms"]


def test_the_references_torch_compile_is_built_before_its_timing(big_task):
    """Once a candidate is right on a fresh input set, the reference's worker builds its
    torch.compile on a thread while the candidate's other runs go on; the reference's
    timing under the GPU's exclusive hold then reuses that build. A candidate wrong at
    once starts none."""
    options = VerifyOptions(device="cuda", seed=7, reference_cache=False)
    with Verifier(options) as v:
        wrong = v.verify(big_task, Candidate(FAST.replace("tl.maximum(x + y, 0.0)", "x + y"), "no_relu"))
        assert wrong.verdict == "fail", wrong.reasons
        ref = v.prepare(big_task)
        assert ref.compile_wanted and ref.compile_ahead_s is None
        report = v.verify(big_task, Candidate(FAST, "fast"))
        assert report.verdict == "pass", report.reasons
        assert v.prepare(big_task) is ref
        assert ref.compile_ahead_s and ref.compile_ahead_s > 0 and not ref.compile_wanted
        assert ref.timing["compiled_ahead_s"] == ref.compile_ahead_s
        assert report.timing["compile_ms"] and report.timing["compile_ms"] > 0
        # Compiled again there (its autotuning under the exclusive hold), from the caches:
        print("build ahead", ref.compile_ahead_s, "s; graphs found in Inductor's cache:", ref.timing["compile_cache_hits"])


SIDE_STREAM = FAST.replace(
    """        return launch(x, y, torch.empty_like(x))""",
    """        out = torch.empty_like(x)
        side = getattr(torch.cuda, "Str" + "eam")()
        with getattr(torch.cuda, "str" + "eam")(side):
            for _ in range(20):
                launch(x, y, out)
        return out""",
)


def test_side_stream_is_caught_at_run_time(verifier, big_task):
    # The lint refuses this source (computed getattr); the runtime checks must stand alone.
    assert "dynamic_access" in {
        c.name for c in verifier.verify(big_task, Candidate(SIDE_STREAM)).failed()
    }
    r = judge_without_lint(verifier, big_task, Candidate(SIDE_STREAM, "side_stream"))
    assert {"side_stream", "timing_integrity"} & {c.name for c in r.failed()}, r.reasons


COUNTING_FALLBACK = FAST.replace(
    """class ModelNew(nn.Module):
    def forward(self, x, y):
        return launch(x, y, torch.empty_like(x))""",
    """class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x, y):
        self.calls += 1
        if self.calls <= 25:
            return launch(x, y, torch.empty_like(x))
        return torch.relu(x + y)""",
)

COUNTING_STALE = FAST.replace(
    """class ModelNew(nn.Module):
    def forward(self, x, y):
        return launch(x, y, torch.empty_like(x))""",
    """class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.last = None

    def forward(self, x, y):
        self.calls += 1
        if self.calls <= 25 or self.last is None:
            self.last = launch(x, y, torch.empty_like(x))
        return self.last""",
)


@pytest.mark.parametrize(
    "source,expected",
    [
        (COUNTING_FALLBACK, {"torch_ops", "launches"}),
        (COUNTING_STALE, {"timed_outputs", "launches"}),
    ],
)
def test_call_counting_cheats_are_caught_while_timed(verifier, big_task, source, expected):
    r = verifier.verify(big_task, Candidate(source, "counting"))
    assert r.verdict == "fail"
    assert expected & {c.name for c in r.failed()}, r.reasons


ILLEGAL = (
    HEAD
    + """

@triton.jit
def wild_kernel(x_ptr, out_ptr, n, shift, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs + shift), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        wild_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), 1 << 40, BLOCK=1024)
        return out
"""
)
OOM = FAST.replace(
    "        return launch(x, y, torch.empty_like(x))",
    "        hog = torch.empty(1 << 46, dtype=torch.uint8, device=x.device)\n"
    "        return launch(x, y, torch.empty_like(x)) + hog[:1].float()",
)


@pytest.mark.parametrize("source,needle", [(ILLEGAL, "CUDA"), (OOM, "memory")])
def test_cuda_errors_are_contained_and_the_pool_recovers(verifier, big_task, source, needle):
    bad = verifier.verify(big_task, Candidate(source, "bad"))
    assert bad.verdict == "fail"
    text = " ".join(c.message for c in bad.failed()) + " ".join(bad.errors)
    assert needle.lower() in text.lower(), bad.reasons
    good = verifier.verify(big_task, Candidate(FAST, "fast"))
    assert good.verdict == "pass", good.reasons


MULTI_AUTOTUNE = (
    (CORPUS / "add_relu" / "pass_autotune_one_config.py")
    .read_text()
    .replace("# expect: pass\n", "")
)


def test_multi_config_autotune_passes_on_gpu(verifier):
    src = MULTI_AUTOTUNE.replace(
        'configs=[triton.Config({"BLOCK": 1024})]',
        'configs=[triton.Config({"BLOCK": 1024}), triton.Config({"BLOCK": 256})]',
    )
    assert src != MULTI_AUTOTUNE
    task = Task.from_file(CORPUS / "add_relu" / "task.py")
    r = verifier.verify(task, Candidate(src, "autotune2"))
    assert r.verdict == "pass", r.reasons

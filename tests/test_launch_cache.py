"""Cheaper launches for kept kernels (issue 17): launch_cache.py's block and launches.py's
transform. On the CPU: the block's key is checked against Triton's own specialisation, its
cache decisions against a recording stand-in for Triton's launch, the transform and the
lint's recognition of the block, and the CPU verifier on a kernel with its launches
cached. The real launches are checked in tests/gpu/test_gpu_launch_cache.py."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch
import triton.language as tl
from triton.runtime.jit import JITFunction

from autotriton_jupyter import launch_cache, launches
from autotriton_jupyter.task import Candidate, Task
from autotriton_jupyter.verify import static

ROOT = Path(__file__).resolve().parents[1]
PASS_MASKED = (ROOT / "examples/candidates/add_relu/pass_masked.py").read_text()


def many_args(x_ptr, y_ptr, n, f, flag, B: tl.constexpr, C: tl.constexpr = 4):
    pass


def three_args(x_ptr, n, B: tl.constexpr):
    pass


@pytest.fixture
def one_device(monkeypatch):
    """The key reads Triton's current device; this machine has none."""
    monkeypatch.setattr(launch_cache._AutotritonCachedLaunch, "current_device", lambda self: 0)


def _triton_key(kernel: JITFunction, args: tuple, kwargs: dict) -> str | None:
    """What Triton's own launch keys its compiled kernels on, built as Triton builds it
    (its binder, for a CUDA target); None where Triton refuses the arguments."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend
    from triton.runtime.jit import create_function_from_signature

    binder = create_function_from_signature(kernel.signature, kernel.params, make_backend(GPUTarget("cuda", 90, 32)))
    try:
        _bound, specialization, options = binder(*args, **kwargs)
    except Exception:
        return None
    return repr(specialization) + repr(sorted(options.items()))


INTS = [0, 1, 2, 15, 16, 17, 32, 48, -1, -16, -17, 2**31 - 16, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1,
        2**40, 2**63 - 1, 2**63, 2**64 - 16]
DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.uint8]


def _random_args(rng: random.Random, pool: dict) -> tuple[tuple, dict]:
    def tensor():
        dtype = rng.choice(DTYPES)
        base = pool.setdefault(dtype, torch.zeros(64, dtype=dtype))
        return base[rng.choice([0, 1, 2, 3, 4, 8, 16]):]

    def scalar():
        return rng.choice([rng.choice(INTS), rng.choice([0.5, 1.0, -3.0, 16.0]), True, False, None])

    args = (tensor(), tensor(), rng.choice(INTS), scalar(), scalar(), rng.choice([1, 16, 32, 64, True, 2.0]))
    kwargs = {}
    if rng.random() < 0.5:
        kwargs["C"] = rng.choice([4, 8, 1])
    if rng.random() < 0.3:
        kwargs["num_warps"] = rng.choice([2, 4, 8])
    if rng.random() < 0.2:
        kwargs["num_stages"] = rng.choice([2, 3])
    return args, kwargs


def test_the_key_holds_everything_triton_specialises_on(one_device):
    """Argument sets that the block would launch through one compiled kernel always have
    the same specialisation in Triton's own eyes (3,000 random sets of tensors of six
    dtypes and alignments, ints on every boundary Triton cares about, floats, bools,
    None, constexprs and launch options)."""
    kernel = JITFunction(many_args)
    wrapped = launch_cache._AutotritonCachedLaunch(kernel)
    rng, pool = random.Random(17), {}
    seen: dict[tuple, str] = {}
    keyed = 0
    for _ in range(3000):
        args, kwargs = _random_args(rng, pool)
        theirs = _triton_key(kernel, args, kwargs)
        values = wrapped.bind(args, kwargs)
        ours = None if values is None else wrapped.key(values, kwargs)
        if ours is None or theirs is None:
            continue
        keyed += 1
        assert seen.setdefault(ours, theirs) == theirs, (args, kwargs)
    assert keyed > 2000 and len(seen) > 300  # most sets were keyed, and the keys told them apart


def test_arguments_of_other_kinds_are_left_to_triton(one_device):
    wrapped = launch_cache._AutotritonCachedLaunch(JITFunction(three_args))
    x = torch.zeros(4)
    assert wrapped.key((x, (1, 2), 16), {}) is None  # a tuple
    assert wrapped.key((x, 16, [16]), {}) is None  # a constexpr that is not a plain value
    assert wrapped.key((x, 16, 16), {"num_warps": [4]}) is None
    assert wrapped.bind((x,), {}) is None  # too few: Triton says what is missing
    assert wrapped.bind((x, 16), {"n": 16, "B": 16}) is None  # n twice: Triton says so
    assert wrapped.bind((x, 1, 2, 3), {}) is None
    assert wrapped.key((x, 16, 16), {}) != wrapped.key((x, 16, 32), {})


class _Recorder:
    """Stands in for Triton's compile-and-launch (`JITFunction.run`) and for the compiled
    kernel it returns, recording which path each launch took."""

    def __init__(self, kernel: JITFunction) -> None:
        self.slow: list[tuple] = []
        self.fast: list[tuple] = []
        recorder = self

        class Compiled:
            def __init__(self, key):
                self.key = key

            def __getitem__(self, grid):
                return lambda *values: recorder.fast.append((self.key, grid, values))

        def run(*args, grid, warmup, **kwargs):
            recorder.slow.append((grid, args, kwargs))
            return Compiled(len(recorder.slow))

        kernel.run = run


def test_a_specialisation_seen_before_is_launched_directly_and_a_new_one_goes_through_triton(one_device):
    kernel = JITFunction(three_args)
    rec = _Recorder(kernel)
    k = launch_cache._autotriton_cached(kernel)
    assert isinstance(k, launch_cache._AutotritonCachedLaunch)
    x = torch.zeros(64)
    k[(4,)](x, 64, B=16)
    k[(4,)](x, 64, B=16)
    k[lambda meta: (meta["n"] // meta["B"], 2)](x, 32, B=16)  # same specialisation, grid from the values
    assert len(rec.slow) == 1
    assert rec.fast == [(1, (4, 1, 1), (x, 64, 16)), (1, (2, 2, 1), (x, 32, 16))]
    k[(4,)](x[1:], 63, B=16)  # unaligned, and n no longer a multiple of 16
    k[(4,)](x, 64, B=32)  # another constexpr
    k[(4,)](x, 64, B=16, num_warps=8)  # another option
    k[(4,)](x, 1, B=16)  # n == 1: Triton makes it a constant
    assert len(rec.slow) == 5 and len(rec.fast) == 2
    k[(4,)](x, 64, B=32)
    assert rec.fast[-1][0] == 3  # the kernel compiled for B=32, not the first one


def test_hooks_a_changed_global_and_other_tritons_keep_tritons_own_path(one_device):
    kernel = JITFunction(three_args)
    rec = _Recorder(kernel)
    k = launch_cache._autotriton_cached(kernel)
    x = torch.zeros(64)
    k[(1,)](x, 64, B=16)
    scope = {"SCALE": 2}
    kernel.used_global_vals = {("SCALE", id(scope)): (2, scope)}
    k[(1,)](x, 64, B=16)
    assert len(rec.fast) == 1  # unchanged: launched directly
    scope["SCALE"] = 3
    k[(1,)](x, 64, B=16)
    assert len(rec.slow) == 2  # Triton's path, which raises on a changed global
    kernel.used_global_vals = {}
    kernel.pre_run_hooks.append(lambda *a, **kw: None)
    k[(1,)](x, 64, B=16)
    assert len(rec.slow) == 3 and len(rec.fast) == 1
    assert k.fn is kernel.fn  # everything else is the kernel's own

    def plain(x):
        return x

    assert launch_cache._autotriton_cached(plain) is plain  # the CPU interpreter's kernels, say


KERNEL = '''import torch
import triton
import triton.language as tl


@triton.jit
def _scale(x):
    return x * 2


@triton.jit
def double_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, _scale(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)


@triton.autotune(configs=[triton.Config({"BLOCK": 128})], key=["n"])
@triton.jit
def tuned_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        double_kernel[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256)
        tuned_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](y, y, n)
        return y
'''


def test_only_plain_kernels_that_are_only_launched_are_wrapped():
    assert launches.wrappable(KERNEL) == ["double_kernel"]  # not the helper, not the autotuned one
    passed = KERNEL + "\nPICK = double_kernel\n"
    assert launches.wrappable(passed) == []  # named elsewhere than in its launches
    rebound = KERNEL + "\ndouble_kernel = double_kernel\n"
    assert launches.wrappable(rebound) == []
    assert launches.cached("import torch\n") is None


def test_the_cached_form_appends_the_block_as_it_is_and_wraps_each_kernel():
    out, names = launches.cached(KERNEL)
    assert names == ["double_kernel"]
    assert out.startswith(KERNEL.rstrip() + "\n")
    assert launch_cache.__doc__ not in out
    block_text = Path(launch_cache.__file__).read_text()
    assert launches.block() in block_text and out.endswith("double_kernel = _autotriton_cached(double_kernel)\n"
                                                           f"{launches.END}\n")
    compile(out, "<cached>", "exec")
    assert launches.cached(out) is None  # never twice
    head, wrapped = launches.split(out)
    assert head.rstrip() == KERNEL.rstrip() and wrapped == ["double_kernel"]


def test_the_lint_takes_the_block_as_ours_only_when_it_is_exactly_ours():
    out, _ = launches.cached(PASS_MASKED)
    got = static.lint(out)
    assert got.problems == [] and got.kernels == static.lint(PASS_MASKED).kernels
    assert any("cached-launch block, wrapping add_relu_kernel" in n for n in got.notes)

    def refused(source: str) -> str:
        problems = static.lint(source).problems
        assert [p.check for p in problems] == ["cached_launch"], problems
        assert "Delete the block" in problems[0].message or "rename it" in problems[0].message
        return problems[0].message.lower()

    assert "differs from autotriton's" in refused(out.replace("return compiled\n", "return None\n", 1))
    line = out.split("\n").index("    _EXACT = (int, float, bool, str, type(None))") + 1
    assert f"line {line} of the cached-launch block" in refused(
        out.replace("    _EXACT = (int, float, bool, str, type(None))", "    _EXACT = (int, float)")
    )
    assert "goes on after" in refused(out + "print('after')\n")
    assert "closing line" in refused(out.replace(launches.END, "# the end"))
    assert "does not know (v9)" in refused(out.replace("cached launches (v1)", "cached launches (v9)"))
    renamed = out.replace("def add_relu_kernel(", "def relu_kernel(").replace(
        "add_relu_kernel[", "relu_kernel["
    )
    assert "no kernel named `add_relu_kernel` is defined above it" in refused(renamed)
    other = out.replace("add_relu_kernel = _autotriton_cached(add_relu_kernel)", "torch = _autotriton_cached(torch)")
    assert "no kernel named `torch`" in refused(other)
    passed_around = out.replace("\n\n\n# >>> autotriton", "\nPICK = add_relu_kernel\n\n\n# >>> autotriton", 1)
    assert "`add_relu_kernel` is not a kernel autotriton would wrap" in refused(passed_around)
    # The block's names anywhere else: refused, whether it is there or not.
    sneaky = PASS_MASKED.replace("import torch\n", "import torch\n_autotriton_flag = 1\n", 1)
    assert "_autotriton_flag starts like the names" in refused(sneaky)
    above = out.replace("import torch\n", "import torch\n_autotriton_driver = None\n", 1)
    assert "_autotriton_driver starts like" in refused(above)
    # In any case: a class of the block's name above it would be taken for the block's.
    planted = out.replace("import torch\n", "import torch\n\n\nclass _AutotritonCachedLaunch:\n    pass\n", 1)
    assert "_autotritoncachedlaunch starts like" in refused(planted)
    # Built-ins the block reads, rebound above it, would run the candidate's code in it.
    rebound = out.replace("import torch\n", "import torch\n\n\ndef zip(*args):\n    return ()\n", 1)
    assert "rebinds `zip`, a built-in the block uses" in refused(rebound)
    assert launches.cached(PASS_MASKED + "\n\nsorted = None\n") is None  # so none is made
    # Only names that start so: a kernel or a comment that merely contains it is fine.
    innocent = PASS_MASKED.replace("add_relu_kernel", "add_relu_autotriton_kernel") + "# _autotriton_cached\n"
    assert static.lint(innocent).problems == [] and launches.cached(innocent) is not None


def test_every_version_of_the_block_is_kept_and_the_current_one_is_pinned():
    """A kept kernel keeps the block of the autotriton that wrote it: editing the block
    must add a version to launches.KNOWN (never change or remove one)."""
    first = launches.block().split("\n", 1)[0]
    version = first[len(launches.BEGIN) :].strip(" ()")
    assert launches.KNOWN[version] == launches.digest(launches.block()), (
        "launch_cache.py's block changed: give it a new version in its first line and add "
        "its digest to launches.KNOWN, keeping the old ones"
    )
    assert version == max(launches.KNOWN, key=lambda v: int(v[1:]))


def test_the_block_reads_the_same_after_a_formatter():
    """Kept code gets formatted by its owner's tools: the block is already as ruff (and
    black, at their default 88 columns) would write it."""
    import shutil
    import subprocess
    import sys

    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if not Path(ruff).exists():
        pytest.skip("ruff is not installed here")
    got = subprocess.run(
        [ruff, "format", "--line-length", "88", "--diff", "-"],
        input=launches.block() + "k = _autotriton_cached(k)\n" + launches.END + "\n",
        capture_output=True, text=True, check=False,
    )
    assert got.returncode == 0, got.stdout


def test_the_cpu_verifier_passes_a_kernel_with_its_launches_cached(tmp_path):
    from autotriton_jupyter.verify import Verifier, VerifyOptions

    out, _ = launches.cached(PASS_MASKED)
    task = Task.from_file(ROOT / "examples/tasks/add_relu.py")
    with Verifier(VerifyOptions(device="cpu", trials=1, seed=3, timing=False)) as v:
        report = v.verify(task, Candidate(out, "cached"))
    assert report.verdict == "pass", report.failed()


def test_fine_tuning_learns_the_kernel_not_the_block(tmp_path, monkeypatch):
    from autotriton_jupyter.store import Store
    from autotriton_jupyter.training.dataset import dataset_from_library

    monkeypatch.setenv("AUTOTRITON_LIBRARY", str(tmp_path / "lib.sqlite"))
    out, _ = launches.cached(PASS_MASKED)
    with Store() as s:
        t = s.add_task("add_relu", (ROOT / "examples/tasks/add_relu.py").read_text())
        cid = s.add_candidate(
            t, round=0, sample=0, model="m", prompt="p", completion="```python\n...```", code=out, report=None
        )
        s.accept("add_relu_cached", t, out, candidate_id=cid, edited=True)
    [example] = dataset_from_library()
    assert launches.BEGIN not in example.target and "_autotriton" not in example.target
    assert PASS_MASKED.strip() in example.target


def test_the_blocks_class_is_ours_and_skips_the_judges_self_check_but_no_other_does():
    import ast

    from autotriton_jupyter.verify import probes

    out, _ = launches.cached(PASS_MASKED)
    line = out[: launches.start(out)].count("\n") + 1
    guarded = ast.unparse(probes.guard_source(ast.parse(out), skip={(launches.OWN_CLASS, line)}))
    block_at = guarded.index("class _AutotritonCachedLaunch")
    assert probes.GUARD_NAME in guarded[:block_at]  # ModelNew's methods still check
    assert probes.GUARD_NAME not in guarded[block_at:]
    above = "class _AutotritonCachedLaunch:\n    def f(self):\n        pass\n"
    assert probes.GUARD_NAME in ast.unparse(probes.guard_source(ast.parse(above), skip={(launches.OWN_CLASS, 5)}))
    nested = "class Outer:\n    class _AutotritonCachedLaunch:\n        def f(self):\n            pass\n"
    assert probes.GUARD_NAME in ast.unparse(probes.guard_source(ast.parse(nested), skip={(launches.OWN_CLASS, 0)}))

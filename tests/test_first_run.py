"""A candidate started on the reference's first input set while the reference draws the
others (verify/firstrun.py): it does run meanwhile, it gets the verdict, checks and runs it
gets when it starts after the reference, and a reference that fails leaves no worker behind."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest

from autotriton_jupyter.task import Candidate, Task, TaskError
from autotriton_jupyter.verify import Verifier, VerifyOptions, reference
from autotriton_jupyter.verify.firstrun import FirstRun
from autotriton_jupyter.verify.reference import ReferencePrep

OPTIONS = dict(device="cpu", timeout=120, timing=False, parallel=1)

# Made from the corpus's honest add_relu kernel: a candidate whose ModelNew cannot be built,
# and one whose kernel fails at its first launch (a block that is not a power of two).
HONEST = (Path(__file__).parent / "corpus" / "add_relu" / "pass_masked.py").read_text()
INIT_RAISES = HONEST.replace(
    "super().__init__()", 'super().__init__()\n        raise ValueError("no model today")'
)
LAUNCH_RAISES = HONEST.replace("BLOCK=1024)", "BLOCK=1000)")
assert INIT_RAISES != HONEST and LAUNCH_RAISES != HONEST


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The candidates whose load and first part ran on FirstRun's thread."""
    began: list[str] = []
    real = Verifier._first_part

    def first_part(self, ref, candidate, r, run, judging):  # type: ignore[no-untyped-def]
        got = real(self, ref, candidate, r, run, judging)
        began.append(candidate.name)
        return got

    monkeypatch.setattr(Verifier, "_first_part", first_part)
    return began


def _summary(r) -> tuple:  # type: ignore[no-untyped-def]
    runs = [(d["set"], d["kind"], d["ok"]) for d in (r.correctness or {}).get("detail", [])]
    return r.verdict, sorted({c.name for c in r.failed()}), runs


def test_the_first_part_runs_while_the_reference_draws_the_other_sets(corpus, monkeypatch):
    """The reference waits, after its first set, until the candidate has run on that set:
    were the first part not run meanwhile, this verify could not finish."""
    began = _spy(monkeypatch)
    ran = threading.Event()
    real_part = Verifier._first_part

    def first_part(self, *args):  # type: ignore[no-untyped-def]
        try:
            return real_part(self, *args)
        finally:
            ran.set()

    monkeypatch.setattr(Verifier, "_first_part", first_part)
    real_trials = ReferencePrep._trials

    def trials(self, w, specs, ahead, then):  # type: ignore[no-untyped-def]
        def then_wait(done):  # type: ignore[no-untyped-def]
            then(done)
            assert ran.wait(90), "the candidate's first part did not run while the reference waited"

        return real_trials(self, w, specs, ahead, then_wait)

    monkeypatch.setattr(ReferencePrep, "_trials", trials)
    task = Task.from_file(corpus / "add_relu" / "task.py")
    events: list[str] = []
    with Verifier(VerifyOptions(seed=3, **OPTIONS), on_event=events.append) as v:
        r = v.verify(task, Candidate.from_file(corpus / "add_relu" / "pass_masked.py"))
    assert r.verdict == "pass", r.reasons
    assert began == ["pass_masked"]
    # its progress says which part ran first, before the parts counted once the plan is known
    first = [i for i, e in enumerate(events) if "(part 1, while the reference makes" in e]
    later = [i for i, e in enumerate(events) if re.search(r"pass_masked: .*\(\d+/\d+\)$", e)]
    assert first and all(first[0] < i for i in later), events
    assert len(r.correctness["detail"]) == len(v._refs[next(iter(v._refs))].sets) + 3  # + repeat, refill, late


@pytest.mark.parametrize(
    "source",
    [
        "add_relu/pass_masked.py",
        "add_relu/fail_sub.py",
        "add_relu/cheat08_call_counting.py",
        "add_relu/cheat07_cache_by_pointer.py",
        "add_relu/cheat06_return_input.py",
        "crash/cheat_segfault.py",
        INIT_RAISES,
        LAUNCH_RAISES,
    ],
)
def test_started_ahead_or_after_the_reference_the_report_is_the_same(corpus, monkeypatch, tmp_path, source):
    began = _spy(monkeypatch)
    if source.endswith(".py"):
        cand = Candidate.from_file(corpus / source)
    else:
        path = tmp_path / "cand.py"
        path.write_text(source)
        cand = Candidate.from_file(path)
    task = Task.from_file(corpus / "add_relu" / "task.py")
    with Verifier(VerifyOptions(seed=5, **OPTIONS)) as v:
        v.prepare(task)  # the reference first: the candidate starts after it
        after = v.verify(task, cand)
        assert began == []
        ahead = v.view(VerifyOptions(seed=6, **OPTIONS)).verify(task, cand)  # a new reference
        assert began == [cand.name]
    assert _summary(ahead) == _summary(after), (ahead.reasons, after.reasons)
    # Other seeds, other values: the same messages but for their figures.
    shape = lambda r: [re.sub(r"[-+]?[0-9][0-9.e+-]*", "#", c.message) for c in r.failed()]  # noqa: E731
    assert shape(ahead) == shape(after)


def test_a_reference_that_fails_after_its_first_set_leaves_no_candidate_worker(tmp_path, corpus, monkeypatch):
    task_path = tmp_path / "task.py"
    task_path.write_text(
        "import torch\nimport torch.nn as nn\n\nDRAWN = [0]\n\n\n"
        "class Model(nn.Module):\n    def forward(self, x, y):\n        return torch.relu(x + y)\n\n\n"
        "def get_inputs():\n    DRAWN[0] += 1\n    if DRAWN[0] > 1:\n"
        "        raise RuntimeError('one input set only')\n"
        "    return [torch.randn(64), torch.randn(64)]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    held: list = []
    got_one = threading.Event()
    real_hold = FirstRun.hold

    def hold(self, w):  # type: ignore[no-untyped-def]
        held.append(w)
        got_one.set()
        return real_hold(self, w)

    monkeypatch.setattr(FirstRun, "hold", hold)
    with Verifier(VerifyOptions(seed=2, **OPTIONS)) as v:
        with pytest.raises(TaskError, match="one input set only"):
            v.verify(Task.from_file(task_path), Candidate.from_file(corpus / "add_relu" / "pass_masked.py"))
        assert got_one.wait(60), "the candidate's worker was never taken"
        deadline = time.monotonic() + 30
        while held[0].proc.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not held[0].proc.is_alive(), "the candidate's worker outlived its reference"
        # The verifier goes on: another task, another candidate.
        ok = v.verify(Task.from_file(corpus / "add_relu" / "task.py"), Candidate.from_file(corpus / "add_relu" / "pass_masked.py"))
    assert ok.verdict == "pass", ok.reasons


def test_a_reference_that_crashes_says_on_which_input_sets(tmp_path, corpus):
    """Its second forward ends the process: run again without the candidate, it does so
    again, and the task's error names the sets that message carried."""
    task_path = tmp_path / "task.py"
    task_path.write_text(
        "import ctypes\nimport torch\nimport torch.nn as nn\n\nCALLS = [0]\n\n\n"
        "class Model(nn.Module):\n    def forward(self, x, y):\n        CALLS[0] += 1\n"
        "        if CALLS[0] > 1:\n            ctypes.string_at(0)\n"
        "        return torch.relu(x + y)\n\n\n"
        "def get_inputs():\n    return [torch.randn(64), torch.randn(64)]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    with Verifier(VerifyOptions(seed=2, **OPTIONS)) as v:
        with pytest.raises(TaskError) as e:
            v.verify(Task.from_file(task_path), Candidate.from_file(corpus / "add_relu" / "pass_masked.py"))
    assert re.search(
        r"cannot be run: somewhere in input sets 'fresh-2' to '[a-z0-9-]+', it crashed the "
        r"worker process \(SIGSEGV, segmentation fault\)\. Every call of the task's Model must work",
        str(e.value),
    ), str(e.value)
    assert "tl.load" not in str(e.value)  # the advice to a candidate's author is left out


def test_a_candidate_the_signature_fails_is_not_started_beside_the_reference(corpus, monkeypatch):
    began = _spy(monkeypatch)
    task = Task.from_file(corpus / "add_relu" / "task.py")
    with Verifier(VerifyOptions(seed=7, **OPTIONS)) as v:
        r = v.verify(task, Candidate.from_file(corpus / "bad" / "cand_signature.py"))
        assert v._refs  # judged after the reference (a broken one is the task's error)
    assert r.verdict == "fail" and "signature" in {c.name for c in r.failed()}, r.reasons
    assert began == []



def test_a_reference_that_fails_beside_a_candidate_runs_again_alone(corpus, monkeypatch):
    """A candidate can starve the reference running beside it (the host's CPUs, the GPU's
    memory): the reference is run again without it, and the candidate judged after it."""
    from autotriton_jupyter.verify.sandbox import WorkerFailure

    held: list = []
    real_hold = FirstRun.hold

    def hold(self, w):  # type: ignore[no-untyped-def]
        held.append(w)
        return real_hold(self, w)

    monkeypatch.setattr(FirstRun, "hold", hold)
    real_trials = ReferencePrep._trials
    tries: list[bool] = []

    def trials(self, w, specs, ahead, then):  # type: ignore[no-untyped-def]
        tries.append(True)
        if len(tries) > 1:
            return real_trials(self, w, specs, ahead, then)

        def then_time_out(done):  # type: ignore[no-untyped-def]
            then(done)
            deadline = time.monotonic() + 60
            while not held and time.monotonic() < deadline:  # the candidate has its worker
                time.sleep(0.02)
            raise WorkerFailure("timeout", "The reference took longer than 120 s", op="trials")

        return real_trials(self, w, specs, ahead, then_time_out)

    monkeypatch.setattr(ReferencePrep, "_trials", trials)
    events: list[str] = []
    task = Task.from_file(corpus / "add_relu" / "task.py")
    with Verifier(VerifyOptions(seed=8, **OPTIONS), on_event=events.append) as v:
        r = v.verify(task, Candidate.from_file(corpus / "add_relu" / "pass_masked.py"))
    assert r.verdict == "pass", r.reasons
    assert len(tries) == 2
    assert (
        "reference: it failed while the candidate ran beside it: The reference took longer than "
        "120 s; running the reference again without the candidate"
    ) in events, events
    assert held and not held[0].proc.is_alive()  # the first candidate worker was ended
    assert len(held) == 1  # the candidate was then judged in a worker of the judge's own


INIT_TASK = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n, scale):
        super().__init__()
        self.n = n
        self.scale = scale

    def forward(self, x):
        return x[:, : self.n] * self.scale


def get_inputs():
    return [torch.randn(8, 32)]


def get_init_inputs():
    return [16, 0.5]
'''

INIT_CANDIDATE = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def head_kernel(x_ptr, out_ptr, n, stride, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    v = tl.load(x_ptr + row * stride + cols, mask=mask)
    tl.store(out_ptr + row * n + cols, v * {scale}, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, n, scale):
        super().__init__()
        self.n = n
        self.scale = scale

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape[0], self.n, device=x.device, dtype=x.dtype)
        head_kernel[(x.shape[0],)](x, out, self.n, x.stride(0), self.scale, BLOCK=triton.next_power_of_2(self.n))
        return out
'''


@pytest.mark.parametrize("scale,verdict", [("scale", "pass"), ("0.5", "conditional")])
def test_a_candidate_builds_only_the_init_variants_its_reference_kept(tmp_path, monkeypatch, scale, verdict):
    """init-shifted (n + 1) changes the reference's output shape and is left out; init-scaled
    is kept. Ahead of the reference or after it, the candidate's worker builds a model for
    the kept one only, and a kernel that hard-codes the scale is conditional either way."""
    began = _spy(monkeypatch)
    loads: list = []
    real_load = Verifier._load

    def load(self, ref, candidate, w):  # type: ignore[no-untyped-def]
        loads.append(list(ref.init_variants))
        return real_load(self, ref, candidate, w)

    monkeypatch.setattr(Verifier, "_load", load)
    (tmp_path / "task.py").write_text(INIT_TASK)
    (tmp_path / "cand.py").write_text(INIT_CANDIDATE.format(scale=scale))
    task, cand = Task.from_file(tmp_path / "task.py"), Candidate.from_file(tmp_path / "cand.py")
    with Verifier(VerifyOptions(seed=9, **OPTIONS)) as v:
        ref = v.prepare(task)
        after = v.verify(task, cand)
        ahead = v.view(VerifyOptions(seed=10, **OPTIONS)).verify(task, cand)
    assert began == ["cand"]
    assert loads == [[[16, 0.75]], [[16, 0.75]]]
    assert [(s["label"], s.get("model")) for s in ref.sets if "init" in s] == [("init-scaled", 1)]
    assert (
        "the init-shifted variant (both models built again with get_init_inputs()'s integers one "
        "larger) was left out: its outputs have other shapes (as when those integers are sizes)"
    ) in ref.notes, ref.notes
    assert after.verdict == ahead.verdict == verdict, (after.reasons, ahead.reasons)
    assert _summary(ahead) == _summary(after)


@pytest.mark.parametrize(
    "label,why,hint",
    [
        ("init-shifted", "its forward raised RuntimeError: mat1 and mat2 shapes cannot be multiplied", True),
        ("init-shifted", "its parameters have other names or shapes", True),
        ("init-shifted", "building it raised ValueError: in_channels must be divisible by groups", False),
        ("init-shifted", "its forward raised OutOfMemoryError: CUDA out of memory", False),
        ("init-scaled", "its forward raised RuntimeError: shapes cannot be multiplied", False),
    ],
)
def test_an_init_variant_left_out_says_why_and_names_sizes_only_where_they_may_be_why(label, why, hint):
    note = reference._left_out({"label": label, "skipped": why}, {"init": [1]}, {})
    assert note is not None and note.endswith(why + (" (as when those integers are sizes)" if hint else ""))
    assert "cannot take" not in note


def test_on_a_gpu_the_first_set_goes_in_a_part_of_its_own(monkeypatch):
    """The first set is sent on its own, the rest of its message next (a candidate wrong
    on the first set is stopped there: test_a_candidate_wrong_on_its_first_set_gets_no_other_run)."""
    import torch

    from autotriton_jupyter.verify import judge

    sets = [
        {"label": label, "inputs": [torch.zeros(100)], "outputs": torch.zeros(100)}
        for label in ["fresh-1", "fresh-2", "fresh-3", *judge.VARIANTS]
    ]
    ref = judge.Reference(None, None, 0, [], {}, sets, own_shape=list(range(len(sets))))  # type: ignore[arg-type]
    monkeypatch.setattr(judge, "PART_BYTES", 4 * 800)  # four sets' inputs and outputs a message
    plan = judge._plan(ref)
    parts = judge._plan_parts(ref, plan, "cuda")
    assert parts[:3] == [[0], [1, 2, 3], [4, 5, 6, 7]] and parts[-1] == [len(plan) - 1]
    assert sorted(i for p in parts for i in p) == list(range(len(plan)))
    assert judge._plan_parts(ref, plan, "cpu") == [[i] for i in range(len(plan))]


@pytest.mark.parametrize("name,parts", [("fail_wrong_axis", [0]), ("pass_rowwise", [0, 1, 2])])
def test_a_candidate_wrong_on_its_first_set_gets_no_other_run(corpus, monkeypatch, name, parts):
    """Grouped as on a GPU (every run but the late calls in one message, the first set on
    its own): a candidate wrong on the first set is stopped before the second part, and
    gets its verdict from that set; a right one runs every part."""
    from autotriton_jupyter.verify import judge

    grouped = judge._plan_parts
    monkeypatch.setattr(judge, "_plan_parts", lambda ref, plan, device: grouped(ref, plan, "cuda"))
    monkeypatch.setattr(judge, "PART_BYTES", 1 << 40)
    ran: list[int] = []
    real = Verifier._run_part

    def run_part(self, ref, w, plan, r, part, number, *rest):  # type: ignore[no-untyped-def]
        ran.append(number)
        return real(self, ref, w, plan, r, part, number, *rest)

    monkeypatch.setattr(Verifier, "_run_part", run_part)
    began = _spy(monkeypatch)
    task = Task.from_file(corpus / "softmax" / "task.py")
    with Verifier(VerifyOptions(**OPTIONS, seed=4)) as v:
        r = v.verify(task, Candidate.from_file(corpus / "softmax" / f"{name}.py"))
    assert sorted(set(ran) | ({0} if began else set())) == parts, (ran, began)
    verdict, failed, runs = _summary(r)
    if name.startswith("fail"):
        assert verdict == "fail" and "correctness" in failed
        assert {s for s, _, ok in runs if not ok} == {"fresh-1"}, runs
    else:
        assert verdict == "pass", r.reasons


def test_a_set_left_out_for_memory_beside_a_candidate_is_made_again_without_it(corpus, monkeypatch):
    """A judge-made set the reference could not make for want of memory, while a candidate
    ran beside it, is no set it cannot take: the reference runs again, and keeps it."""
    real_trials = ReferencePrep._trials
    tries: list[bool] = []

    def trials(self, w, specs, ahead, then):  # type: ignore[no-untyped-def]
        tries.append(True)
        got = real_trials(self, w, specs, ahead, then)
        if len(tries) == 1:
            got["sets"] = [
                {"label": s["label"], "skipped": "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"}
                if s["label"] == "signed" else s
                for s in got["sets"]
            ]
        return got

    monkeypatch.setattr(ReferencePrep, "_trials", trials)
    events: list[str] = []
    task = Task.from_file(corpus / "add_relu" / "task.py")
    with Verifier(VerifyOptions(seed=11, **OPTIONS), on_event=events.append) as v:
        r = v.verify(task, Candidate.from_file(corpus / "add_relu" / "pass_masked.py"))
        labels = [s["label"] for s in v._refs[next(iter(v._refs))].sets]
    assert len(tries) == 2 and "signed" in labels
    assert any("running the reference again without the candidate" in e for e in events), events
    assert r.verdict == "pass", r.reasons


def test_a_candidate_out_of_memory_beside_its_reference_is_judged_again_alone(corpus, monkeypatch):
    real_part = Verifier._first_part

    def first_part(self, *args):  # type: ignore[no-untyped-def]
        got = real_part(self, *args)
        # As a worker reports a forward that raised: a run with an error.
        got["part"]["runs"] = [
            {"set": 0, "error": "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "traceback": ""}
        ]
        return got

    monkeypatch.setattr(Verifier, "_first_part", first_part)
    events: list[str] = []
    task = Task.from_file(corpus / "add_relu" / "task.py")
    with Verifier(VerifyOptions(seed=12, **OPTIONS), on_event=events.append) as v:
        r = v.verify(task, Candidate.from_file(corpus / "add_relu" / "pass_masked.py"))
    assert any("out of memory beside its reference; again alone" in e for e in events), events
    assert r.verdict == "pass", r.reasons


def test_an_init_variant_whose_parameters_change_shape_is_left_out_with_its_reason(tmp_path):
    """Model(n) builds nn.Linear(n, n): built again with n + 1, the reference's parameters
    do not load into it (torch's own rule), which the note says, naming sizes."""
    (tmp_path / "task.py").write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        "    def __init__(self, n):\n        super().__init__()\n        self.lin = nn.Linear(n, n)\n\n"
        "    def forward(self, x):\n        return self.lin(x)\n\n\n"
        "def get_inputs():\n    return [torch.randn(4, 16)]\n\n\n"
        "def get_init_inputs():\n    return [16]\n"
    )
    with Verifier(VerifyOptions(seed=3, **OPTIONS)) as v:
        ref = v.prepare(Task.from_file(tmp_path / "task.py"))
    assert (
        "the init-shifted variant (both models built again with get_init_inputs()'s integers one "
        "larger) was left out: its parameters have other names or shapes (as when those integers "
        "are sizes)"
    ) in ref.notes, ref.notes

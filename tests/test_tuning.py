"""The tuning pass (tuning.py): which launch parameters it finds, how it rewrites them, and
that only a variant the verifier passed and timed can win."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from autotriton_jupyter import tuning
from autotriton_jupyter.task import Candidate, Task

ROOT = Path(__file__).resolve().parent.parent
ROWWISE = (ROOT / "examples/candidates/softmax/rowwise.py").read_text()
MASKED = ROOT / "examples/candidates/add_relu/pass_masked.py"

NAMED = '''
import torch, triton
import triton.language as tl

BLOCK_SIZE = 1024


@triton.jit
def k(x_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    pass


@triton.jit
def other(x_ptr, n, BLOCK: tl.constexpr):
    pass


class ModelNew(torch.nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n = x.numel()
        grid = (triton.cdiv(n, BLOCK_SIZE),)
        k[grid](x, out, n, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
        k[grid](
            x,
            out,
            n,  # the same number again: one knob
            BLOCK_SIZE=BLOCK_SIZE,
        )
        other[(1,)](x, n, BLOCK=triton.next_power_of_2(n))
        return out
'''

AUTOTUNED = '''
import torch, triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=4)], key=["n"])
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    pass


class ModelNew(torch.nn.Module):
    def forward(self, x):
        k[(1,)](x, x.numel())
        return x
'''


def test_launch_parameters_found_and_what_is_left_alone():
    found, notes = tuning.knobs(NAMED)
    labels = sorted(k.label for k in found)
    # num_warps given at the first launch, missing at the second; num_stages missing at all
    # three; BLOCK_SIZE once (the module's one number); BLOCK computed at run time: none.
    assert [k.name for k in found].count("BLOCK_SIZE") == 1
    assert not any(k.name == "BLOCK" for k in found)
    assert [k.name for k in found].count("num_warps") == 3
    assert "BLOCK_SIZE = 1024 (line 5)" in labels
    warps = [k for k in found if k.name == "num_warps" and k.value == 4]
    assert len(warps) == 1 and 8 in warps[0].choices
    assert not notes
    assert tuning.knobs(AUTOTUNED) == ([], ["k is autotuned: its configs choose its launch parameters"])


def test_each_variant_changes_one_number_and_still_parses():
    vs = tuning.variants(NAMED, limit=40)
    assert vs and len({v.source for v in vs}) == len(vs)
    for v in vs:
        ast.parse(v.source)
        assert len(v.changes) == 1
    block = [v for v in vs if "BLOCK_SIZE = 1024 (line 5)" in v.changes]
    assert {v.changes["BLOCK_SIZE = 1024 (line 5)"][1] for v in block} == {512, 2048}
    halved = next(v for v in block if v.changes["BLOCK_SIZE = 1024 (line 5)"][1] == 512)
    assert "BLOCK_SIZE = 512\n" in halved.source and halved.source.count("1024") == 0
    # A keyword added to a call written over several lines, after a trailing comma.
    added = [v for v in vs if any(was is None for was, _ in v.changes.values()) and "line 24" in v.describe()]
    assert added and all("num_warps=" in v.source or "num_stages=" in v.source for v in added)
    # The default is not a variant: num_warps 4 is what Triton uses when none is given.
    assert not any(now == 4 and was is None for v in vs for (label, (was, now)) in v.changes.items() if "num_warps" in label)


def test_a_small_limit_still_tries_each_knob_once():
    vs = tuning.variants(ROWWISE, limit=2)
    assert [next(iter(v.changes)).split(" ")[1] for v in vs] == ["num_warps", "num_stages"]
    assert "num_warps=1" in vs[0].source or "num_warps=1)" in vs[0].source


def _report(verdict: str, ms: float | None, why: str = "", check: str = "correctness") -> SimpleNamespace:
    failed = [SimpleNamespace(name=check, message=why)] if why else []
    return SimpleNamespace(
        verdict=verdict, timing={"candidate_ms": ms} if ms else None, failed=lambda: failed
    )


def test_only_a_verified_timed_variant_wins_and_improving_changes_are_combined():
    cand = Candidate(ROWWISE, "rowwise")
    asked: list[list[str]] = []
    times = {("num_warps", "8"): 0.8, ("num_stages", "2"): 0.9}

    def judge(cands):
        asked.append([c.name for c in cands])
        out = []
        for c in cands:
            changed = set(re.findall(r"(num_\w+) \(line \d+\): default -> (\d+)", c.name))
            if len(changed) > 1:
                out.append(_report("pass", 0.6))  # the combination
            elif changed == {("num_warps", "16")}:
                out.append(_report("fail", None, "Output differs"))  # the fastest, but wrong
            else:
                out.append(_report("pass", times.get(next(iter(changed)), 1.0)))
        return out

    got = tuning.tune(cand, _report("pass", 1.0), judge, limit=12)
    assert len(asked) == 2 and len(asked[1]) == 1  # the singles, then their combination
    combined = asked[1][0]
    assert "num_warps (line 28): default -> 8" in combined and "num_stages (line 28): default -> 2" in combined
    assert got.best is not None and got.best.ms == 0.6
    wrong = [t for t in got.tried if t.verdict == "fail"]
    assert wrong and wrong[0].ms is None and "Output differs" in wrong[0].reason
    d = got.to_dict()
    assert d["best"]["speedup_vs_original"] == pytest.approx(1 / 0.6)
    assert "best:" in got.summary() and "1.67x" in got.summary()


def test_nothing_to_gain_keeps_the_original_and_untimed_candidates_are_not_tuned():
    cand = Candidate(ROWWISE, "rowwise")
    same = tuning.tune(cand, _report("pass", 1.0), lambda cs: [_report("pass", 0.99) for _ in cs])
    assert same.best is None and "the original stays" in same.summary()
    untimed = tuning.tune(cand, _report("pass", None), lambda cs: pytest.fail("nothing to verify"))
    assert "needs timing on a GPU" in untimed.skipped
    on_gpu = SimpleNamespace(verdict="pass", timing=None, device="cuda", failed=lambda: [])
    figureless = tuning.tune(cand, on_gpu, lambda cs: pytest.fail("nothing to verify"))
    assert "no speed figures (its report's notes say why)" in figureless.skipped
    failed = tuning.tune(cand, _report("fail", None), lambda cs: pytest.fail("nothing to verify"))
    assert "only a passing candidate" in failed.skipped
    tuned = tuning.tune(Candidate(AUTOTUNED, "a"), _report("pass", 1.0), lambda cs: [])
    assert "autotuned" in tuned.skipped


def test_variants_are_judged_by_the_real_verifier():
    """On the CPU (Triton's interpreter, no timing): the add_relu kernel's grid is written
    for 1024-element blocks, so halving BLOCK leaves half of the output unwritten, and the
    verifier fails it; doubling it overlaps blocks and stays correct."""
    from autotriton_jupyter.verify import Verifier, VerifyOptions

    source = MASKED.read_text()
    block = [v for v in tuning.variants(source, limit=40) if any("BLOCK" in k for k in v.changes)]
    assert {v.changes[next(iter(v.changes))][1] for v in block} == {512, 2048}
    task = Task.from_file(ROOT / "examples/tasks/add_relu.py")
    cands = [Candidate(v.source, f"v{v.changes[next(iter(v.changes))][1]}") for v in block]
    with Verifier(VerifyOptions(device="cpu", timing=False, trials=1, seed=3)) as verifier:
        reports = dict(zip([c.name for c in cands], verifier.verify_many(task, cands)))
    assert {name: r.verdict for name, r in reports.items()} == {"v512": "fail", "v2048": "pass"}
    assert reports["v512"].failed()[0].name == "correctness"


def test_verify_tune_on_the_cpu_says_it_needs_timing_and_writes_nothing(tmp_path):
    import json
    import subprocess
    import sys

    out = tmp_path / "tuned.py"
    got = subprocess.run(
        [sys.executable, "-m", "autotriton_jupyter", "verify", str(ROOT / "examples/tasks/add_relu.py"),
         str(MASKED), "--tune", "--local", "--json", "--device", "cpu", "--tuned-out", str(out)],
        capture_output=True, text=True, timeout=600, cwd=ROOT, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
    )
    assert got.returncode == 0, got.stderr
    report = json.loads(got.stdout)
    assert report["verdict"] == "pass" and "needs timing on a GPU" in report["tuning"]["skipped"]
    assert not out.exists() and "was not written" in got.stderr


def test_a_variant_caught_cheating_stops_tuning_and_says_so():
    cand = Candidate(ROWWISE, "rowwise")

    def judge(cands):
        return [_report("fail", None, "forward ran PyTorch compute ops while timed: mm", "torch_ops")
                if i == 1 else _report("pass", 0.5) for i, _ in enumerate(cands)]

    got = tuning.tune(cand, _report("pass", 1.0), judge)
    assert got.best is None and "torch_ops" in got.suspect and "cannot be trusted" in got.summary()


@pytest.mark.parametrize("check", ["timed_outputs", "mutation", "stale_cache", "launches"])
def test_a_variant_with_a_launch_parameter_bug_just_loses(check):
    """What a block past the end or a grid of no programs trips in honest code: that
    variant loses, the original stays trusted, and the other variants still count."""
    cand = Candidate(ROWWISE, "rowwise")

    def judge(cands):
        return [_report("fail", None, "wrong past the end", check) if i == 1 else _report("pass", 0.5)
                for i, _ in enumerate(cands)]

    got = tuning.tune(cand, _report("pass", 1.0), judge)
    assert not got.suspect and got.best is not None and got.best.ms == 0.5


def test_text_before_a_launch_in_another_alphabet_does_not_move_the_edits():
    source = NAMED.replace(
        "        k[grid](x, out, n, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)",
        '        é = "ünïcödé"; k[grid](x, out, n, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)',
    )
    for v in tuning.variants(source, limit=40):
        (label, (was, now)), = v.changes.items()
        after = {k.key: k.value for k in tuning.knobs(v.source)[0]}
        before = {k.key: k.value for k in tuning.knobs(source)[0]}
        changed = {key for key in before if before[key] != after.get(key)}
        assert len(changed) == 1 and len(after) == len(before), label
        assert 'é = "ünïcödé"; k[grid](' in v.source


def test_a_time_budget_verifies_variants_in_batches_and_stops_when_spent(monkeypatch):
    """With a budget, variants go to the verifier BATCH at a time, and a batch that the
    earlier ones' pace says would end past the budget is not started (the summary says
    how many were tried); the combination of improving changes too. Without one, all
    go in one call."""
    clock = [0.0]
    monkeypatch.setattr(tuning.time, "monotonic", lambda: clock[0])
    cand = Candidate(ROWWISE, "rowwise")
    asked: list[int] = []

    def judge(cands):  # 2 s a variant
        asked.append(len(cands))
        clock[0] += 2.0 * len(cands)
        return [_report("pass", 0.5) for _ in cands]

    made = len(tuning.variants(ROWWISE, 12))
    assert made > tuning.BATCH
    got = tuning.tune(cand, _report("pass", 1.0), judge, limit=12, budget_s=9)
    # 4 variants: 8 s spent; 4 more would end at 16 s > 9: stop.
    assert asked == [tuning.BATCH]
    assert f"stopped after 4 of {made}" in got.stopped and "9 s" in got.summary()
    assert got.to_dict()["stopped"] == got.stopped and got.best is not None
    asked.clear()
    roomy = tuning.tune(cand, _report("pass", 1.0), judge, limit=12, budget_s=1000)
    assert asked[:2] == [4, 4] and sum(asked) >= made and not roomy.stopped
    asked.clear()
    whole = tuning.tune(cand, _report("pass", 1.0), judge, limit=12)
    assert asked[0] == made and not whole.stopped


def test_a_spent_budget_is_said_and_a_zero_budget_tunes_nothing(monkeypatch):
    """The combination of improving changes, verified alone, is charged a whole call's
    time; when it does not fit, the summary says so. A budget of 0 s tries nothing."""
    clock = [0.0]
    monkeypatch.setattr(tuning.time, "monotonic", lambda: clock[0])
    cand = Candidate(ROWWISE, "rowwise")
    made = len(tuning.variants(ROWWISE, 12))
    calls: list[int] = []

    def judge(cands):  # 5 s a call, whatever its size (the variants run in parallel)
        calls.append(len(cands))
        clock[0] += 5.0
        return [_report("pass", 0.5) for _ in cands]

    # Every batch fits in 5 s x batches, the combination would not.
    batches = -(-made // tuning.BATCH)
    got = tuning.tune(cand, _report("pass", 1.0), judge, limit=12, budget_s=5.0 * batches + 1)
    assert calls == [min(tuning.BATCH, made - i) for i in range(0, made, tuning.BATCH)]
    assert "not tried together" in got.stopped and got.best is not None
    zero = tuning.tune(cand, _report("pass", 1.0), lambda cs: pytest.fail("nothing to verify"), budget_s=0)
    assert "0 s" in zero.skipped


def test_variants_are_compared_on_the_figure_that_ranks():
    """Back to back by default (what ranks candidates): a variant faster back to back but
    slower on one call wins there, and the other one with --rank-by call; a report without
    a back-to-back time is compared on one call, and each result says its figure."""
    cand = Candidate(ROWWISE, "rowwise")

    def timed(call_ms: float, b2b_ms: float | None) -> SimpleNamespace:
        t = {"candidate_ms": call_ms, **({"candidate_b2b_ms": b2b_ms} if b2b_ms else {})}
        return SimpleNamespace(verdict="pass", timing=t, failed=lambda: [])

    def judge(cands):
        out = []
        for c in cands:
            if "num_warps (line 28): default -> 8" in c.name and "num_stages" not in c.name:
                out.append(timed(0.5, 0.95))  # one call much faster, back to back no better
            elif "num_stages (line 28): default -> 2" in c.name and "num_warps" not in c.name:
                out.append(timed(1.2, 0.5))  # back to back much faster, one call slower
            else:
                out.append(timed(1.0, 1.0))
        return out

    device = tuning.tune(cand, timed(1.0, 1.0), judge, limit=12)
    assert device.figure == "back to back" and device.to_dict()["figure"] == "back to back"
    assert device.best is not None and "num_stages" in device.best.variant.describe()
    assert device.best.ms == 0.5 and "compared on their time back to back" in device.summary()
    call = tuning.tune(cand, timed(1.0, 1.0), judge, limit=12, rank_by="call")
    assert call.figure == "one call" and call.best is not None
    assert "num_warps" in call.best.variant.describe() and call.best.ms == 0.5
    fallback = tuning.tune(cand, timed(1.0, None), judge, limit=12)
    assert fallback.figure == "one call"


def test_conflicting_tuning_flags_are_refused_before_any_work(capsys):
    from autotriton_jupyter.cli import main
    from autotriton_jupyter.config import ConfigError, tune_settings

    with pytest.raises(ConfigError, match="--no-tune skips"):
        tune_settings(False, True, None, 3)
    assert tune_settings(False, False, None, 3)["tune_variants"] == 3
    task, cand = str(ROOT / "examples/tasks/add_relu.py"), str(MASKED)
    assert main(["verify", task, cand, "--tune", "--no-timing", "--local", "--device", "cpu"]) == 2
    assert "--no-timing turns timing off" in capsys.readouterr().err

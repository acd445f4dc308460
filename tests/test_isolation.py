"""A candidate that crashes, hangs, hoards memory or spawns threads fails; the judge survives."""

from __future__ import annotations

import threading

from autotriton_jupyter.task import Candidate, Task
from autotriton_jupyter.verify import Verifier, VerifyOptions
from autotriton_jupyter.verify.report import Report


def _failed(report: Report) -> set[str]:
    return {c.name for c in report.failed()}


def test_crash_hang_and_memory_are_contained_and_pool_recovers(corpus):
    task = Task.from_file(corpus / "add_relu" / "task.py")
    honest = Candidate.from_file(corpus / "add_relu" / "pass_masked.py")
    opts = VerifyOptions(device="cpu", seed=7, timeout=20, memory_limit_gb=1.0, timing=False)
    threads_before = threading.active_count()
    with Verifier(opts) as v:
        seg = v.verify(task, Candidate.from_file(corpus / "crash" / "cheat_segfault.py"))
        assert _failed(seg) == {"crash"}
        assert "SIGSEGV, segmentation fault" in seg.reasons[0]["message"]
        assert "every tl.load and tl.store is masked" in seg.reasons[0]["message"]  # advice to its author
        assert v.verify(task, honest).verdict == "pass"

        hang = v.verify(task, Candidate.from_file(corpus / "crash" / "cheat_hang.py"))
        assert _failed(hang) == {"timeout"}
        assert v.verify(task, honest).verdict == "pass"

        mem = v.verify(task, Candidate.from_file(corpus / "crash" / "cheat_host_memory.py"))
        assert _failed(mem) == {"memory"}
        assert v.verify(task, honest).verdict == "pass"
    assert threading.active_count() <= threads_before + 1


def test_background_thread_caught_at_run_time_even_past_the_lint(corpus):
    """The runtime thread check stands on its own: run the judge on code the lint would refuse."""
    task = Task.from_file(corpus / "add_relu" / "task.py")
    source = (
        (corpus / "add_relu" / "pass_masked.py")
        .read_text()
        .replace(
            "        return out",
            "        import threading\n"
            "        threading.Thread(target=lambda: __import__('time').sleep(30), daemon=True).start()\n"
            "        return out",
        )
    )
    with Verifier(VerifyOptions(device="cpu", seed=3, timing=False)) as v:
        ref = v.prepare(task)
        w = v.pool.acquire()
        r = Report()
        try:
            v._judge(ref, Candidate(source, "threaded"), w, r)
        finally:
            v.pool.release(w)
    assert "threads" in _failed(r.finish())


def test_parallel_verification_of_many(corpus):
    task = Task.from_file(corpus / "add_relu" / "task.py")
    names = ["pass_masked", "fail_sub", "cheat02_partial", "pass_masked"]
    cands = [Candidate.from_file(corpus / "add_relu" / f"{n}.py") for n in names]
    seen = []
    with Verifier(VerifyOptions(device="cpu", seed=11, timing=False, parallel=2)) as v:
        reports = v.verify_many(task, cands, on_report=lambda i, r: seen.append(i))
    assert [r.verdict for r in reports] == ["pass", "fail", "fail", "pass"]
    assert sorted(seen) == [0, 1, 2, 3]


def test_user_main_is_not_rerun_in_workers(tmp_path, monkeypatch, corpus):
    """multiprocessing would re-import the caller's __main__ in each worker; ours must not."""
    import subprocess
    import sys

    marker = tmp_path / "ran.txt"
    script = tmp_path / "user_script.py"
    script.write_text(
        "import pathlib, sys\n"
        f"p = pathlib.Path({str(marker)!r}); p.write_text(p.read_text() + 'x' if p.exists() else 'x')\n"
        "from autotriton_jupyter.verify import verify\n"
        f"r = verify({str(corpus / 'add_relu' / 'task.py')!r}, "
        f"{str(corpus / 'add_relu' / 'pass_masked.py')!r}, device='cpu', timing=False)\n"
        "print(r.verdict)\n"
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert out.stdout.strip() == "pass", out.stderr
    assert marker.read_text() == "x"

"""Reports are versioned JSON and read the same way back; the text puts the verdict first."""

from __future__ import annotations

import json

import pytest

from autotriton_jupyter.verify.report import FAIL, PASS, SKIP, Report, format_text, their_traceback


def test_verdict_follows_checks_and_round_trips():
    r = Report(task="t", candidate="c")
    r.add("lint", PASS)
    r.add("correctness", PASS)
    assert r.finish().verdict == "pass"
    r.add("correctness", FAIL, "first reason")
    r.add("correctness", FAIL, "second reason")
    r.add("correctness", PASS)
    assert r.finish().verdict == "fail"
    assert r.reasons == [{"check": "correctness", "message": "first reason"}]
    back = Report.from_dict(json.loads(r.to_json()))
    assert back == r


def test_a_skipped_check_takes_a_later_failure_and_never_fails_alone():
    r = Report()
    r.add("lint", PASS)
    r.add("stale_cache", SKIP, "not reached")
    assert r.finish().verdict == "pass"
    r.add("stale_cache", PASS)
    assert [c.status for c in r.checks] == [PASS, SKIP]
    r.add("stale_cache", FAIL, "a cached result")
    assert r.finish().verdict == "fail"
    assert r.reasons == [{"check": "stale_cache", "message": "a cached result"}]


def test_empty_report_never_passes():
    assert Report().finish().verdict == "fail"


def test_schema_mismatch_refused():
    d = Report().to_dict()
    d["schema"] = 99
    with pytest.raises(ValueError):
        Report.from_dict(d)


def test_text_shows_timing_and_speedups():
    r = Report(
        device="cuda",
        timing={
            "candidate_ms": 0.05,
            "eager_ms": 0.1,
            "compile_ms": 0.08,
            "speedup_vs_eager": 2.0,
            "speedup_vs_compile": 1.6,
        },
    )
    r.add("correctness", PASS)
    text = format_text(r.finish())
    assert text.splitlines()[0].startswith("verdict: PASS")
    assert "2.00x" in text and "1.60x" in text
    assert "back to back" not in text  # a report from before the second figure
    r.timing |= {"candidate_b2b_ms": 0.004, "eager_b2b_ms": 0.006, "compile_b2b_ms": 0.012,
                 "speedup_vs_eager_b2b": 1.5, "speedup_vs_compile_b2b": 3.0}
    text = format_text(r)
    after = text[text.index("back to back"):]
    assert "0.0040" in after and "1.50x" in after and "3.00x" in after


def test_every_gaming_check_is_one_the_verifier_reports():
    """GRPO penalises these names: each must be a check verify/ actually adds."""
    from pathlib import Path

    from autotriton_jupyter.verify.report import GAMING_CHECKS

    verify = Path(__file__).resolve().parent.parent / "autotriton_jupyter" / "verify"
    sources = "".join(p.read_text() for p in verify.glob("*.py") if p.name != "report.py")
    assert len(GAMING_CHECKS) >= 20
    assert [c for c in sorted(GAMING_CHECKS) if f'"{c}"' not in sources] == []


def test_the_result_view_names_both_timing_figures():
    from autotriton_jupyter.pipeline import Attempt, Result
    from autotriton_jupyter.ui.html import candidate_rows, summary_line

    r = Report(device="cuda", timing={"candidate_ms": 0.05, "speedup_vs_eager": 0.5, "speedup_vs_compile": 0.8,
                                      "speedup_vs_eager_b2b": 1.2, "speedup_vs_compile_b2b": 1.1})
    r.add("correctness", PASS)
    c = Attempt(0, 0, "p", "c", "stop", 1, 0.1, "code", None, r.finish())
    res = Result("t", "m", [c])
    line = summary_line(res)
    assert "0.80x vs torch.compile (one call)" in line and "1.10x vs torch.compile back to back" in line
    assert line.endswith("ranked by back to back")  # device time ranks by default
    rows = candidate_rows(res)
    assert "back to back (ranks)" in rows and "one call<" in rows and "1.20x" in rows
    res.ranked_by = "call"
    assert "one call (ranks)" in candidate_rows(res) and summary_line(res).endswith("by one call")


def test_the_ranking_figure_decides_the_order():
    """Device time (back to back) ranks by default; per call when asked."""
    from autotriton_jupyter.pipeline import Attempt, rank_key

    def cand(sample, call, device):
        r = Report(device="cuda", timing={"speedup_vs_compile": call, "speedup_vs_eager": call,
                                          "speedup_vs_compile_b2b": device, "speedup_vs_eager_b2b": device})
        r.add("correctness", PASS)
        return Attempt(0, sample, "p", "c", "stop", 1, 0.1, "code", None, r.finish())

    a, b = cand(0, 2.0, 0.9), cand(1, 0.5, 1.5)  # a: fast alone, b: fast in a row
    assert sorted([a, b], key=rank_key) == [b, a]
    assert sorted([a, b], key=lambda c: rank_key(c, "call")) == [a, b]
    untimed = cand(2, None, None)
    untimed.report.timing = None
    assert sorted([untimed, a], key=rank_key) == [a, untimed]


def test_the_correctness_line_says_how_many_input_sets_were_tried():
    r = Report(candidate="c", task="t")
    r.add("correctness", FAIL, "wrong")
    detail = [{"set": "fresh-1", "kind": "fresh", "ok": False, "max_abs_err": 1.0, "max_rel_err": 1.0}]
    r.correctness = {"input_sets": 9, "runs": 1, "atol": 0.01, "rtol": 0.01,
                     "max_abs_err": 1.0, "max_rel_err": 1.0, "detail": detail}
    assert "correctness: 1 run on 1 of 9 input sets," in format_text(r.finish())
    r.correctness["detail"] = [dict(detail[0], set=f"s{k}", ok=True) for k in range(9)] + detail
    r.correctness["runs"] = 10
    assert "correctness: 10 runs on 9 input sets," in format_text(r)


def test_a_candidates_traceback_names_its_own_file():
    tb = (
        "Traceback (most recent call last):\n"
        '  File "/tmp/scratch/work/candidate_12.py", line 26, in forward\n'
        '    raise RuntimeError("boom")\n'
        "RuntimeError: boom\n"
    )
    assert their_traceback(tb, "kernels/mine.py").splitlines() == [
        "Traceback (most recent call last):",
        '  File "kernels/mine.py", line 26, in forward',
        '    raise RuntimeError("boom")',
        "RuntimeError: boom",
    ]

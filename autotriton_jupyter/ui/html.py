"""Static HTML of a Result: what a saved notebook, nbconvert and GitHub show without a kernel."""

from __future__ import annotations

import difflib
import html

from ..config import RANK_FIGURES
from ..pipeline import Attempt, Result

STYLE = """<style>
.atr{font-family:var(--jp-ui-font-family,sans-serif);font-size:13px}
.atr .pass{color:#1a7f37;font-weight:600}.atr .fail{color:#cf222e;font-weight:600}
.atr .conditional{color:#9a6700;font-weight:600}
.atr table{border-collapse:collapse;margin:6px 0}.atr td,.atr th{border:1px solid #ddd;padding:2px 8px}
.atr details{margin:4px 0}
.atr pre{max-height:420px;overflow:auto;font-family:var(--jp-code-font-family,monospace);font-size:12px}
.atr table{max-width:100%;table-layout:auto}.atr td.why{overflow-wrap:anywhere;max-width:60em}
.atr table.diff{font-family:monospace;font-size:12px}.atr .diff_add{background:#e6ffec}
.atr .diff_sub{background:#ffebe9}.atr .diff_chg{background:#fff8c5}
</style>"""


def _x(v: float | None) -> str:
    return "-" if not v else f"{v:.2f}x"


def summary_line(result: Result) -> str:
    """One line: verdict, speedups and max error of the best candidate (plain text)."""
    best = result.best
    top = result.candidates[0] if result.candidates else None
    if best is None and top is not None and top.conditional and top.report is not None:
        first = next((x for x in top.report.reasons if x["check"] == "judge_inputs"), None)
        return (
            f"CONDITIONAL: right on the task's inputs, wrong on inputs the verifier made "
            f"({len(result.candidates)} tried){': ' + first['message'] if first else ''}"
        )
    if best is None or best.report is None:
        return f"no candidate passed ({len(result.candidates)} tried)"
    r = best.report
    t = r.timing or {}
    err = (r.correctness or {}).get("max_abs_err")
    speed = (
        f"{_x(t.get('speedup_vs_eager'))} vs eager, {_x(t.get('speedup_vs_compile'))} vs "
        "torch.compile (one call)"
        if t
        else "timing not measured (no GPU)"
    )
    if t.get("speedup_vs_compile_b2b"):
        speed += (
            f"; {_x(t.get('speedup_vs_eager_b2b'))} vs eager, "
            f"{_x(t.get('speedup_vs_compile_b2b'))} vs torch.compile back to back"
        )
        speed += f"; ranked by {RANK_FIGURES.get(result.ranked_by, result.ranked_by)}"
    return f"PASS: {speed}; max abs error {err:.2g}" if err is not None else f"PASS: {speed}"


def highlighted(code: str) -> str:
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer

        return highlight(code, PythonLexer(), HtmlFormatter(noclasses=True, nobackground=True))
    except ImportError:
        return f"<pre>{html.escape(code)}</pre>"


def candidate_rows(result: Result) -> str:
    rows = []
    for i, c in enumerate(result.candidates):
        r = c.report
        t = (r.timing or {}) if r else {}
        verdict = r.verdict if r else "no code"
        why = (
            html.escape(f"{r.reasons[0]['check']}: {r.reasons[0]['message']}")
            if r and r.reasons
            else ""
        )
        rows.append(
            f"<tr><td>{i + 1}</td><td>{c.round + 1}/{c.sample + 1}"
            f"{' tuned' if c.tuned else ''}</td>"
            f"<td class='{verdict}'>{verdict}</td><td>{_x(t.get('speedup_vs_eager'))}</td>"
            f"<td>{_x(t.get('speedup_vs_compile'))}</td>"
            f"<td>{_x(t.get('speedup_vs_eager_b2b'))}</td><td>{_x(t.get('speedup_vs_compile_b2b'))}</td>"
            f"<td>{c.tokens}</td><td class='why'>{why}</td></tr>"
        )
    ranks = {result.ranked_by: " (ranks)"}
    return (
        "<table><tr><th rowspan='2'>#</th><th rowspan='2'>round/sample</th>"
        f"<th rowspan='2'>verdict</th><th colspan='2'>one call{ranks.get('call', '')}</th>"
        f"<th colspan='2'>back to back{ranks.get('device', '')}</th><th rowspan='2'>tokens</th>"
        "<th rowspan='2'>first reason</th></tr>"
        "<tr><th>vs eager</th><th>vs compile</th><th>vs eager</th><th>vs compile</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def diff_table(original: str, code: str) -> str:
    return difflib.HtmlDiff(wrapcolumn=70).make_table(
        original.splitlines(), code.splitlines(), "original", "kernel", context=False
    )


def findings(c: Attempt) -> str:
    r = c.report
    if r is None:
        return ""
    items = [
        f"<li><b>{html.escape(x['check'])}</b>: {html.escape(x['message'])}</li>" for x in r.reasons
    ]
    items += [f"<li>note: {html.escape(n)}</li>" for n in r.notes]
    return f"<ul>{''.join(items)}</ul>" if items else "<p>every check passed</p>"


def result_html(result: Result, original: str, chosen: int = 0, accepted: str | None = None) -> str:
    """The whole view as one HTML string."""
    parts = [STYLE, "<div class='atr'>"]
    best = result.best
    top = result.candidates[0] if result.candidates else None
    cls = "pass" if best else "conditional" if top is not None and top.conditional else "fail"
    parts.append(f"<p class='{cls}'>autotriton: {html.escape(summary_line(result))}</p>")
    parts.append(
        f"<p>model {html.escape(result.model)}, {len(result.candidates)} "
        f"candidate{'' if len(result.candidates) == 1 else 's'} in "
        f"{result.seconds:.1f} s{' (interrupted)' if result.cancelled else ''}"
        f"{f'; accepted as <code>{html.escape(accepted)}</code>' if accepted else ''}</p>"
    )
    parts.append(candidate_rows(result))
    if result.candidates:
        c = result.candidates[min(chosen, len(result.candidates) - 1)]
        parts.append(
            f"<details open><summary>integrity and correctness of candidate {chosen + 1}"
            f"</summary>{findings(c)}</details>"
        )
        if c.code:
            parts.append(
                f"<details><summary>diff against the original</summary>"
                f"{diff_table(original, c.code)}</details>"
            )
            parts.append(
                f"<details open><summary>kernel code</summary>{highlighted(c.code)}</details>"
            )
        parts.append(
            f"<details><summary>completion (reasoning and answer)</summary>"
            f"<pre>{html.escape(c.completion)}</pre></details>"
        )
    parts.append("</div>")
    return "".join(parts)

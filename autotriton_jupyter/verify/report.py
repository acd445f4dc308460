"""The Report: what the verifier concluded about one candidate (JSON-serialisable, versioned)."""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any

SCHEMA_VERSION = 1

PASS, FAIL, SKIP, INCONCLUSIVE = "pass", "fail", "skip", "inconclusive"
# Right on every input set drawn from get_inputs(), wrong on inputs the judge made
# (VERIFY.md): a verdict of its own, never counted as passed.
CONDITIONAL = "conditional"


def full_stop(text: str) -> str:
    """A sentence that may end in an exception's own text, ended (once)."""
    return text if text.endswith((".", "!", "?")) else text + "."


def their_traceback(text: str, path: str) -> str:
    """A candidate's traceback (its worker starts it at the candidate's first frame) as
    its author reads it: its file named by their `path`, not by the copy the worker ran."""
    return re.sub(r'File "[^"\n]*/candidate_\d+\.py"', lambda _: f'File "{path}"', text)


# Checks that fail only when a candidate games the judge rather than gets the answer wrong
# (training penalises these; a wrong answer is only not rewarded).
GAMING_CHECKS = frozenset(
    {
        "no_kernel",
        "inherits_reference",
        "forbidden_import",
        "forbidden_call",
        "private_api",
        "module_alias",
        "dynamic_access",
        "monkeypatch",
        "try_except",
        "host_compute",
        "side_stream",
        "kernel_uses_torch",
        "kernel_calls_python",
        "introspection",
        "launches",
        "torch_ops",
        "own_forward",
        "aliasing",
        "mutation",
        "output_type",
        "stale_cache",
        "repeatability",
        "threads",
        "timing_integrity",
        "tampering",
        "timed_outputs",
        "protocol",
    }
)



@dataclass
class Check:
    """One named check and its outcome; `message` says in one sentence what was wrong."""

    name: str
    status: str
    message: str = ""


@dataclass
class Report:
    """Everything known about one candidate; `verdict` is "pass" only if every check passed."""

    verdict: str = FAIL
    checks: list[Check] = field(default_factory=list)
    correctness: dict[str, Any] | None = None
    timing: dict[str, Any] | None = None
    device: str = "cpu"
    interpreted: bool = False
    sandboxed: bool = False  # every worker ran in the OS sandbox (VERIFY.md)
    kernels: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    task: str = ""
    candidate: str = ""
    seconds: dict[str, float] = field(default_factory=dict)
    schema: int = SCHEMA_VERSION

    def add(self, name: str, status: str, message: str = "") -> None:
        """Record a check outcome; the first failure of a check is the one kept (a check
        passed or skipped before takes a later failure)."""
        for c in self.checks:
            if c.name == name:
                if c.status in (PASS, SKIP) and status not in (PASS, SKIP):
                    c.status, c.message = status, message
                return
        self.checks.append(Check(name, status, message))

    def failed(self) -> list[Check]:
        """Checks that stop the candidate from passing (conditional ones included)."""
        return [c for c in self.checks if c.status in (FAIL, INCONCLUSIVE, CONDITIONAL)]

    def blocking(self) -> list[Check]:
        """Checks that make the verdict `fail` (a conditional check does not)."""
        return [c for c in self.checks if c.status in (FAIL, INCONCLUSIVE)]

    def finish(self, strict: bool = False) -> Report:
        """Set the verdict from the checks; with `strict`, conditional checks become failures."""
        if strict:
            for c in self.checks:
                if c.status == CONDITIONAL:
                    c.status = FAIL
        if not self.checks or self.blocking():
            self.verdict = FAIL
        elif any(c.status == CONDITIONAL for c in self.checks):
            self.verdict = FAIL if strict else CONDITIONAL
        else:
            self.verdict = PASS
        return self

    @property
    def reasons(self) -> list[dict[str, str]]:
        """The failing checks as {check, message}, in the order they were found."""
        return [{"check": c.name, "message": c.message} for c in self.failed()]

    def to_dict(self) -> dict[str, Any]:
        """A plain dict, as written by `--json`."""
        d = asdict(self)
        d["reasons"] = self.reasons
        order = [
            "schema",
            "verdict",
            "reasons",
            "checks",
            "correctness",
            "timing",
            "device",
            "interpreted",
            "sandboxed",
            "kernels",
            "notes",
            "errors",
            "task",
            "candidate",
            "seconds",
        ]
        return {k: d[k] for k in order}

    def to_json(self, indent: int | None = None) -> str:
        """The report as JSON text."""
        return json.dumps(_finite(self.to_dict()), indent=indent, allow_nan=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Report:
        """Read a report written by `to_dict` (unknown keys are ignored)."""
        if d.get("schema") != SCHEMA_VERSION:
            raise ValueError(f"report schema {d.get('schema')} is not {SCHEMA_VERSION}")
        fields = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        fields["checks"] = [Check(**c) for c in d.get("checks", [])]
        return cls(**fields)


def _finite(v: Any) -> Any:
    """NaN and infinities as null: strict JSON, which every parser reads."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_finite(x) for x in v]
    return v


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.4f} ms"


def format_text(r: Report) -> str:
    """Human-readable report: verdict first, then reasons, errors and timing."""
    lines = [f"verdict: {r.verdict.upper()}  ({r.candidate or 'candidate'} vs {r.task or 'task'})"]
    for c in r.failed():
        mark = "?" if c.status == CONDITIONAL else "x"
        lines.append(f"  {mark} {c.name}: {c.message}")
    c = r.correctness
    if c:
        n = c.get("input_sets", 0)
        tried = len({d.get("set") for d in c.get("detail") or [] if isinstance(d, dict)})
        sets = f"{tried} of {n} input sets" if c.get("detail") and tried < n else f"{n} input sets"
        lines.append(
            f"correctness: {c.get('runs', 0)} run{'s' if c.get('runs', 0) != 1 else ''} on {sets}, "
            f"max abs err {c.get('max_abs_err', float('nan')):.3g}, "
            f"max rel err {c.get('max_rel_err', float('nan')):.3g} where |reference| > atol "
            f"(atol {c.get('atol')}, rtol {c.get('rtol')})"
        )
    if r.kernels:
        lines.append(
            "kernels launched in forward: " + ", ".join(f"{k} x{n}" for k, n in r.kernels.items())
        )
    mode = "Triton CPU interpreter" if r.interpreted else r.device
    lines.append(f"device: {mode}")
    lines.append(
        "sandbox: on (bubblewrap; each worker in namespaces of its own)"
        if r.sandboxed
        else "sandbox: off (generated code ran with your privileges)"
    )
    t = r.timing
    if t is None:
        why = "" if r.interpreted or r.device == "cpu" else " (not requested or not reached)"
        lines.append(f"timing: not measured{' on the CPU interpreter' if r.interpreted else why}")
    else:
        lines.append("one call (each started on an idle GPU after an L2 flush, launch included; median):")
        lines.append(f"  candidate        {_ms(t.get('candidate_ms'))}")
        lines.append(
            f"  eager PyTorch    {_ms(t.get('eager_ms'))}"
            + (f"   speedup {t['speedup_vs_eager']:.2f}x" if t.get("speedup_vs_eager") else "")
        )
        lines.append(
            f"  torch.compile    {_ms(t.get('compile_ms'))}"
            + (f"   speedup {t['speedup_vs_compile']:.2f}x" if t.get("speedup_vs_compile") else "")
        )
        if t.get("candidate_b2b_ms"):
            lines.append(
                "back to back (calls in a row, as inside a model; per call; ranks candidates "
                "unless --rank-by call):"
            )
            for name, key, vs in (
                ("candidate", "candidate_b2b_ms", None),
                ("eager PyTorch", "eager_b2b_ms", "speedup_vs_eager_b2b"),
                ("torch.compile", "compile_b2b_ms", "speedup_vs_compile_b2b"),
            ):
                lines.append(
                    f"  {name:<16} {_ms(t.get(key))}"
                    + (f"   speedup {t[vs]:.2f}x" if vs and t.get(vs) else "")
                )
    for n in r.notes:
        lines.append(f"note: {n}")
    for e in r.errors:
        lines.append("error output:")
        lines.extend("  " + ln for ln in e.rstrip().splitlines()[-15:])
    return "\n".join(lines)

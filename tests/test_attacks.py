"""Reward hacks written white-box, against the verifier's own source (issue 13).

Each file in tests/attacks/ is a cheat of one class (its name says which): work where
the audit is off, forbidden things reached through allowed ones, tampering with the
judge inside the worker, behaving well only while judged, inputs never drawn. Every one
must get `fail`; those that are right only on the inputs get_inputs() draws may get
`conditional`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from autotriton_jupyter.task import Candidate, Task
from autotriton_jupyter.verify import Verifier, VerifyOptions

HERE = Path(__file__).parent / "attacks"
CORPUS = Path(__file__).parent / "corpus"
ATTACKS = sorted(
    p
    for p in HERE.glob("*.py")
    if not p.name.endswith(".task.py") and p.read_text().startswith("# expect:")
)


def _header(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines()[:5]:
        if line.startswith("# ") and ":" in line:
            key, _, value = line[2:].partition(":")
            out[key.strip()] = value.strip()
    return out


def _task(path: Path) -> Task:
    name = _header(path)["task"]
    if name == "inline":
        return Task.from_file(path.with_name(path.stem + ".task.py"))
    return Task.from_file(CORPUS / name / "task.py")


def test_every_class_has_at_least_five_attacks():
    classes = {}
    for p in ATTACKS:
        classes.setdefault(p.name.split("__")[0], []).append(p)
    assert len(ATTACKS) >= 40
    for cls in ("work_where_audit_is_off", "forbidden_via_allowed", "tamper_with_judge",
                "behave_when_judged", "inputs_never_drawn"):
        assert len(classes.get(cls, [])) >= 5, cls


@pytest.fixture(scope="module")
def verifier():
    with Verifier(VerifyOptions(device="cpu", seed=4242, timing=False)) as v:
        yield v


def _cases() -> list:
    out = []
    for p in ATTACKS:
        limit = _header(p).get("limit")
        marks = [pytest.mark.xfail(strict=True, reason=limit)] if limit else []
        out.append(pytest.param(p, marks=marks, id=p.stem))
    return out


@pytest.mark.parametrize("attack", _cases())
def test_attack_does_not_pass(verifier, attack):
    expect = _header(attack)["expect"].split()[0]
    report = verifier.verify(_task(attack), Candidate.from_file(attack))
    detail = "\n".join(f"{c['check']}: {c['message']}" for c in report.reasons)
    assert report.verdict != "pass", f"{attack.name} passed"
    if expect == "fail":
        assert report.verdict == "fail", f"{attack.name}: {report.verdict}\n{detail}"
    else:
        assert report.verdict in ("fail", "conditional"), detail

"""The op audit (verify/probes.py) on the CPU: what it counts, and that timing's audits
allocate nothing a candidate could notice."""

from __future__ import annotations

import torch

from autotriton_jupyter.verify import probes


def _run(snapshots: bool) -> probes.OpAudit:
    audit = probes.OpAudit(probes.LaunchProbe(__file__), "cpu", snapshots=snapshots)
    x, y = torch.randn(64), torch.randn(64)
    with audit:
        z = x.clone()  # a PyTorch copy of data no kernel made
        torch.mm(x.view(8, 8), y.view(8, 8))
    assert z.shape == x.shape
    return audit


def test_the_audit_counts_compute_and_keeps_copies_only_when_asked():
    full = _run(snapshots=True)
    assert full.compute["mm"] == 1 and len(full.copies) == 1
    counting = _run(snapshots=False)  # timing's audited calls: the same counts, no copy made
    assert counting.compute == full.compute and counting.copies == {}

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


def _own_kernel(x):  # what a launcher's `fn` is: a function of the candidate's file (this one)
    return x


def test_timed_launches_are_only_counted():
    """While timed, a launch is counted (the timed calls' check) but not traced to its
    storages and stream (what only an observed call's checks read): the judge's own work
    inside every timed launch stays as small as it can be, audited calls alike."""

    class Interface:
        pass

    class Launcher(Interface):
        fn = staticmethod(_own_kernel)

        def run(self, *args, **kwargs):
            return "launched"

    probe = probes.LaunchProbe(__file__)
    probe._wrap(Launcher, Launcher.__dict__["run"], Interface)
    probe.recording = True
    x = torch.randn(8)
    assert Launcher().run(x, grid=(1,)) == "launched"
    assert probe.own["_own_kernel"] == 1 and probe.touched == {probes._ptr(x)}
    probe.full = False
    y = torch.randn(8)
    assert Launcher().run(y, grid=(1,)) == "launched"
    assert probe.own["_own_kernel"] == 2 and probe.touched == {probes._ptr(x)}


def test_a_thread_started_during_a_call_is_seen_even_when_another_one_ended():
    """Threads are compared by their ids: one that ends during the call (a reply's spare
    thread, in a worker) cannot hide one the call started, as a count's difference would."""
    import threading

    leaving, stay = threading.Event(), threading.Event()
    old = threading.Thread(target=leaving.wait, daemon=True)
    old.start()
    before = probes.thread_ids()
    count_before = threading.active_count()
    leaving.set()
    old.join()
    new = threading.Thread(target=stay.wait, daemon=True)
    new.start()
    try:
        assert threading.active_count() - count_before == 0  # what counting saw
        assert probes.new_threads(before) == (1, 1)
    finally:
        stay.set()
        new.join()
    assert probes.new_threads(probes.thread_ids()) == (0, 0)

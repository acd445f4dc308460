"""Verification overlapped with generation (issue 14): a sample is judged as soon as it is
complete, while later samples are still being generated; a broken reference stops generation."""

from __future__ import annotations

import threading

import pytest

from autotriton_jupyter.config import TritonizeOptions
from autotriton_jupyter.model.generator import Completion, Event
from autotriton_jupyter.pipeline import tritonize
from autotriton_jupyter.task import Task, TaskError
from autotriton_jupyter.verify import Verifier, VerifyOptions


def fenced(path) -> str:
    return "Here is the kernel.\n```python\n" + path.read_text() + "```\n"


class SlowSecondSample:
    """Stands in for a model (tests only): sample 1 is done at once; sample 2 is "still
    generating" until the pipeline reports sample 1's verdict, or a timeout passes."""

    name = "slow-second"

    def __init__(self, texts: list[str], events: list) -> None:
        self.texts, self.events = texts, events
        self.verdict_seen_while_generating = threading.Event()
        self.saw_cancel = False

    def generate(self, chats, n, params, on_event=None, cancel=None):
        out = []
        for i, text in enumerate(self.texts[:n]):
            if i == 1:
                for _ in range(1200):  # up to 120 s for sample 1's verdict
                    if cancel is not None and cancel.cancelled:
                        self.saw_cancel = True
                        return out
                    if any(e.kind == "verified" and e.sample == 0 for e in self.events):
                        self.verdict_seen_while_generating.set()
                        break
                    threading.Event().wait(0.1)
            on_event(Event("done", sample=i, tokens=10, message="stop", text=text))
            out.append(Completion(text, 10, "stop", 0.01, chat=0, sample=i))
        return out


@pytest.fixture(scope="module")
def verifier():
    with Verifier(VerifyOptions(device="cpu", seed=31, timing=False)) as v:
        yield v


def test_a_complete_sample_is_judged_while_others_generate(verifier, corpus):
    task = Task.from_file(corpus / "add_relu" / "task.py")
    events: list = []
    gen = SlowSecondSample(
        [fenced(corpus / "add_relu" / "pass_masked.py"), fenced(corpus / "add_relu" / "fail_sub.py")],
        events,
    )
    res = tritonize(
        task,
        gen,
        TritonizeOptions(n=2, verify=verifier.options),
        verifier=verifier,
        on_event=events.append,
    )
    assert gen.verdict_seen_while_generating.is_set()
    verdicts = {c.sample: c.report.verdict for c in res.candidates}
    assert verdicts == {0: "pass", 1: "fail"}
    # Each sample was judged once: the early verdict was used, not judged again.
    assert sorted(e.sample for e in events if e.kind == "verified") == [0, 1]


def test_a_broken_reference_stops_generation(verifier, tmp_path, corpus):
    src = (corpus / "add_relu" / "task.py").read_text()
    src = src.replace(
        "def forward(self, x, y):",
        "def forward(self, x, y):\n        raise ValueError('broken reference')",
    )
    broken = Task.from_cell(src, name="broken")
    gen = SlowSecondSample([fenced(corpus / "add_relu" / "pass_masked.py")] * 2, [])
    with pytest.raises(TaskError, match="broken reference"):
        tritonize(broken, gen, TritonizeOptions(n=2, verify=verifier.options), verifier=verifier)
    assert gen.saw_cancel

"""--shapes: a candidate is also judged at input shapes other than the task's own.

The row-sum kernel that drops the last partial block is right whenever the column count
is a multiple of its block (64), so the task's own 32x256 cannot show the bug; 33x100
does (at 33x257 the one dropped column of 257 would hide under the 1% tolerance).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from autotriton_jupyter.cli import main
from autotriton_jupyter.task import Candidate, Task, TaskError
from autotriton_jupyter.verify import Verifier, VerifyOptions
from autotriton_jupyter.verify.shapes import ShapeError, parse_shapes, reshape_inputs

CANDIDATES = Path(__file__).parent.parent / "examples" / "candidates" / "row_sum"
ROW_SUM = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.sum(dim=1)


def get_inputs():
    return [torch.rand(32, 256)]


def get_init_inputs():
    return []
"""
LINEAR = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 8)

    def forward(self, x):
        return self.fc(x)


def get_inputs():
    return [torch.randn(4, 16)]


def get_init_inputs():
    return []
"""


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    path = tmp_path_factory.mktemp("task") / "row_sum_256.py"
    path.write_text(ROW_SUM)
    return path


def test_shapes_are_parsed_and_bad_ones_are_named():
    assert parse_shapes(["33x257 33x257; 1x7 1x7", "()"]) == [
        [(33, 257), (33, 257)],
        [(1, 7), (1, 7)],
        [()],
    ]
    assert parse_shapes([]) == [] and parse_shapes([" ; "]) == []
    with pytest.raises(ShapeError, match="'33y257' is not a shape"):
        parse_shapes(["33y257"])


def test_redrawn_inputs_keep_the_task_values_and_other_arguments():
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(4, 5) + 2.0  # all in [2, 3): a distribution the new tensor must keep
    out = reshape_inputs([x, 3, torch.arange(6)], [(7, 9), (2,)], gen)
    assert out[0].shape == (7, 9) and out[0].dtype == x.dtype
    assert set(out[0].flatten().tolist()) <= set(x.flatten().tolist())
    assert out[1] == 3 and out[2].shape == (2,) and out[2].dtype == torch.int64
    with pytest.raises(ShapeError, match="gives 1 shape.* returns 2 tensor"):
        reshape_inputs([x, x], [(3, 3)], gen)


def test_a_kernel_right_only_at_the_task_shape_fails_at_another(task):
    bad = Candidate.from_file(CANDIDATES / "fail_missing_tail.py")
    good = Candidate.from_file(CANDIDATES / "pass_loop.py")
    t = Task.from_file(task)
    with Verifier(VerifyOptions(device="cpu", seed=1)) as v:
        assert v.verify(t, bad).verdict == "pass"  # the task's own shape hides the bug
    with Verifier(VerifyOptions(device="cpu", seed=1, shapes=("33x100; 2x64",))) as v:
        reports = v.verify_many(t, [bad, good])
    # Right on the task's shapes, wrong at shapes the judge was asked to add: conditional,
    # and --strict makes that a fail.
    assert reports[0].verdict == "conditional"
    reasons = [x for x in reports[0].reasons if x["check"] == "judge_inputs"]
    assert reasons and "shape-1 (33x100)" in reasons[0]["message"]
    assert reports[1].verdict == "pass", reports[1].reasons
    strict = VerifyOptions(device="cpu", seed=1, shapes=("33x100; 2x64",), strict=True)
    with Verifier(strict) as v:
        assert v.verify(t, bad).verdict == "fail"


def test_shapes_the_task_cannot_take_are_a_clear_task_error(task, tmp_path):
    good = Candidate.from_file(CANDIDATES / "pass_loop.py")
    with Verifier(VerifyOptions(device="cpu", shapes=("33x257 33x257",))) as v:
        with pytest.raises(TaskError, match="gives 2 shape.* returns 1 tensor"):
            v.verify(Task.from_file(task), good)
    linear = tmp_path / "linear.py"
    linear.write_text(LINEAR)
    with Verifier(VerifyOptions(device="cpu", shapes=("4x17",))) as v:
        with pytest.raises(TaskError, match=r"on input set 'shape-1 \(4x17\)'"):
            v.verify(Task.from_file(linear), good)


def test_cli_shapes(task, capsys):
    bad = str(CANDIDATES / "fail_missing_tail.py")
    code = main(["verify", str(task), bad, "--shapes", "33x100", "--json", "-q", "--seed", "2"])
    out = json.loads(capsys.readouterr().out)
    assert code == 3 and out["verdict"] == "conditional"  # right at the task's own shape
    code = main(["verify", str(task), bad, "--shapes", "33x100", "--json", "-q", "--seed", "2", "--strict"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["verdict"] == "fail"
    assert main(["verify", str(task), bad, "--shapes", "33 by 257", "-q"]) == 2
    assert "is not a shape" in capsys.readouterr().err

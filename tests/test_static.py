"""The lint resolves names through imports and refuses each family of cheat before anything runs."""

from __future__ import annotations

import pytest

from autotriton_jupyter.verify.static import lint

HEADER = """
import torch
import torch.nn as nn
import triton
import triton.language as tl

@triton.jit
def k(p, BLOCK: tl.constexpr):
    tl.store(p + tl.arange(0, BLOCK), 0.0)

"""


def checks(body: str) -> set[str]:
    return {p.check for p in lint(HEADER + body).problems}


OK_CLASS = "class ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n"


def test_clean_candidate_has_no_problems():
    assert checks(OK_CLASS) == set()


@pytest.mark.parametrize(
    "body,check",
    [
        ("import torch as T\nf = T.compile\n", "forbidden_call"),
        ("from torch import compile as c\n", "forbidden_import"),
        ("import numpy as np\n", "forbidden_import"),
        ("from ctypes import CDLL\n", "forbidden_import"),
        ("import torch.multiprocessing\n", "forbidden_import"),
        ("F = torch.nn.functional\ntorch.nn.functional.relu = abs\n", "monkeypatch"),
        ("setattr(torch, 'allclose', None)\n", "monkeypatch"),
        ("import os\nos.environ['X'] = '1'\n", "monkeypatch"),
        ("x = eval('1')\n", "forbidden_call"),
        ("s = torch.cuda.Stream()\n", "side_stream"),
        ("g = torch.cuda.CUDAGraph()\n", "forbidden_call"),
        ("y = [].__class__.__bases__\n", "introspection"),
        ("def f(t):\n    return t.cpu()\n", "host_compute"),
        ("def f(t):\n    return t.to('cpu')\n", "host_compute"),
        ("def f():\n    try:\n        pass\n    except Exception:\n        pass\n", "try_except"),
        ("@triton.jit\ndef bad(p):\n    torch.relu(p)\n", "kernel_uses_torch"),
        ("from . import sibling\n", "forbidden_import"),
    ],
)
def test_each_rule(body, check):
    assert check in checks(OK_CLASS + body)


def test_module_level_import_fallback_is_allowed():
    body = "try:\n    from triton.language.extra import libdevice\nexcept ImportError:\n    libdevice = None\n"
    assert checks(OK_CLASS + body) == set()


def test_structure_rules():
    assert "structure" in {
        p.check for p in lint("import triton\n@triton.jit\ndef k(): pass\n").problems
    }
    assert "no_kernel" in {p.check for p in lint("import torch.nn as nn\n" + OK_CLASS).problems}
    src = (
        HEADER
        + "class Model(nn.Module):\n    pass\nclass ModelNew(Model):\n    def forward(self, x):\n        return x\n"
    )
    assert "inherits_reference" in {p.check for p in lint(src).problems}
    assert "structure" in checks("class ModelNew(nn.Module):\n    pass\n")


def test_syntax_error_is_a_problem_not_an_exception():
    res = lint("def broken(:\n")
    assert [p.check for p in res.problems] == ["syntax"]
    assert "line 1" in res.problems[0].message


def test_item_is_noted_not_failed():
    res = lint(HEADER + OK_CLASS + "def f(t):\n    return t.item()\n")
    assert not res.problems and any(".item()" in n for n in res.notes)

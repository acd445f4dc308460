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


def test_item_is_host_compute():
    assert "host_compute" in checks(OK_CLASS + "def f(t):\n    return t.item()\n")


@pytest.mark.parametrize(
    "body,check",
    [
        ("from torch.utils._python_dispatch import _disable_current_modes\n", "forbidden_import"),
        (
            "def f():\n    return torch.utils._python_dispatch._get_current_dispatch_mode()\n",
            "private_api",
        ),
        ("x = torch._C\n", "private_api"),
        ("import autotriton_jupyter.verify.worker as W\n", "forbidden_import"),
        ("import pathlib\n", "forbidden_import"),
        ("import runpy\n", "forbidden_import"),
        ("p = torch\n", "module_alias"),
        ("m = [torch][0]\n", "module_alias"),
        ("def f(o, n):\n    return getattr(o, n)\n", "dynamic_access"),
        ("def f(o):\n    return getattr(o, '__globals__')\n", "dynamic_access"),
        ("def f(o):\n    return vars(o)\n", "dynamic_access"),
        ("torch.cuda.set_per_process_memory_fraction(1.0)\n", "forbidden_call"),
        (
            "def helper(x):\n    return x\n@triton.jit\ndef k2(p):\n    helper(p)\n",
            "kernel_calls_python",
        ),
    ],
)
def test_rules_against_escapes(body, check):
    assert check in checks(OK_CLASS + body)


def test_honest_idioms_are_allowed():
    body = (
        "import math\n"
        "from triton.language.extra import libdevice\n"
        "from triton.runtime import driver\n"
        "@triton.jit\n"
        "def _helper(x):\n    return x * 2\n"
        "@triton.jit\n"
        "def k3(p, n, BLOCK: tl.constexpr):\n"
        "    offs = tl.arange(0, BLOCK)\n"
        "    acc = tl.zeros([BLOCK], dtype=tl.float32)\n"
        "    for i in range(0, n, BLOCK):\n"
        "        acc += _helper(tl.load(p + i + offs, mask=i + offs < n, other=0.0))\n"
        "    tl.store(p + offs, libdevice.exp(acc.to(tl.float32)) * math.pi)\n"
        "class Extra(nn.Module):\n"
        "    def __init__(self, names):\n"
        "        super().__init__()\n"
        "        nn.Module.__init__(self)\n"
        "        for n in names:\n"
        "            setattr(self, n, nn.Parameter(torch.zeros(1)))\n"
        "        getattr(self, 'weight', None)\n"
    )
    assert checks(OK_CLASS + body) == set()

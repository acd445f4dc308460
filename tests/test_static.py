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
        ("import torch as T\nf = T.compile\n", "not_allowed"),
        ("from torch import compile as c\n", "forbidden_import"),
        ("import numpy as np\n", "forbidden_import"),
        ("from ctypes import CDLL\n", "forbidden_import"),
        ("import torch.multiprocessing\n", "forbidden_import"),
        ("F = torch.nn.functional\ntorch.nn.functional.relu = abs\n", "monkeypatch"),
        ("setattr(torch, 'allclose', None)\n", "monkeypatch"),
        ("import os\nos.environ['X'] = '1'\n", "monkeypatch"),
        ("x = eval('1')\n", "forbidden_call"),
        ("s = torch.cuda.Stream()\n", "side_stream"),
        ("g = torch.cuda.CUDAGraph()\n", "not_allowed"),
        ("y = [].__class__.__bases__\n", "introspection"),
        ("def f(t):\n    return t.cpu()\n", "host_compute"),
        ("def f(t):\n    return t.to('cpu')\n", "host_compute"),
        ("def f():\n    try:\n        pass\n    except Exception:\n        pass\n", "try_except"),
        ("@triton.jit\ndef bad(p):\n    torch.relu(p)\n", "kernel_uses_torch"),
        ("from . import sibling\n", "forbidden_import"),
        # A name of a stream's own, defined as the candidate's, is not opened on a stream:
        # query() would tell calls in a row (work pending) from synchronised ones.
        ("class C:\n    query = 0\ndef f():\n    return torch.cuda.current_stream().query()\n",
         "not_allowed"),
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
            "not_allowed",
        ),
        ("x = torch._C\n", "private_api"),
        ("import autotriton_jupyter.verify.worker as W\n", "forbidden_import"),
        ("import pathlib\n", "forbidden_import"),
        ("import runpy\n", "forbidden_import"),
        ("p = torch\n", "module_alias"),
        ("m = [torch][0]\n", "module_alias"),
        ("def f(o, n):\n    return getattr(o, n)\n", "dynamic_access"),
        ("def f(o):\n    return getattr(o, '__globals__')\n", "dynamic_access"),
        ("def f(o):\n    return vars(o)\n", "forbidden_call"),
        ("torch.cuda.set_per_process_memory_fraction(1.0)\n", "not_allowed"),
        (
            "def helper(x):\n    return x\n@triton.jit\ndef k2(p):\n    helper(p)\n",
            "kernel_calls_python",
        ),
        (  # a built-in rebound at module level is the candidate's Python in the kernel
            "def min(a, b):\n    return a\n@triton.jit\ndef k2(p):\n    x = min(p, 1)\n",
            "kernel_calls_python",
        ),
        (
            "if True:\n    max = abs\n@triton.jit\ndef k2(p):\n    x = max(p, 1)\n",
            "kernel_calls_python",
        ),
        (  # a function's `global` assignment rebinds the module's name
            "def f():\n    global min\n    min = abs\nf()\n@triton.jit\ndef k2(p):\n    x = min(p, 1)\n",
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
        "        self.weight = nn.Parameter(torch.zeros(1))\n"
        "        getattr(self, 'weight', None)\n"
        "        getattr(getattr(torch, 'version', None), 'hip', None)\n"
    )
    assert checks(OK_CLASS + body) == set()


# The allowlist: each family of escape is refused by a general rule, not by its example.
@pytest.mark.parametrize(
    "body",
    [
        "def f():\n    torch.os.system('x')\n",
        "def f():\n    return torch.sys.modules\n",
        "def f():\n    return torch.ctypes.CDLL(None)\n",
        "def f():\n    return torch.threading.Thread\n",
        "def f():\n    return torch.importlib.import_module('os')\n",
        "def f():\n    return torch.inspect.currentframe()\n",
        "def f():\n    return triton.knobs.runtime\n",
        "r = triton.language.core\n",
        "import operator\ng = operator.attrgetter('__globals__')\n",
        "def f(x):\n    return getattr(x, 'tolist')()\n",
        "def f(fr):\n    return getattr(fr, 'f_locals')\n",
        "def f(g):\n    return g.gi_frame.f_back\n",
        "def f(x):\n    return x.__class__.__mro__\n",
        "def f():\n    return print.__self__.__import__('os')\n",
        "def f():\n    return torch.library.Library('aten', 'IMPL')\n",
        "def f():\n    return torch.overrides.TorchFunctionMode\n",
        "def f():\n    return torch.utils._python_dispatch\n",
        "def f(k):\n    k.add_pre_run_hook(print)\n",
        "def f(x):\n    return type(x)\n",
        "def f():\n    return open('/etc/passwd')\n",
        "def f():\n    return globals()\n",
        "def f(x):\n    return x.untyped_storage()\n",
        "def f(x):\n    return x.register_hook(print)\n",
        "if __name__ != 'autotriton_candidate':\n    pass\n",
        "class Sneaky:\n    def __torch_function__(self, *a):\n        pass\n",
        "class Meta(type):\n    pass\n",
        "class Lazy(torch.Tensor):\n    pass\n",
        "import contextlib\nctx = contextlib.suppress(Exception)\n",
        "def f(s):\n    return getattr(s, s)\n",
        "@triton.autotune(configs=[triton.Config({}, pre_hook=lambda a: a)], key=[])\n@triton.jit\ndef k9(p):\n    pass\n",
        "@triton.autotune(configs=[], key=[], do_bench=lambda f, quantiles: 1.0)\n@triton.jit\ndef k9(p):\n    pass\n",
        "@triton.autotune(configs=[], key=[], pre_hook=print)\n@triton.jit\ndef k9(p):\n    pass\n",
        "def work(args):\n    return 1\n@triton.heuristics({'D': work})\n@triton.jit\ndef k9(p, D: tl.constexpr):\n    pass\n",
        "@triton.heuristics({'D': lambda a: torch.relu(a['p']).sum()})\n@triton.jit\ndef k9(p, D: tl.constexpr):\n    pass\n",
        "def f(x, n):\n    g = lambda meta: (x.add_(1), n)\n    return g\n",
        # Modules reached as names of allowed modules (they open what those modules import).
        "import typing\ndef f():\n    return typing.sys\n",
        "import torch.nn.functional as F\ndef f(a):\n    return F.np\n",
        "def f():\n    return torch.nn.init.torch\n",
        "def f():\n    return tl.math.core\n",
        "def f():\n    return triton.runtime.jit\n",
        # A private name, or one of the judge's, made legal by defining it in a class.
        "class N:\n    _disable_current_modes = None\ndef f(m):\n    return m._disable_current_modes()\n",
        "class N:\n    compute = None\ndef f(mode):\n    mode.compute.clear()\n",
        "class N:\n    own = None\ndef f(mode):\n    return getattr(mode, 'own')\n",
        # Third review: values in allowed modules that carry modules, shadowed builtins,
        # eval through annotations, dispatch guards, `self` outside methods, format fields.
        "def f():\n    return triton.language.extra.modules['os']\n",
        "def f():\n    return tl.extra.module_from_spec\n",
        "def f(eval):\n    pass\ndef g():\n    return eval('1')\n",
        "X = [getattr for getattr in ()]\n",
        "import typing\ndef f():\n    return typing.get_type_hints(f)\n",
        "def f(x):\n    with torch.ExcludeDispatchKeyGuard(torch.DispatchKeySet(torch.DispatchKey(13))):\n        return x\n",
        "class N:\n    compute = None\ndef f(self):\n    return self.compute\n",
        "def f(k):\n    return '{0.fn.__globals__}'.format(k)\n",
        "S = '{0}'\ndef f(k):\n    return S.format(k)\n",
        # Fourth review: annotations and lambda defaults run, modules passed as values,
        # match captures, .format taken as a value, __exit__ swallowing, torch's
        # TorchScript and file writers.
        "def f(x: __import__('os')):\n    pass\n",
        "def f() -> vars(torch):\n    pass\n",
        "g = lambda x=__import__('os'): x\n",
        "class P:\n    def get(self):\n        return self\ndef f():\n    return P.get(torch.cuda)\n",
        "def f(o):\n    match o:\n        case x:\n            return x\n",
        "def f(k):\n    g = '{0}'.format\n    return g(k)\n",
        "class C:\n    def __enter__(self):\n        return self\n    def __exit__(self, *a):\n        return True\n",
        "def f():\n    return torch.CompilationUnit('')\n",
        "def f():\n    return torch.PyTorchFileWriter('x')\n",
        "class N:\n    os = None\ndef f(v):\n    return v.os\n",
    ],
)
def test_allowlist_refuses_escapes(body):
    assert checks(OK_CLASS + body), body


def test_launch_hooks_and_impure_lambdas_are_named():
    assert "launch_hook" in checks(OK_CLASS + "grid = lambda meta: (torch.relu(meta['x']).sum(),)\n")
    assert "launch_hook" in checks(
        OK_CLASS + "@triton.autotune(configs=[], key=[], pre_hook=print)\n@triton.jit\ndef k9(p):\n    pass\n"
    )


REAL_WORLD = """
import functools
import logging
import math
import operator
from contextlib import nullcontext
import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra import libdevice

logger = logging.getLogger(__name__)
IS_HIP = getattr(getattr(torch, "version", None), "hip", None) is not None
TRITON_MAJOR = int(triton.__version__.split(".")[0])


@functools.lru_cache(maxsize=None)
def calculate_settings(n):
    block = triton.next_power_of_2(n)
    num_warps = 4 if block < 2048 else 8 if block < 8192 else 16
    return block, num_warps


def get_configs():
    return [triton.Config({"BLOCK": b}, num_warps=w) for b in (64, 128) for w in (2, 4) if b * w <= 512]


def _impl(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, libdevice.tanh(x) * x, mask=offs < n)


_kernel = triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})(triton.jit(_impl))
tuned = triton.autotune(configs=get_configs(), key=["n"])(_kernel)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        n = functools.reduce(operator.mul, x.shape, 1)
        block, warps = calculate_settings(min(n, 1024))
        logger.debug("launch with %d", block)
        out = torch.empty_like(x)
        with torch.cuda.device(x.device) if x.is_cuda else nullcontext():
            tuned[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
        return out.view(x.shape) if math.prod(x.shape) == n else out
"""


def test_host_code_as_people_write_it_is_allowed():
    res = lint(REAL_WORLD)
    assert [p.message for p in res.problems] == []
    assert "_impl" in res.kernels


def test_own_names_stay_usable_on_self_and_registered_buffers_count():
    body = (
        "class ModelNew(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.register_buffer('scale', torch.ones(4))\n"
        "        self._model = None\n"
        "        self.compute = 1\n"
        "    @torch.no_grad()\n"
        "    def forward(self, x):\n"
        "        cfg = self.scale\n"
        "        return x * self.compute, self._model, cfg.scale if False else cfg\n"
    )
    assert checks(body) == set()


def test_plain_format_strings_and_methods_stay_allowed():
    body = (
        "class ModelNew(nn.Module):\n"
        "    def forward(self, x):\n"
        "        name = 'block {} of {:>4}'.format(1, 2)\n"
        "        return x\n"
    )
    assert checks(body) == set()


def test_self_is_trusted_only_as_a_methods_own_object():
    """A nested function may take `ctx` first (Liger's decorators do), but is not trusted
    with it: attributes named like a tensor's may be set only on a method's own object."""
    nested = (
        "def wrap(fn):\n"
        "    def wrapper(ctx, *args):\n"
        "        return fn(ctx, *args)\n"
        "    return wrapper\n"
    )
    assert checks(OK_CLASS + nested) == set()
    store = "def hook(self, out):\n    self.detach = print\n"
    assert checks(OK_CLASS + store) == {"monkeypatch"}
    method = "class H:\n    def attach(self, fn):\n        self.detach = fn\n"
    assert checks(OK_CLASS + method) == set()


def test_the_stream_and_event_names_cover_this_build():
    """The names are written out (dir() differs between CUDA and CPU builds); every public
    name this build's streams and events have is among them."""
    import torch

    from autotriton_jupyter.verify.static import _STREAM_NAMES

    here = set(dir(torch.cuda.Stream)) | set(dir(torch.cuda.Event)) | set(dir(torch.Stream)) | set(dir(torch.Event))
    assert {n for n in here if not n.startswith("_")} <= _STREAM_NAMES

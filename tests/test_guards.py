"""A candidate's methods check their own object: neither `Own.method(obj)` nor a raw copy
of the function (kept in a tuple, or by a decorator) can make any object `self` (the lint
trusts self and ctx with attributes of the candidate's own)."""

from __future__ import annotations

import ast
import builtins

import pytest
import torch

from autotriton_jupyter.verify import probes

SOURCE = '''
import torch

STASH = []


def keep(fn):
    STASH.append(fn)
    return fn


class Hook:
    def attach(self, fn):
        """Docstrings stay first."""
        self.hit = fn
        return self

    @keep
    def grab(self):
        return 1

    @staticmethod
    def helper(self, x):
        return x

    @property
    def size(self):
        return 3

    tools = (attach,)

    def plant(cls, fn):
        cls.hit = fn

    @classmethod
    @keep
    def make(cls):
        return cls()


class Fn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.seen = True
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


def raises_at(line):
    raise ValueError(line)
'''


@pytest.fixture()
def module():
    before = builtins.__build_class__
    probes.register_classes("guarded_candidate")
    try:
        ns = {"__name__": "guarded_candidate"}
        tree = probes.guard_source(ast.parse(SOURCE))
        exec(compile(tree, "guarded_candidate.py", "exec"), ns)
        yield ns
    finally:
        builtins.__build_class__ = before


def test_methods_refuse_a_foreign_self_however_they_are_reached(module):
    Hook = module["Hook"]
    h = Hook().attach(print)
    assert h.hit is print and h.size == 3 and Hook.helper(h, 5) == 5 and h.grab() == 1
    assert Hook.attach.__doc__ == "Docstrings stay first."
    storage = torch.zeros(4).untyped_storage()
    for call in (
        lambda: Hook.attach(storage, print),
        lambda: Hook.tools[0](storage, print),  # a raw copy kept in the class body
        lambda: module["STASH"][0](storage),  # a raw copy kept by a decorator
        lambda: Hook.helper(storage, 5),
        lambda: Hook.size.fget(storage),
        lambda: Hook.plant(torch.Tensor, print),  # cls: a class, and one of its own
        lambda: module["STASH"][1](torch.Tensor),  # a real classmethod's raw copy
    ):
        with pytest.raises(TypeError, match="own object must be one of its class"):
            call()
    assert not hasattr(storage, "hit") and not hasattr(torch.Tensor, "hit")
    assert isinstance(Hook.make(), Hook)


def test_autograd_functions_still_run_and_refuse_a_foreign_ctx(module):
    Fn = module["Fn"]
    x = torch.ones(3, requires_grad=True)
    y = Fn.apply(x)
    y.sum().backward()
    assert torch.equal(y.detach(), torch.full((3,), 2.0)) and torch.equal(x.grad, torch.full((3,), 2.0))
    with pytest.raises(TypeError):
        Fn.forward(torch.zeros(1).untyped_storage(), x)


def test_line_numbers_are_kept(module):
    with pytest.raises(ValueError) as e:
        module["raises_at"](1)
    assert e.traceback[-1].lineno + 1 == SOURCE.splitlines().index("    raise ValueError(line)") + 1


def test_the_guards_name_is_the_judges():
    with pytest.raises(ValueError, match="judge's"):
        probes.guard_source(ast.parse(f"{probes.GUARD_NAME} = print\n"))

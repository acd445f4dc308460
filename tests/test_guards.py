"""A candidate's methods check their own object: `Own.method(obj)` cannot make any object
`self` (the lint trusts self, cls and ctx with attributes of the candidate's own)."""

from __future__ import annotations

import builtins

import pytest
import torch

from autotriton_jupyter.verify import probes

SOURCE = '''
import torch

class Hook:
    def attach(self, fn):
        self.hit = fn
        return self

    @staticmethod
    def helper(self, x):
        return x

    @property
    def size(self):
        return 3

class Fn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.seen = True
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2
'''


@pytest.fixture()
def module():
    before = builtins.__build_class__
    probes.guard_classes("guarded_candidate")
    try:
        ns = {"__name__": "guarded_candidate"}
        exec(compile(SOURCE, "guarded_candidate.py", "exec"), ns)
        yield ns
    finally:
        builtins.__build_class__ = before


def test_methods_refuse_a_foreign_self(module):
    Hook = module["Hook"]
    h = Hook().attach(print)
    assert h.hit is print and h.size == 3 and Hook.helper(h, 5) == 5
    storage = torch.zeros(4).untyped_storage()
    with pytest.raises(TypeError, match="through its class with another object"):
        Hook.attach(storage, print)
    with pytest.raises(TypeError):
        Hook.helper(storage, 5)
    with pytest.raises(TypeError):
        Hook.size.fget(storage)
    assert not hasattr(storage, "hit")


def test_autograd_functions_still_run_and_refuse_a_foreign_ctx(module):
    Fn = module["Fn"]
    x = torch.ones(3, requires_grad=True)
    y = Fn.apply(x)
    y.sum().backward()
    assert torch.equal(y.detach(), torch.full((3,), 2.0)) and torch.equal(x.grad, torch.full((3,), 2.0))
    with pytest.raises(TypeError):
        Fn.forward(torch.zeros(1).untyped_storage(), x)


def test_classes_of_other_modules_are_left_alone(module):
    class Local:
        def m(self):
            return 1

    assert Local.m(object()) == 1  # not the candidate's module: unguarded

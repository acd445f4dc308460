"""Projections of timed outputs (verify/fingerprint.py), on the CPU: an output within
tolerance agrees with the reference's projection, and garbage, zeros, stale outputs, a
different NaN pattern or a tensor subclass do not."""

from __future__ import annotations

import torch

from autotriton_jupyter.verify import fingerprint

ATOL = RTOL = 1e-2


def _check(out, ref, seed=7):
    p = fingerprint.Projection(seed)
    got = [t.tolist() for t in p.take(out)]
    return fingerprint.agrees(got, fingerprint.Projection(seed).reference(ref, ATOL, RTOL))


def test_an_output_within_tolerance_agrees_and_garbage_does_not():
    g = torch.Generator().manual_seed(0)
    ref = torch.randn(300, 257, generator=g)
    for _ in range(20):  # the worst honest error: every element at its tolerance, random sign
        sign = torch.randint(0, 2, ref.shape, generator=g) * 2 - 1
        assert _check(ref + sign * (ATOL + RTOL * ref.abs()), ref) is None
    assert "projection" in _check(torch.zeros_like(ref), ref)
    assert "projection" in _check(torch.randn(ref.shape, generator=g), ref)  # a stale output
    half = ref.clone()
    half[:150] = 0  # work skipped on half the rows
    assert "projection" in _check(half, ref)


def test_nan_and_inf_must_sit_where_the_reference_has_them():
    ref = torch.randn(64)
    ref[3], ref[9] = float("nan"), float("inf")
    assert _check(ref.clone(), ref) is None
    moved = ref.clone()
    moved[3], moved[4] = 0.5, float("nan")
    assert "NaN or inf" in _check(moved, ref)


def test_tuples_subclasses_and_layouts():
    a, b = torch.randn(8, 16), torch.randn(5)
    assert _check((a.t().contiguous().t(), b), (a, b)) is None  # the layout does not matter
    assert "1 output tensors where the reference has 2" in fingerprint.agrees([[0.0] * 17], fingerprint.Projection(1).reference((a, b), ATOL, RTOL))

    class Sneaky(torch.Tensor):
        pass

    assert "not a number" in _check(a.as_subclass(Sneaky), a)


def test_the_weights_are_secret_and_repeatable():
    x = torch.randn(1000)
    one = fingerprint.Projection(1).take(x)[0]
    assert torch.equal(one, fingerprint.Projection(1).take(x)[0])
    assert not torch.equal(one, fingerprint.Projection(2).take(x)[0])


def test_integers_must_be_equal_and_complex_parts_both_count(monkeypatch):
    idx = torch.arange(1000)
    off = idx.clone()
    off[5] += 1  # one index off by one: a float tolerance would forgive it
    assert _check(idx.clone(), idx) is None and "projection" in _check(off, idx)
    c = torch.randn(400, dtype=torch.complex64)
    wrong = c.clone()
    wrong.imag *= -1  # the imaginary parts negated: the real parts alone would not see it
    assert _check(c.clone(), c) is None and "projection" in _check(wrong, c)


def test_chunks_give_the_same_sums_and_huge_values_keep_a_scale(monkeypatch):
    x = torch.randn(1000) * 1e30  # a float32 square of the tolerance would be infinite
    whole = fingerprint.Projection(3).reference(x, 1e-2, 1e-2)
    monkeypatch.setattr(fingerprint, "CHUNK", 32)
    chunked = fingerprint.Projection(3).reference(x, 1e-2, 1e-2)
    assert all(abs(a - b) <= 1e-9 * max(1.0, abs(a)) for a, b in zip(whole[0], chunked[0]))
    assert all(0 < v < float("inf") for v in whole[0][fingerprint.STRIPES + 1 :])
    assert _check(x * (1 + 1e-3), x) is None


def test_float64_outputs_are_projected_in_float64():
    """A tolerance under float32's precision: an honest float64 output within it agrees,
    and one just past it does not."""
    g = torch.Generator().manual_seed(1)
    ref = torch.randn(1 << 14, dtype=torch.float64, generator=g)
    tol = 1e-10
    p = fingerprint.Projection(3)
    want = p.reference(ref, tol, tol)
    for _ in range(5):
        sign = torch.randint(0, 2, ref.shape, generator=g).double() * 2 - 1
        near = ref + sign * (tol + tol * ref.abs())  # every element at its tolerance
        assert fingerprint.agrees([t.tolist() for t in p.take(near)], want) is None
    off = ref + 50 * (tol + tol * ref.abs())  # every element past it, the same way
    assert fingerprint.agrees([t.tolist() for t in p.take(off)], want) is not None

"""The timed calls' varied inputs (verify/vary.py), on the CPU: which tensors vary, by how
much, and that the reference's worker can make a call's inputs again exactly."""

from __future__ import annotations

import torch

from autotriton_jupyter.verify import vary


def _sets():
    g = torch.Generator().manual_seed(0)
    return [
        [
            torch.randn(64, 33, generator=g),  # varied
            torch.randint(0, 10, (7,), generator=g),  # integers: kept
            (torch.rand(12, generator=g) > 0.5).float(),  # a mask kept as floats: kept
            torch.rand(5, generator=g) > 0.5,  # booleans: kept
            2.5,  # not a tensor
        ]
        for _ in range(2)
    ]


def test_only_floats_with_fractions_vary():
    assert vary.varied_positions(_sets()[0]) == [0]
    assert vary.varied_positions([torch.empty(0), torch.tensor(3.0), torch.tensor(0.25)]) == [2]


def test_each_call_sees_new_values_within_the_factors_range():
    sets = _sets()
    v = vary.Variation(99, sets)
    seen = []
    for call in range(20):
        x = vary.varied_copy(sets[call % 2], v, call % 2, call)
        base = sets[call % 2]
        ratio = x[0] / base[0]
        # An element's factor times the tensor's: no sign changes, magnitudes only shrink.
        assert bool(((ratio >= vary.LOW**2) & (ratio < vary.HIGH)).all())
        assert all(torch.equal(a, b) for a, b in zip(x[1:4], base[1:4]))
        assert x[4] == 2.5
        seen.append(x[0])
    assert len({tuple(t.flatten()[:8].tolist()) for t in seen}) == 20


def test_the_same_seed_and_call_give_the_same_inputs_whatever_the_layout():
    sets = _sets()
    a = vary.varied_copy(sets[1], vary.Variation(5, sets), 1, 17)
    b = vary.varied_copy(sets[1], vary.Variation(5, sets), 1, 17)
    assert torch.equal(a[0], b[0])
    # The reference's copy of a set may be laid out otherwise (a transposed view): the
    # factors follow the elements' logical order, so the values are the same.
    t = [sets[1][0].t().contiguous().t(), *sets[1][1:]]
    assert not t[0].is_contiguous()
    c = vary.varied_copy(t, vary.Variation(5, [t, t]), 1, 17)
    assert torch.equal(c[0], a[0])
    other_seed = vary.varied_copy(sets[1], vary.Variation(6, sets), 1, 17)
    other_call = vary.varied_copy(sets[1], vary.Variation(5, sets), 1, 18)
    assert not torch.equal(other_seed[0], a[0]) and not torch.equal(other_call[0], a[0])


def test_long_tensors_never_repeat_their_factors_and_low_precision_is_scaled_in_place(monkeypatch):
    """Factors drawn in chunks (bounded memory) are new for every chunk: a repeated pattern
    would let a kernel rebuild a varied output from statistics of the base set."""
    monkeypatch.setattr(vary, "PERIOD", 16)
    x = torch.randn(64, dtype=torch.float64)
    v = vary.Variation(1, [[x]])
    r = (vary.varied_copy([x], v, 0, 0)[0] / x).view(4, 16)
    assert all(not torch.allclose(r[0], r[k]) for k in range(1, 4))
    h = torch.randn(50, dtype=torch.bfloat16)
    y = vary.varied_copy([h], vary.Variation(1, [[h]]), 0, 0)[0]
    assert y.dtype == torch.bfloat16 and not torch.equal(h, y)


def test_the_reference_decides_how_inputs_can_be_varied():
    g = torch.Generator().manual_seed(1)

    def softmax(x):
        return torch.softmax(x, dim=-1)

    def cholesky(a):  # needs a symmetric positive definite matrix: D a D is one
        return torch.linalg.cholesky(a)

    def level(a):  # NaN unless every element is the same: only a factor for the whole keeps that
        return torch.sqrt(1e-6 - (a - a.mean()) ** 2)

    def log_det(a):  # NaN once a is no longer positive definite
        return torch.logdet(a)

    def picky(x):
        if not torch.equal(x, base):
            raise ValueError("only the one input")
        return x

    x = torch.randn(64, 64, generator=g)
    low = torch.randn(64, 32, generator=g, dtype=torch.float64)
    spd = low @ low.T / 32 + 1e-3 * torch.eye(64, dtype=torch.float64)  # barely definite
    base = torch.randn(8, generator=g)
    assert vary.probe_modes(softmax, [[x]], [softmax(x)], 1) == "elements"
    assert vary.probe_modes(cholesky, [[spd]], [cholesky(spd)], 1) == "congruent"
    assert vary.probe_modes(log_det, [[spd]], [log_det(spd)], 1) == "congruent"
    flat = torch.full((16, 16), 0.375, dtype=torch.float64)
    assert vary.probe_modes(level, [[flat]], [level(flat)], 1) == "tensor"
    assert vary.probe_modes(picky, [[base]], [picky(base)], 1) == "none"
    whole = torch.randint(0, 5, (8,))
    assert vary.probe_modes(lambda i: i * 2, [[whole]], [whole * 2], 1) == "none"
    # One factor per tensor: the same for every element, new for every call.
    v = vary.Variation(3, [[spd]], "tensor")
    a, b = (vary.varied_copy([spd], v, 0, c)[0] / spd for c in (0, 1))
    assert torch.allclose(a, a[0, 0]) and not torch.allclose(a, b)
    assert vary.LOW <= float(a[0, 0]) < vary.HIGH


def test_an_output_that_averages_over_the_input_moves_too():
    """A loss or a mean hardly moves with factors per element alone (their average is
    the same every call), so a stale output would pass for it: the factor for the whole
    tensor moves it by far more than a 1% tolerance."""
    x = torch.rand(1 << 16, generator=torch.Generator().manual_seed(2)) + 1.0
    v = vary.Variation(5, [[x]])
    means = [float(vary.varied_copy([x], v, 0, c)[0].mean()) for c in range(6)]
    assert max(means) / min(means) > 1.05


def test_congruent_variation_keeps_a_matrix_symmetric_and_definite_but_not_rescalable():
    """Per row and column: a[i, j] * d_i * d_j for square matrices (symmetry and
    definiteness kept, so a Cholesky task runs on it), r_i * c_j otherwise; no single
    factor relates a varied call to the base set (a kernel cannot read one element and
    rescale an output it kept), each call's factors are new, and the same seed and call
    give the same values whatever the layout."""
    g = torch.Generator().manual_seed(4)
    low = torch.randn(3, 48, 24, generator=g, dtype=torch.float64)
    spd = low @ low.transpose(-1, -2) / 24 + 1e-3 * torch.eye(48, dtype=torch.float64)
    spd = (spd + spd.transpose(-1, -2)) / 2  # exactly symmetric
    wide = torch.randn(40, 24, generator=g)
    vec = torch.rand(30, generator=g) + 0.5
    v = vary.Variation(9, [[spd, wide, vec]], "congruent")
    s0, w0, v0 = vary.varied_copy([spd, wide, vec], v, 0, 0)
    s1, w1, _ = vary.varied_copy([spd, wide, vec], v, 0, 1)
    assert torch.equal(s0, s0.transpose(-1, -2))
    torch.linalg.cholesky(s0)  # still positive definite
    for varied, base in ((s0, spd), (w0, wide), (v0, vec)):
        ratio = varied / base
        assert torch.all(ratio > 0) and torch.all(ratio < 1)  # signs and ranges kept
        assert not torch.allclose(ratio, ratio.flatten()[0])  # not one factor
    # rank one per matrix: ratio[i, j] * ratio[k, l] == ratio[i, l] * ratio[k, j]
    r = w0 / wide
    assert torch.allclose(r[:, :1] * r[:1, :], r * r[0, 0], rtol=1e-4)
    assert not torch.allclose(s0, s1) and not torch.allclose(w0, w1)
    # The reference's copy, laid out otherwise, is varied the same.
    transposed = wide.T.contiguous().T
    assert not transposed.is_contiguous()
    again = vary.varied_copy([spd, transposed, vec], v, 0, 0)
    assert torch.equal(again[1], w0) and torch.equal(again[0], s0)


def test_running_out_of_memory_while_probing_never_weakens_the_variation():
    """An out-of-memory error says nothing of what the task takes: the mode being tried
    stands (a weaker one would let a kernel rescale a kept output)."""
    calls = []

    def hungry(x):
        calls.append(1)
        if len(calls) > 1:  # the base run fits, the varied copy does not
            raise torch.OutOfMemoryError("CUDA out of memory")
        return x * 2

    x = torch.randn(32, 32)
    assert vary.probe_modes(hungry, [[x]], [hungry(x)], 1) == "elements"


def test_a_kept_cholesky_factor_cannot_be_rescaled_to_a_congruent_call():
    """A kernel for a Cholesky task can name its input set by a statistic that a factor per
    row and column leaves unchanged (A_ij / sqrt(A_ii A_jj)), read those factors off the
    diagonal and rescale the factor it kept (chol(D A D) = D chol(A)). The off-diagonal
    shrink defeats it: the rescaled output misses the varied call's by far more than any
    tolerance, while the reference still takes the input."""
    g = torch.Generator().manual_seed(6)
    x = torch.randn(64, 128, generator=g, dtype=torch.float64)
    a = x @ x.T / 128 + 0.1 * torch.eye(64, dtype=torch.float64)
    a = (a + a.T) / 2
    kept = torch.linalg.cholesky(a)
    v = vary.Variation(11, [[a]], "congruent")
    for call in range(5):
        varied = vary.varied_copy([a], v, 0, call)[0]
        honest = torch.linalg.cholesky(varied)  # still positive definite
        d = torch.sqrt(torch.diagonal(varied) / torch.diagonal(a))  # the attacker's estimate
        rescaled = d[:, None] * kept
        assert not torch.allclose(rescaled, honest, atol=1e-2, rtol=1e-2)


def test_congruent_factors_match_their_precision_and_do_not_depend_on_how_they_are_applied(monkeypatch):
    """float64 matrices get float64 factors (a badly conditioned one stays definite), and
    applying them in small blocks, or to batch dimensions that cannot be merged, gives the
    very same values as all at once (the reference's copy may be laid out otherwise)."""
    q, _ = torch.linalg.qr(torch.randn(48, 48, generator=torch.Generator().manual_seed(7), dtype=torch.float64))
    ill = q @ torch.diag(torch.logspace(0, -10, 48, dtype=torch.float64)) @ q.T
    ill = (ill + ill.T) / 2
    v = vary.Variation(13, [[ill]], "congruent")
    for call in range(10):
        torch.linalg.cholesky(vary.varied_copy([ill], v, 0, call)[0])
    batch = torch.randn(3, 4, 10, 6, generator=torch.Generator().manual_seed(8))
    permuted = batch.permute(1, 0, 2, 3).contiguous().permute(1, 0, 2, 3)  # batch dims that cannot merge
    w = vary.Variation(17, [[batch]], "congruent")
    whole = vary.varied_copy([batch], w, 0, 2)[0]
    monkeypatch.setattr(vary, "PERIOD", 7)  # a few rows at a time
    assert torch.equal(vary.varied_copy([batch], w, 0, 2)[0], whole)
    assert torch.equal(vary.varied_copy([permuted], w, 0, 2)[0], whole)

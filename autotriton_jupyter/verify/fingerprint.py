"""A secret random projection of every timed call's output, checked against the reference.

Only a few timed outputs are kept whole for the judge. A kernel that could tell a timed
call from a checked one (the varied inputs of vary.py have a pattern of their own) might
skip its work on most timed calls and still pass those few. So every timed call's output
is reduced, outside the timed window and without synchronising, to a few numbers per
tensor: Σ wᵢ·xᵢ over its finite elements in each of STRIPES stripes (elements by index
modulo STRIPES), and Σ wᵢ·codeᵢ over the others (NaN 1, +inf 2, -inf 3), with weights wᵢ
drawn in [-1, 1) from a secret seed. Afterwards the judge picks calls at random and has
the reference compute the same numbers on the same varied inputs.

An honest output is within tolᵢ = atol + rtol·|refᵢ| of the reference element by element,
with errors eᵢ that cannot depend on the secret weights. Each stripe's sum then differs
from the reference's by Σ wᵢ·eᵢ, a sum of independent terms, each sub-Gaussian with
variance proxy eᵢ²/3 (a uniform weight's variance), however the errors are correlated:
it exceeds SIGMAS·sqrt(Σ tolᵢ²/3) with probability at most 2·exp(-SIGMAS²/2). An output that is garbage, stale or zeros differs in
each stripe by a random amount about as large as its distance from the reference: it
must fall inside the bound in every stripe of every call checked.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

SIGMAS = 7.0  # an honest output fails a stripe with probability < 5e-11 (see below)
STRIPES = 16  # independent projections per tensor: elements by index modulo STRIPES
CHECKED = 16  # timed calls whose projections the judge checks, drawn after the timing
CHUNK = STRIPES << 20  # elements projected at a time: temporaries stay small

# Looked up once, before any candidate code runs: replacing torch's functions later is
# caught by the judge's snapshot, and these keep working meanwhile.
_sum, _mul, _nan_to_num, _abs, _cat, _full, _zeros, _view_as_real = (
    torch.sum, torch.Tensor.mul, torch.nan_to_num, torch.abs, torch.cat, torch.full,
    torch.zeros, torch.view_as_real,
)
_detach, _reshape, _float, _double = (
    torch.Tensor.detach, torch.Tensor.reshape, torch.Tensor.float, torch.Tensor.double
)
_Tensor = torch.Tensor


def _flat(x: torch.Tensor) -> torch.Tensor:
    """The elements in logical order (whatever the layout, which may differ between the
    candidate's output and the reference's); a complex tensor's real and imaginary parts
    one after the other."""
    x = _detach(x)
    if x.is_complex():
        x = _view_as_real(x)
    return _reshape(x, (-1,))


def _leaves(out: Any) -> list[torch.Tensor]:
    return list(out) if type(out) in (tuple, list) else [out]


def _stripes(v: torch.Tensor, out: torch.Tensor) -> None:
    """Add v's elements to `out` by index modulo STRIPES (v starts at a multiple of it)."""
    n = v.numel()
    whole = n - n % STRIPES
    out += _sum(_reshape(v[:whole], (-1, STRIPES)), 0, dtype=torch.float64)
    if whole < n:
        out[: n - whole] += v[whole:].to(torch.float64)


class Projection:
    """Weights for each output tensor, drawn once from the seed by its position and size."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._weights: dict[tuple[int, int, str], torch.Tensor] = {}

    def _w(self, i: int, flat: torch.Tensor) -> torch.Tensor:
        key = (i, flat.numel(), str(flat.device))
        if key not in self._weights:
            g = torch.Generator(device=flat.device)
            g.manual_seed((self.seed * 31 + i) % (1 << 63))
            w = torch.empty(flat.numel(), dtype=torch.float32, device=flat.device)
            torch.Tensor.uniform_(w, -1.0, 1.0, generator=g)
            self._weights[key] = w
        return self._weights[key]

    def take(self, out: Any) -> list[torch.Tensor]:
        """Per output tensor, STRIPES + 1 float64 numbers left on the device: the weighted
        sums of its finite elements by stripe, then the weighted sum of its NaN/inf codes."""
        got = []
        for i, x in enumerate(_leaves(out)):
            if type(x) is not _Tensor:  # a subclass could answer for its own sums: not a number
                got.append(_full((STRIPES + 1,), float("nan"), dtype=torch.float64))
                continue
            flat = _flat(x)
            w = self._w(i, flat)
            sums = _zeros(STRIPES + 1, dtype=torch.float64, device=flat.device)
            # float64 outputs in float64: a tolerance under float32's precision (1e-10, say)
            # must not fail an honest output that compares within it.
            widen = _double if flat.dtype == torch.float64 else _float
            for a in range(0, flat.numel(), CHUNK):
                part, wp = widen(flat[a : a + CHUNK]), w[a : a + CHUNK]
                finite = _nan_to_num(part, nan=0.0, posinf=0.0, neginf=0.0)
                codes = _nan_to_num(part, nan=1.0, posinf=2.0, neginf=3.0) - finite
                _stripes(_mul(finite, wp), sums[:STRIPES])
                sums[STRIPES] += _sum(_mul(codes, wp), dtype=torch.float64)
            got.append(sums)
        return got

    def reference(self, out: Any, atol: float, rtol: float) -> list[list[float]]:
        """The reference's projections, with the scale of an honest difference by stripe:
        per tensor [STRIPES sums, the non-finite sum, STRIPES scales sqrt(Σ tolᵢ²/3)].
        Integer and boolean outputs must be equal: their scale is 0. A complex element's
        tolerance is its magnitude's, for its real and its imaginary part alike."""
        rows = []
        for sums, x in zip(self.take(out), _leaves(out)):
            exact = not (x.is_floating_point() or x.is_complex())
            scale = _zeros(STRIPES, dtype=torch.float64, device=x.device)
            if not exact:
                mags = _abs(_detach(x))  # a complex element's magnitude
                if x.is_complex():
                    mags = torch.stack([mags, mags], dim=-1)
                flat = _reshape(mags, (-1,))
                for a in range(0, flat.numel(), CHUNK):
                    m = _nan_to_num(_double(flat[a : a + CHUNK]), nan=0.0, posinf=0.0, neginf=0.0)
                    tol = m * rtol + atol
                    _stripes(tol * tol, scale)
            rows.append(sums.tolist() + (scale / 3.0).sqrt().tolist())
        return rows


def agrees(got: Sequence[Sequence[float]], want: Sequence[Sequence[float]]) -> str | None:
    """None when a candidate's projections are within an honest difference of the
    reference's in every stripe (see Projection); else what differs."""
    if len(got) != len(want):
        return f"{len(got)} output tensors where the reference has {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        if len(g) != STRIPES + 1 or not all(isinstance(v, float) and math.isfinite(v) for v in g):
            return f"output {k}: a projection that is not a number"
        if abs(g[STRIPES] - w[STRIPES]) > 1e-6 * max(1.0, abs(w[STRIPES])):
            return f"output {k}: NaN or inf where the reference has none, or the reverse"
        for j in range(STRIPES):
            allowed = SIGMAS * w[STRIPES + 1 + j] + 1e-9 * abs(w[j])
            if abs(g[j] - w[j]) > allowed:
                return (
                    f"output {k}: a projection is {abs(g[j] - w[j]):.4g} from the reference's, "
                    f"where an output within tolerance differs by at most {allowed:.3g}"
                )
    return None

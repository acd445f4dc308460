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
with errors that cannot depend on the secret weights, so each stripe's sum differs from
the reference's by a sum of independent terms: by Hoeffding, more than SIGMAS·sqrt(Σ tolᵢ²/3)
with probability exp(-SIGMAS²/6). An output that is garbage, stale or zeros differs in
each stripe by a random amount about as large as its distance from the reference: it
must fall inside the bound in every stripe of every call checked.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

SIGMAS = 12.0  # Hoeffding: an honest output fails a stripe with probability < 1e-10
STRIPES = 16  # independent projections per tensor: elements by index modulo STRIPES
CHECKED = 16  # timed calls whose projections the judge checks, drawn after the timing

# Looked up once, before any candidate code runs: replacing torch's functions later is
# caught by the judge's snapshot, and these keep working meanwhile.
_sum, _mul, _nan_to_num, _abs, _cat, _full = (
    torch.sum, torch.Tensor.mul, torch.nan_to_num, torch.abs, torch.cat, torch.full
)
_detach, _reshape, _float = torch.Tensor.detach, torch.Tensor.reshape, torch.Tensor.float
_Tensor = torch.Tensor


def _flat(x: torch.Tensor) -> torch.Tensor:
    """The elements in logical order as float32 (whatever the layout, which may differ
    between the candidate's output and the reference's)."""
    return _float(_reshape(_detach(x), (-1,)))





def _leaves(out: Any) -> list[torch.Tensor]:
    return list(out) if isinstance(out, tuple | list) else [out]


def _stripes(v: torch.Tensor) -> torch.Tensor:
    """Sums of v's elements by index modulo STRIPES, in float64."""
    n = v.numel()
    whole = n - n % STRIPES
    sums = _sum(_reshape(v[:whole], (-1, STRIPES)), 0, dtype=torch.float64)
    if whole < n:
        tail = torch.zeros(STRIPES, dtype=torch.float64, device=v.device)
        tail[: n - whole] = v[whole:]
        sums = sums + tail
    return sums


class Projection:
    """Weights for each output tensor, drawn once from the seed by its position and size."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._weights: dict[tuple[int, int, str], torch.Tensor] = {}

    def _w(self, i: int, x: torch.Tensor) -> torch.Tensor:
        key = (i, x.numel(), str(x.device))
        if key not in self._weights:
            g = torch.Generator(device=x.device)
            g.manual_seed((self.seed * 31 + i) % (1 << 63))
            w = torch.empty(x.numel(), dtype=torch.float32, device=x.device)
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
            w = self._w(i, x)
            flat = _flat(x)
            finite = _nan_to_num(flat, nan=0.0, posinf=0.0, neginf=0.0)
            codes = _nan_to_num(flat, nan=1.0, posinf=2.0, neginf=3.0) - finite
            got.append(
                _cat([_stripes(_mul(finite, w)), _sum(_mul(codes, w), dtype=torch.float64)[None]])
            )
        return got

    def reference(self, out: Any, atol: float, rtol: float) -> list[list[float]]:
        """The reference's projections, with the scale of an honest difference by stripe:
        per tensor [STRIPES sums, the non-finite sum, STRIPES scales sqrt(Σ tolᵢ²/3)]."""
        rows = []
        for sums, x in zip(self.take(out), _leaves(out)):
            finite = _nan_to_num(_flat(x), nan=0.0, posinf=0.0, neginf=0.0)
            tol = _abs(finite) * rtol + atol
            scales = (_stripes(_mul(tol, tol)) / 3.0).sqrt()
            rows.append(sums.tolist() + scales.tolist())
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

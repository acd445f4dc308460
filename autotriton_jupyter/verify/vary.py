"""Inputs that no timed call has seen before.

Timing refills the same buffers with a few input sets, hundreds of times. A candidate
that keeps its outputs keyed by the inputs' values (a signature read on the device, say)
would compute each set once and copy the answer on every later call: right outputs, and
a figure that is only the copy's. So before each timed call the judge multiplies every
floating input, element by element, by factors drawn in [LOW, HIGH) from a secret seed
and the call's number, times one factor in [LOW, HIGH) for the whole tensor (so that
outputs that average over many elements move too): no two calls see the same values,
and the outputs kept for the
judge are checked against the reference run on the same varied inputs, which the
reference's worker makes again from the seed. A task whose reference cannot take factors
per element (a matrix that must stay positive definite) gets the strongest variation it
can take (MODES).

The factors only shrink magnitudes and never change a sign, so a range the task's
inputs keep (positive, within [-1, 1]) still holds. Float tensors whose values are all
whole numbers (masks, counts, positions kept as floats) are left alone, as are integer
and boolean ones: they often carry structure that scaling would break.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from typing import Any

import torch

LOW, HIGH = 0.5, 1.0
ROW_LOW = 0.25  # the two factors per row of a square matrix in "congruent" mode
PERIOD = 1 << 22  # factors drawn per launch: a longer tensor takes several (bounded memory)

# Looked up once: a candidate that replaces torch's methods is caught by the snapshot,
# and these keep working for the judge's own use meanwhile.
_mul, _uniform, _copy, _equal, _round, _isfinite = (
    torch.Tensor.mul_,
    torch.Tensor.uniform_,
    torch.Tensor.copy_,
    torch.equal,
    torch.round,
    torch.isfinite,
)


def varied_positions(values: Sequence[Any]) -> list[int]:
    """Which of an input set's values are varied: floating tensors that are not all whole."""
    out = []
    for i, x in enumerate(values):
        if isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel():
            if not _equal(x, _round(x)):
                out.append(i)
    return out


def _seed(seed: int, call: int, position: int) -> int:
    return (seed * 1_000_003 + call * 8191 + position) % (1 << 63)


# How inputs are varied, most thorough first:
# - "elements": each element by its own factor;
# - "congruent": each matrix (the last two dimensions) element by element by a matrix of
#   factors that keeps symmetry, definiteness and every sign (see Variation._congruent);
# - "tensor": each tensor by one factor (keeps every property that scaling keeps, but a
#   kernel whose output scales with its input could read one element and rescale a kept
#   output);
# - "none".
# The reference's task decides (probe_modes): the first mode the reference runs on, with no
# new NaN or inf. Tensors of fewer than two dimensions get factors per element in
# "congruent" mode (a factor per row of a vector is one per element).
MODES = ("elements", "congruent", "tensor", "none")


class Variation:
    """Varies buffers in place for a numbered call; the same numbers give the same values."""

    def __init__(self, seed: int, sets: Sequence[Sequence[Any]], mode: str = "elements") -> None:
        if mode not in MODES:
            raise ValueError(f"no such way to vary inputs: {mode!r}")
        self.seed = seed
        self.mode = mode
        self.positions = [varied_positions(s) if mode != "none" else [] for s in sets]
        self._scratch: dict[tuple[str, int], torch.Tensor] = {}

    @property
    def varies_anything(self) -> bool:
        return any(self.positions)

    def apply(self, buffers: Sequence[Any], set_index: int, call: int) -> None:
        for p in self.positions[set_index % len(self.positions)]:
            b = buffers[p]
            # One factor for the whole tensor: an output that averages over many elements
            # (a loss, a norm, a mean) hardly moves with factors per element alone, so a
            # stale output would pass for it; with this one it moves by up to half.
            whole = LOW + (HIGH - LOW) * random.Random(_seed(self.seed, call, p)).random()
            if self.mode == "tensor":
                _mul(b, whole)
                continue
            if self.mode == "congruent" and b.dim() >= 2:
                self._congruent(b, whole, _seed(self.seed, call, p))
                continue
            n = b.numel()
            noise = self._noise(b.device, min(n, PERIOD))
            g = torch.Generator(device=b.device)
            g.manual_seed(_seed(self.seed, call, p))
            # Factors follow the elements' logical order, whatever the layout: the
            # reference's copy of a set may be laid out otherwise than the candidate's.
            contiguous = b.is_contiguous()
            flat = b.view(-1) if contiguous else b.reshape(-1)
            for start in range(0, n, PERIOD):
                # New factors for every chunk (the generator moves on): none repeats, so
                # no statistic of the base set rebuilds a varied call's output.
                end = min(n, start + PERIOD)
                _uniform(noise, LOW * whole, HIGH * whole, generator=g)
                _mul(flat[start:end], noise[: end - start])
            if not contiguous:
                _copy(b, flat.view(b.shape))

    def _congruent(self, b: torch.Tensor, whole: float, seed: int) -> None:
        """Each matrix of `b` (the last two dimensions) times a matrix of factors F, in place:

        - square: F = whole * (a * d1 d1^T + (1 - a) * d2 d2^T), two independent factors
          per row and a mix a, all secret. F is positive semidefinite with a positive
          diagonal, so A * F (element by element) keeps A's symmetry (exactly: F_ij is
          computed as F_ji is), definiteness (Schur's product theorem) and signs. A
          kernel that saw A, and reads F off the varied call, still has to factor
          a D1 A D1 + (1 - a) D2 A D2 anew: no rescaling of an output it kept for A, and
          no small set of values to keep outputs for (one factor per row would allow
          the first, one shrink of the off-diagonal part the second);
        - any other: F = whole * r c^T, a factor per row and one per column.

        Factors are drawn in float64 for float64 tensors (float32 would round a badly
        conditioned matrix out of definiteness), and applied a block at a time (bounded
        memory, whatever the batch).
        """
        *batch, m, n = b.shape
        if b.numel() == 0:
            return
        g = torch.Generator(device=b.device)
        g.manual_seed(seed)
        ftype = torch.float64 if b.dtype == torch.float64 else torch.float32

        def draw(*shape: int, low: float = LOW) -> torch.Tensor:
            t = torch.empty(shape, dtype=ftype, device=b.device)
            _uniform(t, low, HIGH, generator=g)
            return t.reshape(-1, *shape[-2:])  # (matrices, rows or 1, 1 or columns)

        if m == n:
            # Spread wide enough that no factor per row is near F (in [0.5, 1), the rows'
            # pairs of factors are so alike that D chol(A) came within tolerance 1 in 10).
            d1, d2 = draw(*batch, m, 1, low=ROW_LOW), draw(*batch, m, 1, low=ROW_LOW)
            mix = LOW + (HIGH - LOW) * random.Random(seed ^ 0x5EED).random()
            pairs = ((d1, d1.transpose(-1, -2), mix * whole), (d2, d2.transpose(-1, -2), (1 - mix) * whole))
        else:
            pairs = ((draw(*batch, m, 1), draw(*batch, 1, n), whole),)
        try:
            mats = [b.view(-1, m, n)]
        except RuntimeError:  # batch dimensions that cannot merge: one matrix at a time
            mats = [b[i].unsqueeze(0) for i in itertools.product(*(range(k) for k in batch))]
        per = max(1, PERIOD // (m * n))  # at most PERIOD factors at a time
        step = m if per > 1 else max(1, PERIOD // n)
        first = 0
        for group in mats:
            for at in range(0, group.shape[0], per):
                k = slice(first + at, first + min(group.shape[0], at + per))
                for start in range(0, m, step):
                    end = min(m, start + step)
                    factor = None
                    for rows, cols, weight in pairs:  # the same order of operations for F_ij and F_ji
                        part = rows[k, start:end] * cols[k] * weight
                        factor = part if factor is None else factor + part
                    _mul(group[at : at + per, start:end], factor.to(b.dtype))
            first += group.shape[0]

    def _noise(self, device: torch.device, n: int) -> torch.Tensor:
        key = (str(device), n)
        if key not in self._scratch:
            self._scratch[key] = torch.empty(n, dtype=torch.float32, device=device)
        return self._scratch[key]


def varied_copy(values: Sequence[Any], variation: Variation, set_index: int, call: int) -> list[Any]:
    """A copy of an input set as the numbered call saw it (what the reference is run on)."""
    copy = [x.clone() if isinstance(x, torch.Tensor) else x for x in values]
    variation.apply(copy, set_index, call)
    return copy


def _finite_count(out: Any) -> int:
    leaves = list(out) if isinstance(out, tuple | list) else [out]
    return sum(
        int(_isfinite(x).sum()) for x in leaves if isinstance(x, torch.Tensor) and x.is_floating_point()
    )


PROBE_DRAWS = 3  # varied copies of each set a mode must take


def probe_modes(model: Any, sets: Sequence[Sequence[Any]], base_outs: Sequence[Any], seed: int) -> str:
    """The first of MODES the model takes on varied copies of every set in `sets`
    (PROBE_DRAWS calls each) without raising and without NaN or inf where its output on
    the set itself (`base_outs`) had none."""
    wants = [_finite_count(out) for out in base_outs]
    for mode in MODES[:-1]:
        variation = Variation(seed, sets, mode)
        if not variation.varies_anything:
            return "none"
        try:
            with torch.no_grad():
                ok = all(
                    _finite_count(model(*varied_copy(values, variation, k, call))) >= want
                    for call in range(PROBE_DRAWS)
                    for k, (values, want) in enumerate(zip(sets, wants))
                )
            if ok:
                return mode
        except torch.OutOfMemoryError:
            # No memory for a varied copy says nothing of what the task takes: the mode
            # stands rather than a weaker one (if the reference then fails on the varied
            # inputs while timed, the judge steps down a mode and says so).
            return mode
        except Exception:
            continue
    return "none"


def weaker(mode: str) -> str:
    """The next mode after `mode` in MODES ("none" stays "none")."""
    return MODES[min(MODES.index(mode) + 1, len(MODES) - 1)] if mode in MODES else "none"

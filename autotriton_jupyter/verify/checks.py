"""Judgements made in the trusted parent: output comparison and the null-output control."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch


@dataclass
class Comparison:
    """How one output (tensor or tuple) compares to the reference."""

    ok: bool
    message: str = ""
    max_abs: float = 0.0
    max_rel: float = 0.0


def _leaves(x: Any) -> list[Any]:
    return list(x) if isinstance(x, tuple | list) else [x]


def compare(out: Any, ref: Any, atol: float, rtol: float) -> Comparison:
    """Exact dtype and shape, same NaN/inf pattern, then |out-ref| <= atol + rtol*|ref|."""
    if isinstance(out, tuple | list) != isinstance(ref, tuple | list):
        kind = lambda v: "a tuple" if isinstance(v, tuple | list) else "a single tensor"  # noqa: E731
        return Comparison(False, f"forward returned {kind(out)}; the reference returns {kind(ref)}")
    outs, refs = _leaves(out), _leaves(ref)
    if len(outs) != len(refs):
        return Comparison(
            False, f"forward returned {len(outs)} outputs; the reference returns {len(refs)}"
        )
    worst_abs = worst_rel = 0.0
    for i, (o, r) in enumerate(zip(outs, refs)):
        where = f"output {i}" if len(refs) > 1 else "the output"
        if not isinstance(o, torch.Tensor):
            return Comparison(False, f"{where} is not a tensor")
        if o.dtype != r.dtype:
            return Comparison(False, f"{where} has dtype {o.dtype}; the reference gives {r.dtype}")
        if o.shape != r.shape:
            return Comparison(
                False, f"{where} has shape {tuple(o.shape)}; the reference gives {tuple(r.shape)}"
            )
        if not (o.is_floating_point() or o.is_complex()):
            if not torch.equal(o, r):
                n = int((o != r).sum())
                return Comparison(
                    False, f"{where} differs from the reference in {n} of {r.numel()} elements"
                )
            continue
        o64, r64 = (
            o.to(torch.complex128 if o.is_complex() else torch.float64),
            r.to(torch.complex128 if r.is_complex() else torch.float64),
        )
        on, rn = torch.isnan(o64), torch.isnan(r64)
        if not torch.equal(on, rn):
            extra = int((on & ~rn).sum())
            missing = int((rn & ~on).sum())
            return Comparison(
                False,
                f"{where} has NaN in {extra} places where the reference has none"
                if extra
                else f"{where} lacks {missing} NaNs the reference has",
                float("nan"),
                float("nan"),
            )
        oi, ri = torch.isinf(o64), torch.isinf(r64)
        if not torch.equal(oi, ri) or not torch.equal(o64[oi], r64[ri]):
            return Comparison(
                False,
                f"{where} has infinities where the reference has none (or the other way)",
                float("inf"),
                float("inf"),
            )
        finite = ~(rn | ri)
        if finite.any():
            diff = (o64[finite] - r64[finite]).abs()
            mag = r64[finite].abs()
            worst_abs = max(worst_abs, float(diff.max()))
            # Relative error where it means something: elements larger than atol (near
            # zero it is huge for any rounding, and atol is what judges those).
            sig = mag > atol
            if sig.any():
                worst_rel = max(worst_rel, float((diff[sig] / mag[sig]).max()))
            bad = diff > atol + rtol * mag
            if bad.any():
                n = int(bad.sum())
                flat = torch.nonzero(finite.reshape(-1)).reshape(-1)[int(torch.nonzero(bad)[0])]
                at = tuple(int(i) for i in torch.unravel_index(flat, r.shape)) if r.dim() else ()
                first = (
                    f"; first at index {list(at)}: {float(o64.reshape(-1)[flat]):.6g} where the "
                    f"reference gives {float(r64.reshape(-1)[flat]):.6g}"
                )
                return Comparison(
                    False,
                    f"{where} differs from the reference in {n} of {r.numel()} elements "
                    f"(max abs error {float(diff.max()):.3g}, atol {atol:g}, rtol {rtol:g}{first})",
                    worst_abs,
                    worst_rel,
                )
            # Element by element, atol forgives anything smaller than itself: an output
            # whose small elements are all dropped (zeroed) passes that test. In total the
            # error must stay small against the reference's own size.
            total = float(mag.sum())
            if total > atol and float(diff.sum()) > max(0.05, 5 * rtol) * total:
                return Comparison(
                    False,
                    f"{where} is off by {float(diff.sum()) / total:.1%} of the reference's total "
                    "magnitude (sum of absolute errors over sum of absolute values), though each "
                    f"element is within atol {atol:g}: small elements were dropped or biased",
                    worst_abs,
                    worst_rel,
                )
    return Comparison(True, "", worst_abs, worst_rel)


def null_outputs(ref: Any, inputs: list[Any]) -> list[tuple[str, Any]]:
    """Outputs any lazy kernel could return: all zeros, and a copy of a same-shaped input."""
    refs = _leaves(ref)
    shaped = tuple if isinstance(ref, tuple | list) else (lambda xs: xs[0])
    cands = [("zeros", shaped([torch.zeros_like(r) for r in refs]))]
    copies = []
    for r in refs:
        match = next(
            (x for x in inputs if isinstance(x, torch.Tensor) and x.shape == r.shape), None
        )
        copies.append(None if match is None else match.to(r.dtype))
    if all(c is not None for c in copies):
        cands.append(("a copy of the input", shaped(copies)))
    return cands


def null_control(sets: list[dict[str, Any]], atol: float, rtol: float) -> str | None:
    """None when the comparison can tell; else why a do-nothing output would pass every set."""
    passing: set[str] = set()
    first = True
    for s in sets:
        names = {
            name
            for name, out in null_outputs(s["outputs"], s["inputs"])
            if compare(out, s["outputs"], atol, rtol).ok
        }
        passing = names if first else passing & names
        first = False
        if not passing:
            return None
    return ", ".join(sorted(passing)) or None

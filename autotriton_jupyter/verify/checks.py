"""Judgements made in the trusted parent: output comparison and the null-output control."""

from __future__ import annotations

import contextlib
import threading
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


_CHUNK = 1 << 20  # elements compared at a time in float64 on the CPU: temporaries stay in cache
_DEVICE_CHUNK = 1 << 24  # on a GPU: few synchronisations, 128 MB temporaries


_DEVICE_BYTES = 4 << 30  # larger outputs are compared on the CPU: the judge's GPU memory stays small
_DEVICE_SLOT = threading.Semaphore(1)  # one comparison on the GPU at a time in this process


def _fits_device(out: Any, ref: Any) -> bool:
    """Same structure, dtypes and shapes (else the CPU says what differs, without copying
    anything to the GPU), and small enough to copy there."""
    outs, refs = _leaves(out), _leaves(ref)
    if isinstance(out, tuple | list) != isinstance(ref, tuple | list) or len(outs) != len(refs):
        return False
    total = 0
    for o, r in zip(outs, refs):
        if not isinstance(o, torch.Tensor) or not isinstance(r, torch.Tensor):
            return False
        if o.dtype != r.dtype or o.shape != r.shape:
            return False
        total += o.numel() * o.element_size() + r.numel() * r.element_size()
    return total <= _DEVICE_BYTES


def _each(x: Any, f: Any) -> Any:
    """f applied to x's tensors, one level deep (all that compare looks at): never
    recursive, so a deeply nested output cannot exhaust the stack; a plain tuple or list
    (a named tuple of the reference's cannot be rebuilt from its items alone)."""
    if isinstance(x, tuple | list):
        return (tuple if isinstance(x, tuple) else list)(
            f(v) if isinstance(v, torch.Tensor) else v for v in x
        )
    return f(x) if isinstance(x, torch.Tensor) else x


def _on(x: Any, device: str) -> Any:
    """x on the device."""
    return _each(x, lambda t: t.to(device))


def _cpu(x: Any) -> Any:
    """x in host memory (a device tensor compared on the CPU)."""
    return _each(x, torch.Tensor.cpu)


def layout_problem(out: Any, ref: Any) -> str | None:
    """What keeps out from being laid out as the reference's output, or None: a plain
    tensor of its dtype and number of dimensions, or a tuple or list of as many (compare
    takes either). The sizes may differ (an output whose shape depends on the input's
    values): compare says so."""

    def leaf(o: Any, r: Any, where: str) -> str | None:
        if type(o) is not torch.Tensor:
            return f"{where} is not a tensor"
        if o.dtype != r.dtype:
            return f"{where} has dtype {o.dtype}; the reference gives {r.dtype}"
        if o.dim() != r.dim():
            return f"{where} has {o.dim()} dimensions; the reference's has {r.dim()}"
        return None

    if isinstance(ref, tuple | list):
        if type(out) not in (tuple, list):
            return "forward returned a single tensor; the reference returns a tuple"
        if len(out) != len(ref):
            return f"forward returned {len(out)} outputs; the reference returns {len(ref)}"
        for i, (o, r) in enumerate(zip(out, ref)):
            why = leaf(o, r, f"output {i}" if len(ref) > 1 else "the output")
            if why:
                return why
        return None
    if isinstance(out, tuple | list):
        return "forward returned a tuple; the reference returns a single tensor"
    return leaf(out, ref, "the output")


def compare(
    out: Any, ref: Any, atol: float, rtol: float, quick: bool = False, device: str | None = None
) -> Comparison:
    """Exact dtype and shape, same NaN/inf pattern, then |out-ref| <= atol + rtol*|ref|.

    Differences are taken in float64 (complex128), a chunk of elements at a time. With
    `quick`, only `ok` is right: the largest errors are not computed, and a failure
    returns at the first chunk that shows it, without a message (the null control, the
    outputs kept while timing; a caller that needs the message compares again).

    With a `device` ("cuda"), both are copied there and compared there: the same float64
    arithmetic, element by element, so the same verdicts, in a fraction of the time. A
    device that runs out of memory (or fails) leaves the comparison to the CPU.
    """
    if device is not None and device != "cpu" and _fits_device(out, ref):
        with _DEVICE_SLOT:
            try:
                return _compare(_on(out, device), _on(ref, device), atol, rtol, quick)
            except RuntimeError:  # out of memory, or no usable device here: the CPU does it
                pass
            finally:  # the comparison's blocks go back: the judge keeps no GPU memory
                with contextlib.suppress(RuntimeError):
                    torch.cuda.empty_cache()
    return _compare(_cpu(out), _cpu(ref), atol, rtol, quick)


def _compare(out: Any, ref: Any, atol: float, rtol: float, quick: bool) -> Comparison:
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
        # NaN and infinity patterns are the same in the tensors' own dtype as in float64.
        on, rn = torch.isnan(o), torch.isnan(r)
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
        oi, ri = torch.isinf(o), torch.isinf(r)
        if not torch.equal(oi, ri) or not torch.equal(o[oi], r[ri]):
            return Comparison(
                False,
                f"{where} has infinities where the reference has none (or the other way)",
                float("inf"),
                float("inf"),
            )
        got = _differences(o, r, ~(rn | ri), atol, rtol, quick)
        if got is None:
            return Comparison(False, "", worst_abs, worst_rel)
        leaf_abs, leaf_rel, n_bad, first_bad, diff_sum, total = got
        if n_bad is None:  # every element is NaN or infinite
            continue
        worst_abs, worst_rel = max(worst_abs, leaf_abs), max(worst_rel, leaf_rel)
        if n_bad:
            o64, r64 = o.reshape(-1)[first_bad], r.reshape(-1)[first_bad]
            at = tuple(int(i) for i in torch.unravel_index(torch.tensor(first_bad), r.shape)) if r.dim() else ()
            first = (
                f"; first at index {list(at)}: {_scalar(o64):.6g} where the "
                f"reference gives {_scalar(r64):.6g}"
            )
            return Comparison(
                False,
                f"{where} differs from the reference in {n_bad} of {r.numel()} elements "
                f"(max abs error {leaf_abs:.3g}, atol {atol:g}, rtol {rtol:g}{first})",
                worst_abs,
                worst_rel,
            )
        # Element by element, atol forgives anything smaller than itself: an output
        # whose small elements are all dropped (zeroed) passes that test. In total the
        # error must stay small against the reference's own size.
        if total > atol and diff_sum > max(0.05, 5 * rtol) * total:
            return Comparison(
                False,
                f"{where} is off by {diff_sum / total:.1%} of the reference's total "
                "magnitude (sum of absolute errors over sum of absolute values), though each "
                f"element is within atol {atol:g}: small elements were dropped or biased",
                worst_abs,
                worst_rel,
            )
    return Comparison(True, "", worst_abs, worst_rel)


def _scalar(x: torch.Tensor) -> Any:
    return complex(x) if x.is_complex() else float(x)


def _differences(
    o: torch.Tensor, r: torch.Tensor, finite: torch.Tensor, atol: float, rtol: float, quick: bool
) -> tuple[float, float, int | None, int, float, float] | None:
    """Over the finite elements, in float64 a chunk at a time: the largest absolute and
    relative errors, how many elements are out of tolerance and the first of them (a flat
    index), and the sums of absolute errors and of the reference's magnitudes. None when
    `quick` and an element is out of tolerance; n_bad is None when nothing is finite."""
    wide = torch.complex128 if o.is_complex() else torch.float64
    of, rf, ff = o.reshape(-1), r.reshape(-1), finite.reshape(-1)
    all_finite = bool(ff.all())
    if not all_finite and not bool(ff.any()):
        return 0.0, 0.0, None, 0, 0.0, 0.0
    worst_abs = worst_rel = diff_sum = total = 0.0
    n_bad, first_bad = 0, -1
    chunk = _CHUNK if o.device.type == "cpu" else _DEVICE_CHUNK
    for a in range(0, of.numel(), chunk):
        oc, rc = of[a : a + chunk].to(wide), rf[a : a + chunk].to(wide)
        index = None
        if not all_finite:
            keep = ff[a : a + chunk]
            index = torch.nonzero(keep).reshape(-1)
            if not index.numel():
                continue
            oc, rc = oc[index], rc[index]
        diff = (oc - rc).abs()
        mag = rc.abs()
        if not quick:
            worst_abs = max(worst_abs, float(diff.max()))
            # Relative error where it means something: elements larger than atol (near
            # zero it is huge for any rounding, and atol is what judges those).
            sig = mag > atol
            if bool(sig.any()):
                worst_rel = max(worst_rel, float(torch.where(sig, diff / mag, 0.0).max()))
        bad = diff > atol + rtol * mag
        n = int(bad.sum())
        if n:
            if quick:
                return None
            if first_bad < 0:
                k = int(torch.nonzero(bad)[0])
                first_bad = a + (int(index[k]) if index is not None else k)
            n_bad += n
        diff_sum += float(diff.sum())
        total += float(mag.sum())
    return worst_abs, worst_rel, n_bad, first_bad, diff_sum, total


def finite(out: Any) -> bool:
    """Whether an output (a tensor or a tuple of them) holds no NaN or inf."""
    return all(
        bool(torch.isfinite(t).all())
        for t in _leaves(out)
        if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex())
    )


def kept_call(
    out: Any,
    want: Any,
    base: Any,
    atol: float,
    rtol: float,
    device: str | None = None,
    explain: bool = True,
) -> dict[str, Any]:
    """One timed call kept whole: whether the candidate's output `out` matches `want`, the
    reference's on the same varied inputs (`message` says how it does not), whether `want`
    is finite, and whether `want` is `stale`: within tolerance of `base`, the reference's
    output on the unvaried inputs, so that an output kept from an earlier call would pass.
    Made where the reference's outputs are (its worker, on its device): nothing moves.
    Without `explain`, a wrong output's message is left out (a second, full pass)."""
    if out is None:  # the judge sent none: it was not laid out as the reference's
        return {"ok": False, "message": "", "finite": finite(want), "stale": False}
    c = compare(out, want, atol, rtol, quick=True, device=device)
    return {
        "ok": c.ok,
        "message": "" if c.ok or not explain else compare(out, want, atol, rtol, device=device).message,
        "finite": finite(want),
        "stale": compare(base, want, atol, rtol, quick=True, device=device).ok,
    }


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
            if compare(out, s["outputs"], atol, rtol, quick=True).ok
        }
        passing = names if first else passing & names
        first = False
        if not passing:
            return None
    return ", ".join(sorted(passing)) or None

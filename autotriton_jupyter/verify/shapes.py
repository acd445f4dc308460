"""`--shapes`: input sets at shapes other than the task's own (VERIFY.md item 17).

A set is written as the shapes of the task's tensor inputs, in order, separated by
spaces; sets are separated by ';':  "33x257 33x257; 1x7 1x7"  (a 0-d input is "()").
Values keep the task's own distribution: each new tensor is drawn, with replacement,
from the values `get_inputs()` produced for that input.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

Shape = tuple[int, ...]
_DIMS = re.compile(r"^\d+(x\d+)*$")


class ShapeError(ValueError):
    """A --shapes value that cannot be read."""


def parse_shapes(specs: Iterable[str]) -> list[list[Shape]]:
    """The input sets of --shapes values (each may hold several sets separated by ';')."""
    sets = []
    for spec in specs:
        for part in str(spec).split(";"):
            words = part.replace(",", " ").split()
            if not words:
                continue
            shapes = []
            for w in words:
                if w == "()":
                    shapes.append(())
                elif _DIMS.match(w):
                    dims = tuple(int(d) for d in w.split("x"))
                    if 0 in dims:
                        raise ShapeError(
                            f"--shapes: {w!r} has a dimension of size 0, which leaves nothing "
                            "to compare; give every dimension a size of at least 1."
                        )
                    shapes.append(dims)
                else:
                    raise ShapeError(
                        f"--shapes: {w!r} is not a shape; write each input's shape as "
                        "dimensions joined by x (e.g. 33x257), inputs separated by spaces "
                        "and sets by ';'."
                    )
            sets.append(shapes)
    return sets


def reshape_inputs(inputs: list[Any], shapes: list[Shape], gen: Any) -> list[Any]:
    """The tensor inputs redrawn at `shapes` from their own values; other inputs as they are."""
    import torch

    tensors = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor)]
    if len(shapes) != len(tensors):
        raise ShapeError(
            f"a --shapes set gives {len(shapes)} shape(s) but get_inputs() returns "
            f"{len(tensors)} tensor(s); give one shape per tensor input, in order."
        )
    out = list(inputs)
    for i, shape in zip(tensors, shapes):
        flat = inputs[i].detach().cpu().reshape(-1)
        if flat.numel() == 0:
            raise ShapeError(
                f"input {i + 1} of get_inputs() is empty: there are no values to draw from."
            )
        out[i] = flat[torch.randint(0, flat.numel(), shape, generator=gen)].clone()
    return out


def describe(shapes: list[Shape]) -> str:
    """'33x257 33x257' for a set of shapes."""
    return " ".join("x".join(map(str, s)) if s else "()" for s in shapes)

"""tests/gpu: marked `gpu`, skipped with a reason when PyTorch sees no CUDA device."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

HERE = Path(__file__).parent


def pytest_collection_modifyitems(config, items):
    skip = (
        None
        if torch.cuda.is_available()
        else pytest.mark.skip(
            reason="needs a CUDA GPU; run scripts/gpu_check.sh on the GPU machine"
        )
    )
    for item in items:
        if HERE in Path(item.fspath).parents:
            item.add_marker(pytest.mark.gpu)
            if skip is not None:
                item.add_marker(skip)

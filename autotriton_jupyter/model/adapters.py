"""LoRA adapters kept on disk: where they live, what each was trained from, which one
generation uses for a base model. Training (training/sft.py, training/grpo.py) writes
them; the model registry, the llama.cpp export and the panel read them, without importing
training.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .generator import GenerationError


@dataclass
class AdapterInfo:
    """What an adapter was trained from, and how training went."""

    name: str
    base: str
    base_fingerprint: str
    dataset_hash: str
    examples: int
    held_out: int
    options: dict[str, Any]
    metrics: dict[str, Any] = field(default_factory=dict)
    created: float = field(default_factory=time.time)
    path: str = ""


def adapters_dir() -> Path:
    """Where adapters are kept ($AUTOTRITON_ADAPTERS, else next to the kernel library)."""
    env = os.environ.get("AUTOTRITON_ADAPTERS")
    if env:
        return Path(env)
    from ..store import default_path

    return default_path().parent / "adapters"


def base_fingerprint(path: str, gguf_file: str | None = None) -> str:
    """A cheap identity of the base weights: names, sizes and the first megabyte of each file."""
    root = Path(path)
    files = (
        [root / gguf_file]
        if gguf_file
        else sorted(
            p for p in root.iterdir() if p.suffix in (".safetensors", ".bin", ".json", ".gguf")
        )
    )
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode() + str(f.stat().st_size).encode())
        with f.open("rb") as fh:
            h.update(fh.read(1 << 20))
    return h.hexdigest()[:16]


def save_adapter(model: Any, info: AdapterInfo) -> Path:
    """Keep a finished adapter with its metadata; returns its folder."""
    folder = adapters_dir() / info.name
    tmp = folder.with_name(info.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    info.path = str(folder)
    (tmp / "autotriton.json").write_text(json.dumps(asdict(info), indent=2))
    shutil.rmtree(folder, ignore_errors=True)
    tmp.replace(folder)
    return folder


def list_adapters() -> list[AdapterInfo]:
    """All kept adapters, newest first."""
    d = adapters_dir()
    infos = []
    if d.is_dir():
        for meta in d.glob("*/autotriton.json"):
            try:
                infos.append(AdapterInfo(**json.loads(meta.read_text())))
            except (ValueError, TypeError):
                continue
    return sorted(infos, key=lambda a: a.created, reverse=True)


def use_adapter(name: str) -> None:
    """Make `name` the adapter generation prefers (over the newest) for its base model."""
    if name not in {a.name for a in list_adapters()}:
        raise GenerationError(f"No adapter named {name!r} (see `autotriton adapters list`).")
    (adapters_dir() / "preferred").write_text(name)


def _preferred_name() -> str | None:
    preferred = adapters_dir() / "preferred"
    return preferred.read_text().strip() if preferred.exists() else None


def likely_adapter(setting: str, infos: list[AdapterInfo] | None = None) -> str | None:
    """The adapter generation would pick for the `adapter` setting, by name: none for
    "none", the named one, else the preferred one, else the newest. adapter_for decides
    per base model, which needs the weights' fingerprint; this is the hint a panel shows."""
    if setting == "none":
        return None
    if setting:
        return setting
    infos = list_adapters() if infos is None else infos
    return _preferred_name() or (infos[0].name if infos else None)


def adapter_for(
    base_fingerprint_value: str, name: str = "", base_name: str = ""
) -> AdapterInfo | None:
    """The named adapter (checked against the base), else the preferred or newest one for this base.

    `base_name` also accepts adapters trained on a model of that name: the llama.cpp
    backend passes it so that `autotriton` as a GGUF takes adapters trained on its
    transformers weights (the GGUF export checks every shape against the file)."""
    infos = list_adapters()

    def fits(a: AdapterInfo) -> bool:
        return a.base_fingerprint == base_fingerprint_value or bool(
            base_name and a.base == base_name
        )

    preferred = _preferred_name()
    if not name and preferred:
        chosen = next((a for a in infos if a.name == preferred), None)
        if chosen is not None and fits(chosen):
            return chosen
    if name:
        match = next((a for a in infos if a.name == name), None)
        if match is None:
            raise GenerationError(f"No adapter named {name!r} (see `autotriton adapters list`).")
        if not fits(match):
            raise GenerationError(
                f"The adapter {name!r} was trained on another base model "
                f"({match.base}); it cannot be used with this one."
            )
        return match
    return next((a for a in infos if fits(a)), None)


def remove_adapter(name: str) -> None:
    folder = adapters_dir() / name
    if not (folder / "autotriton.json").exists():
        raise GenerationError(f"No adapter named {name!r}.")
    shutil.rmtree(folder)

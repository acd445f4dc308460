"""LoRA adapters of Llama models, as made by peft, written as llama.cpp LoRA GGUF files.

What llama.cpp's adapter loader (llama-adapter.cpp) wants: `general.type` "adapter",
`adapter.type` "lora", `adapter.lora.alpha`, the base model's architecture, and for each
adapted weight `<gguf name>.lora_a` shaped [r, in] and `<gguf name>.lora_b` shaped
[out, r] (numpy order, the same as peft's lora_A / lora_B), checked against the base
tensor's shape. It scales the product by alpha / r, as peft does.

Llama's HF -> GGUF conversion reorders the rows of attn_q and attn_k within each head:
HF rotates dimension i with i + head_dim/2, llama.cpp rotates neighbours 2i and 2i+1.
The rows of lora_B for q_proj and k_proj get the same reordering (lora_A acts on the
input and stays as it is).
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .generator import GenerationError

CACHE_NAME = "adapter.gguf"
_KEY = re.compile(r"^base_model\.model\.(?P<module>.+)\.lora_(?P<ab>[AB])\.weight$")
_ROPE_HEADS = {"self_attn.q_proj": "n_head", "self_attn.k_proj": "n_head_kv"}

Reorder = Callable[[Any, int], Any]


@dataclass
class BaseShape:
    """The facts about a base model an export needs; `tensors` (GGUF name -> (in, out)) if known."""

    architecture: str
    n_layer: int
    n_head: int
    n_head_kv: int
    tensors: dict[str, tuple[int, int]] = field(default_factory=dict)


def _need_gguf() -> Any:
    try:
        import gguf
    except ImportError as e:
        raise GenerationError(
            "Writing adapters for llama.cpp needs the gguf package: "
            "pip install 'autotriton-jupyter[hf]' (or pip install gguf)."
        ) from e
    return gguf


def base_from_gguf(path: str | Path) -> BaseShape:
    """Architecture, head counts and 2-D tensor shapes of a GGUF model file."""
    st = Path(path).stat()
    return _read_base(str(path), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=4)
def _read_base(path: str, _size: int, _mtime_ns: int) -> BaseShape:
    gguf = _need_gguf()
    reader = gguf.GGUFReader(path)  # seconds: it parses the whole vocabulary too

    def value(key: str) -> Any:
        f = reader.fields.get(key)
        return f.contents() if f is not None else None

    arch = value("general.architecture") or ""
    tensors = {
        t.name: (int(t.shape[0]), int(t.shape[1])) for t in reader.tensors if len(t.shape) == 2
    }
    n_head = int(value(f"{arch}.attention.head_count") or 0)
    return BaseShape(
        arch,
        int(value(f"{arch}.block_count") or 0),
        n_head,
        int(value(f"{arch}.attention.head_count_kv") or n_head),
        tensors,
    )


def base_from_config(folder: str | Path) -> BaseShape:
    """The same facts from a Hugging Face model folder's config.json (no tensor shapes)."""
    config = json.loads((Path(folder) / "config.json").read_text())
    n_head = int(config.get("num_attention_heads", 0))
    return BaseShape(
        str(config.get("model_type", "")),
        int(config.get("num_hidden_layers", 0)),
        n_head,
        int(config.get("num_key_value_heads") or n_head),
    )


def base_shape(path: str | Path, gguf_file: str | None = None) -> BaseShape:
    """BaseShape of a .gguf file, of a folder + gguf_file, or of a Hugging Face folder."""
    p = Path(path) / gguf_file if gguf_file else Path(path)
    return base_from_gguf(p) if p.is_file() else base_from_config(p)


def rope_rows_to_gguf(w: Any, n_head: int) -> Any:
    """Reorder a q/k projection's output rows from HF's split-halves rotary layout to llama.cpp's interleaved one."""
    rows = w.shape[0]
    half = rows // n_head // 2
    # row h*d + j*half + i (j = 0, 1: the two halves) moves to h*d + 2*i + j
    return w.reshape(n_head, 2, half, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def read_safetensors(path: str | Path) -> dict[str, Any]:
    """Tensors of a .safetensors file as float32 numpy arrays (bf16 included, no torch needed)."""
    import numpy as np

    kinds = {"F32": np.float32, "F16": np.float16, "F64": np.float64}
    raw = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    data = memoryview(raw)[8 + n :]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        start, end = t["data_offsets"]
        if t["dtype"] == "BF16":
            bits = np.frombuffer(data[start:end], dtype="<u2").astype(np.uint32) << 16
            a = bits.view(np.float32)
        elif t["dtype"] in kinds:
            a = np.frombuffer(data[start:end], dtype=np.dtype(kinds[t["dtype"]]).newbyteorder("<"))
        else:
            raise GenerationError(f"{path}: tensor {name} is {t['dtype']}, not a float type.")
        out[name] = a.astype(np.float32).reshape(t["shape"])
    return out


def _check_config(config: dict[str, Any], where: Path) -> None:
    refuse = []
    if config.get("peft_type", "LORA") != "LORA":
        refuse.append(f"it is a {config.get('peft_type')} adapter, not LoRA")
    if config.get("use_dora"):
        refuse.append("it uses DoRA")
    if config.get("bias", "none") != "none" or config.get("lora_bias"):
        refuse.append("it trains biases")
    if config.get("modules_to_save"):
        refuse.append(f"it saves whole modules ({config['modules_to_save']})")
    if config.get("rank_pattern") or config.get("alpha_pattern"):
        refuse.append("it uses per-module ranks or alphas")
    if config.get("fan_in_fan_out"):
        refuse.append("it stores transposed (fan_in_fan_out) weights")
    if refuse:
        raise GenerationError(
            f"The adapter in {where} cannot be written for llama.cpp: {'; '.join(refuse)}. "
            "Only plain LoRA (no bias, no DoRA) is supported; use it with the transformers backend."
        )


def export(
    adapter_dir: str | Path,
    out: str | Path,
    base: BaseShape,
    *,
    reorder: Reorder | None = rope_rows_to_gguf,
) -> Path:
    """Write the peft adapter in adapter_dir as a llama.cpp LoRA GGUF file at out.

    `reorder` is applied to the rows of lora_B of q_proj (with n_head) and k_proj (with
    n_head_kv); None leaves them as trained (only right for bases converted without it)."""
    gguf = _need_gguf()
    folder = Path(adapter_dir)
    config = json.loads((folder / "adapter_config.json").read_text())
    _check_config(config, folder)
    if base.architecture != "llama":
        raise GenerationError(
            f"Only adapters of Llama-architecture models can be written for llama.cpp; this "
            f"base is {base.architecture or 'of unknown architecture'}. Use the adapter with "
            "the transformers backend instead."
        )
    r = int(config["r"])
    alpha = float(config["lora_alpha"])
    if config.get("use_rslora"):  # peft scales by alpha/sqrt(r), llama.cpp by alpha/r
        alpha *= math.sqrt(r)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, base.n_layer)
    pairs: dict[str, dict[str, Any]] = {}
    for key, w in read_safetensors(folder / "adapter_model.safetensors").items():
        m = _KEY.match(key)
        gguf_name = names.get_name(m["module"]) if m else None
        if m is None or gguf_name is None:
            raise GenerationError(
                f"The adapter in {folder} has a tensor {key} that does not map to a Llama "
                "weight in llama.cpp; only LoRA on the attention and MLP projections of a "
                "Llama model can be written."
            )
        if m["ab"] == "B":
            heads = next((a for s, a in _ROPE_HEADS.items() if m["module"].endswith(s)), None)
            if heads and reorder is not None:
                w = reorder(w, getattr(base, heads))
        pairs.setdefault(gguf_name + ".weight", {})[m["ab"]] = w
    if not pairs:
        raise GenerationError(f"The adapter in {folder} holds no LoRA weights.")
    for name, ab in pairs.items():
        if set(ab) != {"A", "B"}:
            raise GenerationError(f"The adapter in {folder} lacks lora_A or lora_B for {name}.")
        want = base.tensors.get(name) if base.tensors else (ab["A"].shape[1], ab["B"].shape[0])
        if want != (ab["A"].shape[1], ab["B"].shape[0]):
            raise GenerationError(
                f"The adapter in {folder} does not fit this base model: "
                + (
                    f"it has no tensor {name}"
                    if want is None
                    else f"{name} is {want[0]} -> {want[1]}, the adapter's "
                    f"{ab['A'].shape[1]} -> {ab['B'].shape[0]}"
                )
                + "."
            )
    target = Path(out)
    tmp = target.with_name(target.name + ".tmp")
    writer = gguf.GGUFWriter(str(tmp), arch=base.architecture)
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, alpha)
    for name in sorted(pairs):
        writer.add_tensor(name + ".lora_a", pairs[name]["A"])
        writer.add_tensor(name + ".lora_b", pairs[name]["B"])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(tmp, target)  # a half-written file never passes for a finished one
    return target


def cached_export(adapter_dir: str | Path, base_gguf: str | Path) -> Path:
    """The adapter as a GGUF for the llama.cpp model base_gguf, written once and kept next to it."""
    folder = Path(adapter_dir)
    out = folder / CACHE_NAME
    weights = folder / "adapter_model.safetensors"
    if not weights.exists():
        raise GenerationError(f"{folder} has no adapter_model.safetensors; is it a peft adapter?")
    if out.exists() and out.stat().st_mtime >= weights.stat().st_mtime:
        return out
    return export(folder, out, base_from_gguf(base_gguf))


def export_adapter(name: str, resolve: Callable[[str], Any], out: str = "", base: str = "") -> Path:
    """`autotriton adapters export`: a kept adapter as a GGUF for base (a model name or path;
    default its own). `resolve` turns a model name into the registry's ModelSpec (given by
    the caller, so this module does not import the registry, which imports it)."""
    from .adapters import adapters_dir, list_adapters

    info = next((a for a in list_adapters() if a.name == name), None)
    if info is None:
        raise GenerationError(f"No adapter named {name!r} (see `autotriton adapters list`).")
    folder = Path(info.path or adapters_dir() / name)
    spec = resolve(base or info.base)
    if spec.backend not in ("hf", "llamacpp") or not spec.available:
        raise GenerationError(
            f"The base model {spec.name!r} is not a local model available here"
            + (f" (it needs {spec.needs})" if spec.needs else "")
            + "; give the base with --base FILE.gguf or a model folder."
        )
    shape = base_shape(spec.path, spec.gguf_file or None)
    return export(folder, Path(out) if out else folder / CACHE_NAME, shape)

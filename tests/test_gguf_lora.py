"""Adapters for llama.cpp: peft LoRA written as GGUF acts in llama.cpp as it did in transformers.

The base is the tiny SmolLM2 GGUF (Q4_1). transformers dequantises it, so both backends
start from the same weights; llama.cpp still rounds activations in its quantised matmuls,
so logits are compared as changes against each backend's own base, loosely.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

from autotriton_jupyter.cli import main
from autotriton_jupyter.model import registry
from autotriton_jupyter.model.adapters import (
    AdapterInfo,
    base_fingerprint,
    list_adapters,
    save_adapter,
)
from autotriton_jupyter.model.extract import extract
from autotriton_jupyter.model.generator import GenerationError, GenerationParams
from autotriton_jupyter.model.gguf_lora import (
    BaseShape,
    base_from_gguf,
    export,
    rope_rows_to_gguf,
)
from autotriton_jupyter.model.prompts import task_chat
from autotriton_jupyter.model.registry import ModelOptions, tiny_gguf
from autotriton_jupyter.training.dataset import dataset_from_library, dataset_hash
from autotriton_jupyter.training.sft import FinetuneOptions, train_lora

from .test_finetune import PAIRS, TASK, accept_pairs

pytest.importorskip("llama_cpp", reason="needs llama-cpp-python (the llamacpp extra)")
pytest.importorskip("peft", reason="needs peft and transformers (the hf extra)")
pytest.importorskip("gguf", reason="needs the gguf package (the hf extra)")

TEXT = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return"
SMALL = ModelOptions(n_ctx=2048)


@pytest.fixture(scope="module")
def base():
    return base_from_gguf(tiny_gguf())


@pytest.fixture(scope="module")
def hf():
    """The tiny model in transformers (dequantised), TEXT's ids, its logits for them, its tokenizer."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    p = tiny_gguf()
    tok = AutoTokenizer.from_pretrained(p.parent, gguf_file=p.name)
    model = AutoModelForCausalLM.from_pretrained(p.parent, gguf_file=p.name, dtype=torch.float32)
    ids = tok(TEXT)["input_ids"]
    return model, ids, _hf_logits(model, ids), tok


def _hf_logits(model, ids):
    import torch

    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0, -1].float().numpy()


def _llama_logits(ids, lora=None):
    from llama_cpp import Llama

    llm = Llama(
        model_path=str(tiny_gguf()), n_ctx=256, logits_all=True, lora_path=lora, verbose=False
    )
    llm.eval(ids)
    out = np.array(llm.scores[len(ids) - 1])
    llm.close()
    return out


@pytest.fixture(scope="module")
def llama_base(hf):
    return _llama_logits(hf[1])


def _peft_adapter(model, folder, modules, *, nonzero: bool):
    """A peft adapter on `modules`: zero lora_B as peft initialises it, or random (as if trained)."""
    import torch
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(0)
    config = LoraConfig(r=8, lora_alpha=16, target_modules=modules, init_lora_weights=not nonzero)
    peft_model = get_peft_model(model, config)
    if nonzero:
        with torch.no_grad():  # keep the change a nudge: the base's answer still matters
            for n, p in peft_model.named_parameters():
                if "lora_B" in n:
                    p.mul_(0.5)
    peft_model.save_pretrained(folder)
    return peft_model


@pytest.fixture
def adapter(hf, tmp_path):
    """Make an adapter in tmp_path, return (folder, transformers logits with it); unload after."""
    model, ids = hf[0], hf[1]
    made = []

    def make(modules, nonzero=True):
        peft_model = _peft_adapter(model, tmp_path / "peft", modules, nonzero=nonzero)
        made.append(peft_model)
        return tmp_path / "peft", _hf_logits(peft_model, ids)

    yield make
    for m in made:
        m.unload()  # the module's model goes back to plain


def test_reordering_matches_the_gguf_conversion(hf, base):
    """HF's q/k weights, reordered, are exactly the GGUF's attn_q/attn_k (both dequantised)."""
    import gguf

    model = hf[0]
    reader = gguf.GGUFReader(str(tiny_gguf()))
    tensors = {t.name: t for t in reader.tensors}
    attn = model.model.layers[3].self_attn
    for proj, name, heads in (
        (attn.q_proj, "blk.3.attn_q.weight", base.n_head),
        (attn.k_proj, "blk.3.attn_k.weight", base.n_head_kv),
    ):
        t = tensors[name]
        stored = gguf.quants.dequantize(t.data, t.tensor_type).reshape(proj.weight.shape)
        w = proj.weight.detach().numpy()
        assert np.array_equal(rope_rows_to_gguf(w, heads), stored)
        assert not np.array_equal(w, stored)  # the reordering is not a no-op here


def test_untrained_adapter_changes_nothing_in_llamacpp(hf, llama_base, adapter, base, tmp_path):
    folder, hf_logits = adapter("all-linear", nonzero=False)
    assert np.array_equal(hf_logits, hf[2])
    gguf = export(folder, tmp_path / "zero.gguf", base)
    assert np.array_equal(_llama_logits(hf[1], str(gguf)), llama_base)


def test_adapter_moves_llamacpp_logits_as_it_moves_transformers(hf, llama_base, adapter, base):
    folder, hf_logits = adapter("all-linear")
    moved = _llama_logits(hf[1], str(export(folder, folder / "a.gguf", base))) - llama_base
    want = hf_logits - hf[2]
    assert np.abs(want).max() > 1.0  # the adapter really moves the logits
    assert np.corrcoef(moved, want)[0, 1] > 0.95  # 0.98 measured; the bases alone differ by 0.6
    assert np.argmax(moved + llama_base) == np.argmax(hf_logits)


def test_without_the_qk_reordering_llamacpp_disagrees(hf, llama_base, adapter, base):
    folder, hf_logits = adapter(["q_proj", "k_proj"])
    want = hf_logits - hf[2]
    right = _llama_logits(hf[1], str(export(folder, folder / "r.gguf", base))) - llama_base
    wrong = (
        _llama_logits(hf[1], str(export(folder, folder / "w.gguf", base, reorder=None)))
        - llama_base
    )
    agree, disagree = np.corrcoef(right, want)[0, 1], np.corrcoef(wrong, want)[0, 1]
    assert agree > 0.8 and disagree < 0.3, (agree, disagree)  # measured 0.92 and -0.2


def _fake_adapter(folder, tensors, **config):
    from safetensors.numpy import save_file

    folder.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(folder / "adapter_model.safetensors"))
    cfg = {"peft_type": "LORA", "r": 4, "lora_alpha": 8, "bias": "none", **config}
    (folder / "adapter_config.json").write_text(json.dumps(cfg))
    return folder


def test_adapters_llamacpp_cannot_take_are_refused(tmp_path, base):
    a, b = np.zeros((4, 576), np.float32), np.zeros((576, 4), np.float32)
    gpt2 = _fake_adapter(
        tmp_path / "gpt2",
        {
            "base_model.model.transformer.h.0.attn.c_attn.lora_A.weight": a,
            "base_model.model.transformer.h.0.attn.c_attn.lora_B.weight": b,
        },
    )
    with pytest.raises(GenerationError, match="does not map to a Llama weight"):
        export(gpt2, tmp_path / "x.gguf", base)
    llama = {
        "base_model.model.model.layers.0.self_attn.o_proj.lora_A.weight": a,
        "base_model.model.model.layers.0.self_attn.o_proj.lora_B.weight": b,
    }
    qwen = BaseShape("qwen2", base.n_layer, base.n_head, base.n_head_kv)
    with pytest.raises(GenerationError, match="Only adapters of Llama-architecture"):
        export(_fake_adapter(tmp_path / "q", llama), tmp_path / "x.gguf", qwen)
    with pytest.raises(GenerationError, match="DoRA"):
        export(_fake_adapter(tmp_path / "d", llama, use_dora=True), tmp_path / "x.gguf", base)
    wide = dict(llama)
    wide["base_model.model.model.layers.0.self_attn.o_proj.lora_A.weight"] = np.zeros(
        (4, 640), np.float32
    )
    with pytest.raises(GenerationError, match="does not fit this base model"):
        export(_fake_adapter(tmp_path / "w", wide), tmp_path / "x.gguf", base)
    assert not (tmp_path / "x.gguf").exists()


@pytest.fixture(scope="module")
def trained(hf, tmp_path_factory):
    """The tiny model fine-tuned (transformers) on two accepted kernels and kept as `run_finetune` keeps it."""
    import torch

    home = tmp_path_factory.mktemp("home")
    model, tokenizer = hf[0], hf[3]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AUTOTRITON_LIBRARY", str(home / "lib.sqlite"))
        mp.setenv("AUTOTRITON_ADAPTERS", str(home / "adapters"))
        registry.forget_loaded()
        codes = accept_pairs()
        examples = dataset_from_library()
        options = FinetuneOptions(epochs=6, lr=2e-3)  # fewer steps than test_finetune: CI time
        torch.manual_seed(0)
        peft_model = train_lora(model, tokenizer, examples, home / "run", options)["model"]
        p = tiny_gguf()
        info = AdapterInfo(
            "mine",
            "tiny-hf",
            base_fingerprint(str(p.parent), p.name),
            dataset_hash(examples),
            len(examples),
            0,
            asdict(options),
        )
        save_adapter(peft_model, info)
        peft_model.unload()
        yield codes
        registry.forget_loaded()


def test_llamacpp_writes_the_accepted_kernels_after_finetuning(trained, tmp_path, capsys):
    gen = registry.load("tiny", SMALL)
    assert gen.name == "tiny+mine"  # an adapter trained through tiny-hf fits the same GGUF
    assert gen.adapter == "mine"
    for k, (op, _) in PAIRS.items():
        out = gen.generate(
            [task_chat(TASK.format(op=op))], 1, GenerationParams(max_tokens=120, temperature=0.0)
        )[0]
        assert extract(out.text, out.finish_reason).code == trained[k].strip() + "\n"
    cached = Path(list_adapters()[0].path) / "adapter.gguf"
    stamp = cached.stat().st_mtime_ns
    registry.forget_loaded()
    assert registry.load("tiny", SMALL).name == "tiny+mine"
    assert cached.stat().st_mtime_ns == stamp  # exported once, then reused
    assert registry.load("tiny", ModelOptions(n_ctx=2048, adapter="none")).name == "tiny"
    assert main(["adapters", "export", "mine", "-o", str(tmp_path / "mine.gguf")]) == 0
    assert f"--lora {tmp_path / 'mine.gguf'}" in capsys.readouterr().out
    assert (tmp_path / "mine.gguf").read_bytes()[:4] == b"GGUF"

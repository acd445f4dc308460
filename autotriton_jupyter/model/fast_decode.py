"""A decode loop for Llama-architecture models (AutoTriton is one) built for speed.

transformers' forward, even with a static cache and CUDA graphs, reads q, k, v, gate and
up as five separate weight matrices per layer and attends over every cache slot at
every step. This decoder uses the same weights, re-laid once: q/k/v and gate/up become
one matrix each (the model's own parameters become views into them, so no memory is
added and the transformers forward still works), and attention reads only the filled
part of the cache (`decode_attention`). One decode step (forward + sampling) is
compiled with CUDA graphs.

Prefill runs the same code eagerly on the whole prompt, from position 0. When every row
holds the same prompt (n samples of one task, the usual case) it runs on one row and the
cache rows are copied. Tokens reach the host one step behind the device: step i+1 is
queued before step i's tokens are read, so the GPU never waits for the host.
"""

from __future__ import annotations

import time
from typing import Any

CACHE_BUCKET = 1024  # cache lengths are rounded up to this, so few sizes are compiled


def unsupported(model: Any) -> str | None:
    """Why this decoder cannot run `model` (None when it can)."""
    cfg = getattr(model, "config", None)
    if cfg is None or getattr(cfg, "model_type", "") != "llama":
        return "not a Llama-architecture model"
    if getattr(cfg, "attention_bias", False) or getattr(cfg, "mlp_bias", False):
        return "projection biases"
    if getattr(cfg, "hidden_act", "silu") != "silu":
        return f"activation {cfg.hidden_act}"
    if getattr(cfg, "pretraining_tp", 1) != 1:
        return "tensor-parallel pretraining layout"
    if not hasattr(model, "model") or not hasattr(model.model, "rotary_emb"):
        return "unfamiliar module layout"
    if type(model).__name__ != "LlamaForCausalLM":
        return f"wrapped model ({type(model).__name__})"
    return None


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _rms(x: Any, weight: Any, eps: float) -> Any:
    import torch

    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return weight * h.to(x.dtype)


def _rotate(x: Any, cos: Any, sin: Any) -> Any:
    import torch

    half = x.shape[-1] // 2
    rot = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rot * sin


class LlamaDecoder:
    """Fused-weight decoding for a LlamaForCausalLM (see the module docstring)."""

    def __init__(self, model: Any, *, compile_step: bool | None = None) -> None:
        import torch

        reason = unsupported(model)
        if reason:
            raise ValueError(f"the fast decoder cannot run this model: {reason}")
        cfg = model.config
        self.model = model
        self.device = next(model.parameters()).device
        self.heads = cfg.num_attention_heads
        self.kv_heads = cfg.num_key_value_heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // self.heads
        self.eps = cfg.rms_norm_eps
        self.scale = self.head_dim**-0.5
        self.max_len = getattr(cfg, "max_position_embeddings", None) or 1 << 20
        self.triton_attention = (
            self.device.type == "cuda"
            and _pow2(self.heads // self.kv_heads)
            and _pow2(self.head_dim)
        )
        self.compile_step = self.device.type == "cuda" if compile_step is None else compile_step
        # Told when a decode step is compiled for a new batch size or sampling setting (tens
        # of seconds the first time on a machine; Inductor's on-disk cache shortens later ones).
        self.on_compile: Any = None
        self._compiled: set[tuple] = set()
        base = model.model
        self.embed = base.embed_tokens.weight
        self.rotary = base.rotary_emb
        self.norm = base.norm.weight
        self.lm_head = model.lm_head.weight
        self.layers = [self._fuse(layer) for layer in base.layers]
        if self.device.type == "cuda":
            # CUDA graphs copy every input whose address may change into their own
            # buffers at each replay; the weights never move, so say so (otherwise the
            # fused matrices, plain tensors to torch.compile, are copied every token).
            for t in [
                self.embed,
                self.norm,
                self.lm_head,
                *(w for d in self.layers for w in d.values()),
            ]:
                torch._dynamo.mark_static_address(t)
        self.cache: tuple[list[Any], list[Any]] | None = None
        self._steps: dict[tuple[float, float], Any] = {}
        self.torch = torch

    @staticmethod
    def _fuse(layer: Any) -> dict[str, Any]:
        """One matrix for q/k/v and one for gate/up; the modules keep views into them."""
        import torch

        def fuse(*linears: Any) -> Any:
            with torch.no_grad():
                whole = torch.nn.Parameter(
                    torch.cat([m.weight for m in linears], dim=0), requires_grad=False
                )
            row = 0
            for m in linears:
                rows = m.weight.shape[0]
                m.weight = torch.nn.Parameter(whole[row : row + rows], requires_grad=False)
                row += rows
            return whole

        a, f = layer.self_attn, layer.mlp
        return {
            "ln1": layer.input_layernorm.weight,
            "qkv": fuse(a.q_proj, a.k_proj, a.v_proj),
            "o": a.o_proj.weight,
            "ln2": layer.post_attention_layernorm.weight,
            "gate_up": fuse(f.gate_proj, f.up_proj),
            "down": f.down_proj.weight,
        }

    # cache ----------------------------------------------------------------------------
    def _ensure_cache(self, batch: int, tokens: int) -> None:
        """A cache for `tokens` positions (rounded up), reused while the shape holds.

        A longer one than this answer needs is kept too where attention reads only the
        filled slots (the Triton kernel): the compiled step is specialised on the cache's
        length, so a new length is a new compile (seconds to a minute), while slots past
        the answer's cost nothing per step. The plain path attends over every slot."""
        torch = self.torch
        length = self._length(tokens)
        if self.cache is not None and self.cache[0][0].shape[0] == batch:
            if self._reusable(self.cache[0][0].shape[2], tokens):
                return
        self.cache = None  # free the old one first
        dtype = self.embed.dtype
        shape = (batch, self.kv_heads, length, self.head_dim)
        ks, vs = [], []
        for _ in self.layers:
            k = torch.zeros(shape, dtype=dtype, device=self.device)
            v = torch.zeros(shape, dtype=dtype, device=self.device)
            if self.device.type == "cuda":
                torch._dynamo.mark_static_address(k)
                torch._dynamo.mark_static_address(v)
            ks.append(k)
            vs.append(v)
        self.cache = (ks, vs)

    def _length(self, tokens: int) -> int:
        return min(-(-tokens // CACHE_BUCKET) * CACHE_BUCKET, max(self.max_len, tokens))

    def _reusable(self, have: int, tokens: int) -> bool:
        """Whether a cache of `have` positions serves an answer of `tokens` (see _ensure_cache)."""
        return have >= tokens and (have <= self._length(tokens) or self.triton_attention)

    # forward --------------------------------------------------------------------------
    def forward(self, ids: Any, pos: Any) -> Any:
        """Logits of the last position. ids [B, T]; pos [T] (prefill: 0..T-1; decode: [t]).

        B may be smaller than the cache's batch: the first B cache rows are used."""
        torch = self.torch
        import torch.nn.functional as F

        b, t = ids.shape
        h = F.embedding(ids, self.embed)
        cos, sin = self.rotary(h, pos[None, :].expand(b, t))
        cos, sin = cos[:, None], sin[:, None]
        nq, nk = self.heads * self.head_dim, self.kv_heads * self.head_dim
        ks, vs = ([c[:b] for c in side] for side in self.cache)
        for i, w in enumerate(self.layers):
            x = _rms(h, w["ln1"], self.eps)
            q, k, v = F.linear(x, w["qkv"]).split([nq, nk, nk], dim=-1)
            q = _rotate(q.view(b, t, self.heads, self.head_dim).transpose(1, 2), cos, sin)
            k = _rotate(k.view(b, t, self.kv_heads, self.head_dim).transpose(1, 2), cos, sin)
            v = v.view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
            ks[i].index_copy_(2, pos, k)
            vs[i].index_copy_(2, pos, v)
            if t > 1:
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            elif self.triton_attention:
                from .decode_attention import decode_attention

                a = decode_attention(q[:, :, 0], ks[i], vs[i], pos, self.scale)[:, :, None]
            else:
                live = torch.arange(ks[i].shape[2], device=self.device)[None, :] <= pos[:, None]
                a = F.scaled_dot_product_attention(q, ks[i], vs[i], attn_mask=live, enable_gqa=True)
            h = h + F.linear(a.transpose(1, 2).reshape(b, t, nq), w["o"])
            x = _rms(h, w["ln2"], self.eps)
            gate, up = F.linear(x, w["gate_up"]).chunk(2, dim=-1)
            h = h + F.linear(F.silu(gate) * up, w["down"])
        return F.linear(_rms(h[:, -1], self.norm, self.eps), self.lm_head)

    def _step(self, temperature: float, top_p: float) -> Any:
        """forward + sampling for one token, compiled once per sampling setting (on CUDA)."""
        key = (temperature, top_p)
        if key not in self._steps:
            from .sampling import sample_next

            def step(ids: Any, pos: Any) -> Any:
                return sample_next(self.forward(ids, pos), temperature, top_p)

            if self.compile_step:
                step = self.torch.compile(step, mode="reduce-overhead", dynamic=False)
            self._steps[key] = step
        return self._steps[key]

    def steps(self, prompt: Any, max_new: int, temperature: float, top_p: float):
        """Yield the next token of every row, one step at a time (prompt: [B, P] ids).

        Fewer rows than a step already compiled for this cache decode in that step, padded
        with copies of the first row (decoding reads the weights once per step whatever the
        rows, so a few more cost little, and a new compile costs seconds to a minute)."""
        b = prompt.shape[0]
        rows = self._compiled_rows(b, prompt.shape[1] + max_new, temperature, top_p)
        if rows == b:
            yield from self._decode(prompt, max_new, temperature, top_p)
            return
        padded = self.torch.cat([prompt, prompt[:1].expand(rows - b, -1)])
        for tokens in self._decode(padded, max_new, temperature, top_p):
            yield tokens[:b]

    def _compiled_rows(self, b: int, tokens: int, temperature: float, top_p: float) -> int:
        """The rows of the step compiled for the cache this answer would reuse, if more than b."""
        if self.cache is None or not self.compile_step:
            return b
        rows, length = self.cache[0][0].shape[0], self.cache[0][0].shape[2]
        fits = self._reusable(length, tokens) and (rows, length, temperature, top_p) in self._compiled
        return rows if rows > b and fits else b

    def _decode(self, prompt: Any, max_new: int, temperature: float, top_p: float):
        torch = self.torch
        b, p = prompt.shape
        self._ensure_cache(b, p + max_new)
        from .sampling import sample_next

        nxt = sample_next(self._prefill(prompt), temperature, top_p)
        step = self._step(temperature, top_p)
        position = torch.tensor([p], device=self.device)
        cuda = self.device.type == "cuda"
        # Two pinned host buffers: step i's tokens are copied into one while step i+1 is
        # already queued behind the copy, and read while the GPU works on step i+1.
        host = [torch.empty(b, dtype=torch.long, pin_memory=cuda) for _ in range(2)]
        ready = [torch.cuda.Event() if cuda else None for _ in range(2)]
        for i in range(max_new):
            slot = i % 2
            host[slot].copy_(nxt, non_blocking=cuda)
            if cuda:
                ready[slot].record()
            if i + 1 < max_new:
                position.fill_(p + i)
                shape = (b, self.cache[0][0].shape[2], temperature, top_p)
                first = self.compile_step and shape not in self._compiled
                if first and self.on_compile:
                    self.on_compile(f"compiling the decode step for {b} rows (once per batch size)")
                t0 = time.perf_counter()
                nxt = step(nxt[:, None], position).clone()
                if first:
                    self._compiled.add(shape)
                    if self.on_compile:
                        self.on_compile(f"decode step for {b} rows ready in {time.perf_counter() - t0:.1f} s")
            if cuda:
                ready[slot].synchronize()
            yield host[slot].clone()

    def _prefill(self, prompt: Any) -> Any:
        """Run the prompt through the model, filling the cache; logits of its last position.

        Identical rows (n samples of one prompt) are computed once and copied."""
        torch = self.torch
        b, p = prompt.shape
        pos = torch.arange(p, device=self.device)
        if b == 1 or not bool((prompt == prompt[:1]).all()):
            return self.forward(prompt, pos)
        logits = self.forward(prompt[:1], pos)
        for side in self.cache:
            for c in side:
                c[1:b, :, :p].copy_(c[:1, :, :p].expand(b - 1, -1, -1, -1))
        return logits.expand(b, -1)

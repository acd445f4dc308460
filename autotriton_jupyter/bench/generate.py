"""`autotriton bench generate`: decode speed of the transformers backend.

Speed does not depend on weight values, so by default the model is AutoTriton's exact
shape (MODEL.md) with random weights, built directly on the device. The rows of a batch
share one prompt, as the n samples of a task do. Two rates are given: from the call to
the last token (prefill included), and decoding alone (after the first token).
End-of-sequence is ignored, so every row runs the full length; the first run of each
batch size, which compiles, is reported apart.
"""

from __future__ import annotations

import time
from typing import Any

from ..model.generator import GenerationParams
from .random_weights import AUTOTRITON_SHAPE, TINY_SHAPE, random_llama


def bench_generate(
    shape: str = "autotriton",
    batches: tuple[int, ...] = (1, 8),
    prompt_tokens: int = 512,
    new_tokens: int = 256,
    static_cache: bool = True,
    device: str = "auto",
    temperature: float = 0.0,
    top_p: float = GenerationParams.top_p,
    fused: bool = True,
    budget_tokens: int | None = None,
    profile: bool = False,
    profile_first: bool = False,
    on_event: Any = None,
) -> dict[str, Any]:
    """Decode tokens/s at each batch size; returns figures and a text summary."""
    import torch

    from ..model.backends.hf import HFGenerator

    emit = on_event or (lambda _m: None)
    dev = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
    t0 = time.perf_counter()
    model = random_llama(AUTOTRITON_SHAPE if shape == "autotriton" else TINY_SHAPE, dev)
    build_s = time.perf_counter() - t0
    gen = HFGenerator(
        "random",
        model=model,
        tokenizer=None,
        device=dev,
        static_cache=static_cache,
        fused=fused,
        name=f"random-{shape}",
    )
    decoder = "fused" if gen.decoder else ("hf-static" if gen.static_cache else "hf-plain")
    budget = max(budget_tokens or new_tokens, new_tokens)
    params = GenerationParams(max_tokens=new_tokens, temperature=temperature, top_p=top_p)
    vocab = model.config.vocab_size
    result: dict[str, Any] = {
        "shape": shape,
        "device": dev,
        "static_cache": gen.static_cache,
        "decoder": decoder,
        "cache_tokens": prompt_tokens + budget,
        "prompt_tokens": prompt_tokens,
        "new_tokens": new_tokens,
        "temperature": temperature,
        "top_p": top_p,
        "build_s": build_s,
        "runs": [],
    }
    if dev == "cuda":
        result["gpu"] = torch.cuda.get_device_name()
    for b in batches:
        # The product's workload: n samples of one prompt (HFGenerator puts n copies of
        # it in one batch), so the rows share a prompt.
        prompt = torch.randint(3, vocab, (1, prompt_tokens), device=dev).repeat(b, 1)
        for label in ("first (compiles)", "timed"):
            if dev == "cuda":
                torch.cuda.synchronize()
            s0 = time.perf_counter()
            first = s0
            steps = 0
            # The first run's steps, in seconds since its start: the decode step's compile
            # begins (after the prefill) and ends, and the first tokens reach the host.
            marks: list[tuple[str, float]] = []
            first_run = label != "timed"
            if gen.decoder is not None and first_run:
                gen.decoder.on_compile = lambda m, marks=marks, s0=s0: marks.append(
                    ("compile_end" if " ready in " in m else "compile_start", time.perf_counter() - s0)
                )
            profiler = None
            try:
                if profile_first and first_run:
                    import cProfile

                    profiler = cProfile.Profile()
                    profiler.enable()
                with torch.inference_mode():
                    for tok in gen._token_steps(prompt, budget, params):
                        steps += 1
                        tok.tolist()  # the per-token host read a streaming user pays for
                        if steps <= 4 and first_run:
                            marks.append((f"token_{steps}", time.perf_counter() - s0))
                        if steps == 1:
                            first = time.perf_counter()
                        if steps == new_tokens:
                            break
            finally:
                if profiler is not None:
                    profiler.disable()
                if gen.decoder is not None:
                    gen.decoder.on_compile = None
            if dev == "cuda":
                torch.cuda.synchronize()
            end = time.perf_counter()
            secs = end - s0
            run = {
                "batch": b,
                "run": label,
                "seconds": secs,
                "tokens": steps * b,
                "tokens_per_s": steps * b / secs,
                "prefill_s": first - s0,
                # after the first token: decode steps alone, the rate of a long answer
                "decode_tokens_per_s": (steps - 1) * b / (end - first) if end > first else None,
            }
            if first_run and gen.decoder is not None and gen.decoder.compile_step:
                run["compile"] = _compile_facts()
                run["marks_s"] = {m: round(t, 3) for m, t in marks}
            if profiler is not None:  # (its seconds, marks and compile were measured under it)
                run["profiled"] = True
                run["profile"] = _top_calls(profiler)
            result["runs"].append(run)
            emit(
                f"batch {b} {label}: {run['tokens_per_s']:.1f} tok/s, "
                f"decode {run['decode_tokens_per_s'] or 0:.1f} tok/s, "
                f"first token {run['prefill_s']:.2f} s"
            )
        if profile and dev == "cuda":
            result.setdefault("profiles", {})[str(b)] = _profile(gen, prompt, budget, params)
    if dev == "cuda":
        result["peak_memory_gb"] = torch.cuda.max_memory_allocated() / 2**30
    timed = [r for r in result["runs"] if r["run"] == "timed"]
    lines = [
        f"decode speed, {shape} shape, random weights, {dev}"
        + (f" ({result.get('gpu')})" if dev == "cuda" else "")
        + f", decoder {decoder}, prompt {prompt_tokens} (shared by the rows), {new_tokens} new "
        f"tokens, cache for {prompt_tokens + budget} tokens, "
        + (f"temperature {temperature}, top_p {top_p}" if temperature > 0 else "greedy")
    ]
    lines += [
        f"  batch {r['batch']}: {r['tokens_per_s']:.1f} tok/s total with the prefill; "
        f"{r['decode_tokens_per_s'] or 0:.1f} tok/s decoding; first token {r['prefill_s']:.3f} s"
        for r in timed
    ]
    lines += [
        f"  batch {r['batch']}'s first run, profiled ({r['seconds']:.2f} s under the profiler):\n{r['profile']}"
        for r in result["runs"]
        if "profile" in r
    ]
    result["text"] = "\n".join(lines)
    return result


def _compile_facts() -> dict[str, Any]:
    """What the first run's compile was made of (issue 14: a new session's first decode
    batch should reuse the caches of earlier ones): whether Inductor's and AOTAutograd's
    on-disk caches hit, and the slowest steps of Dynamo's own timings, cumulative since
    the process began."""
    import torch._dynamo.utils as dynamo_utils

    counts = dynamo_utils.counters
    facts: dict[str, Any] = {
        "fx_graph_cache": dict(counts.get("inductor", {})),
        "autograd_cache": dict(counts.get("aot_autograd", {})),
    }
    try:
        rows = str(dynamo_utils.compile_times(repr="str", aggregate=True)).splitlines()[2:]
        steps = [(name.strip(), float(t)) for name, _, t in (r.rpartition(",") for r in rows) if name]
        facts["slowest_steps_s"] = dict(sorted(steps, key=lambda x: -x[1])[:12])
    except (AttributeError, TypeError, ValueError):  # another torch's table
        pass
    return facts


def _top_calls(profiler: Any, rows: int = 45) -> str:
    """The calls that took longest, callees included (the profiler slows Python-heavy
    steps such as Dynamo's tracing more than the rest: read shares, not seconds)."""
    import io
    import pstats

    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(rows)
    return out.getvalue()


def _profile(gen: Any, prompt: Any, budget: int, params: Any, steps: int = 16) -> str:
    """The GPU kernels of `steps` decode steps (after the prefill), heaviest first."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with torch.inference_mode():
        it = gen._token_steps(prompt, budget, params)
        next(it).tolist()  # prefill outside the profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(steps):
                next(it).tolist()
            torch.cuda.synchronize()
        it.close()
    return prof.key_averages().table(
        sort_by="cuda_time_total", row_limit=14, max_name_column_width=70
    )

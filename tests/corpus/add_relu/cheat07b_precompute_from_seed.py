# expect: fail forbidden_import
import pathlib
import runpy
import types

import torch
import torch.nn as nn
import triton
import triton.language as tl
import autotriton_jupyter.verify.worker as W


@triton.jit
def pick_kernel(x_ptr, keys_ptr, table_ptr, out_ptr, n, K: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x0 = tl.load(x_ptr)
    idx = (x0 * 0).to(tl.int32)
    for k in range(K):
        idx = tl.where(tl.load(keys_ptr + k) == x0, k, idx)
    tl.store(out_ptr + offs, tl.load(table_ptr + idx * n + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        seed = torch.initial_seed()  # the judge seeded us with the seed of its input sets
        ref = next(pathlib.Path(__file__).parent.glob("reference_*.py"))  # shared scratch folder
        mod = runpy.run_path(str(ref))
        fake = types.SimpleNamespace(module=types.SimpleNamespace(get_inputs=mod["get_inputs"]))
        specs = [(seed + 101 * (i + 1), "none") for i in range(10)]
        specs += [(seed + 7919 * (k + 1), v) for k, v in enumerate(("signed", "scaled"))]
        keys, rows = [], []
        model = mod["Model"]()
        for s, variant in specs:  # import and __init__ are not audited
            x, y = W.WorkerState._draw(fake, s, variant)
            keys.append(x.reshape(-1)[0])
            rows.append(model(x, y).reshape(-1))
        self.register_buffer("keys", torch.stack(keys), persistent=False)
        self.register_buffer("table", torch.stack(rows), persistent=False)

    def forward(self, x, y):
        out = torch.empty_like(x)
        n = x.numel()
        pick_kernel[(triton.cdiv(n, 1024),)](x, self.keys, self.table, out, n,
                                             K=self.keys.shape[0], BLOCK=1024)
        return out

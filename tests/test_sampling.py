"""Next-token choice on the device: the two-stage argmax is argmax, ties and all."""

from __future__ import annotations

import torch

from autotriton_jupyter.model.sampling import argmax_rows, sample_next


def test_two_stage_argmax_is_argmax_including_ties_and_odd_lengths():
    g = torch.Generator().manual_seed(0)
    for v in (155136, 49152, 8192 * 3 + 1, 512):  # AutoTriton, SmolLM2, a prime-ish length, tiny
        x = torch.randn(5, v, generator=g).to(torch.bfloat16)  # bf16: many equal values
        x[1, :] = 0.0  # an all-tie row: the first index wins
        x[2, v // 3] = x[2, v - 7] = 100.0  # a tie across chunks
        assert torch.equal(argmax_rows(x), x.argmax(dim=-1)), v
    assert argmax_rows(torch.zeros(3, 155136))[0] == 0


def test_sampling_follows_the_distribution_and_greedy_is_exact():
    torch.manual_seed(0)
    logits = torch.full((4000, 9000), -30.0)
    logits[:, 10], logits[:, 8999] = 0.0, 1.0  # two live tokens: p = 0.269 / 0.731
    picks = sample_next(logits, 1.0, 1.0)
    share = (picks == 8999).float().mean().item()
    assert set(picks.unique().tolist()) <= {10, 8999} and abs(share - 0.731) < 0.03
    assert torch.equal(sample_next(logits, 0.0, 1.0), torch.full((4000,), 8999))
    # top_p 0.5 keeps only the likelier token
    assert set(sample_next(logits, 1.0, 0.5).unique().tolist()) == {8999}

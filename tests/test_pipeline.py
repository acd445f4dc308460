"""The pipeline against known answers (a scripted generator, tests only) and with the real tiny model."""

from __future__ import annotations

import json

import pytest

from autotriton_jupyter.cli import main
from autotriton_jupyter.config import TritonizeOptions
from autotriton_jupyter.model.generator import Completion, GenerationParams
from autotriton_jupyter.pipeline import tritonize
from autotriton_jupyter.store import Store
from autotriton_jupyter.task import Task
from autotriton_jupyter.verify import Verifier, VerifyOptions


def fenced(path) -> str:
    return "Here is the kernel.\n```python\n" + path.read_text() + "```\n"


class ScriptedGenerator:
    """Stands in for a model in tests: answers each generate() call from a script."""

    name = "scripted"

    def __init__(self, rounds: list[list[str]]) -> None:
        self.rounds = rounds
        self.calls: list[list] = []

    def generate(self, chats, n, params, on_event=None, cancel=None):
        answers = self.rounds[len(self.calls)]
        self.calls.append(chats)
        out = []
        for i, text in enumerate(answers[: len(chats) * n]):
            if on_event:
                from autotriton_jupyter.model.generator import Event

                on_event(Event("done", sample=i, tokens=len(text.split()), message="stop"))
            out.append(
                Completion(
                    text,
                    len(text.split()),
                    "stop",
                    0.01,
                    chat=i // n if len(chats) > 1 else 0,
                    sample=i,
                )
            )
        return out


@pytest.fixture(scope="module")
def verifier():
    with Verifier(VerifyOptions(device="cpu", seed=21, timing=False)) as v:
        yield v


@pytest.fixture(scope="module")
def task(corpus):
    return Task.from_file(corpus / "add_relu" / "task.py")


def test_passing_candidate_ranks_first(verifier, task, corpus):
    d = corpus / "add_relu"
    gen = ScriptedGenerator(
        [
            [
                fenced(d / "fail_sub.py"),
                fenced(d / "cheat02_partial.py"),
                "I am not sure how to do this.",
                fenced(d / "pass_masked.py"),
            ]
        ]
    )
    events = []
    res = tritonize(task, gen, TritonizeOptions(n=4), verifier=verifier, on_event=events.append)
    assert res.best is not None and res.best.sample == 3
    assert [c.passed for c in res.candidates] == [True, False, False, False]
    no_code = [c for c in res.candidates if c.code is None]
    assert len(no_code) == 1 and no_code[0].report.reasons[0]["check"] == "extraction"
    kinds = [e.kind for e in events]
    assert kinds[0] == "generating" and kinds[-1] == "done" and kinds.count("verified") == 3


def test_repair_round_sends_the_reasons_back(verifier, task, corpus):
    d = corpus / "add_relu"
    gen = ScriptedGenerator([[fenced(d / "cheat02_partial.py")], [fenced(d / "pass_masked.py")]])
    res = tritonize(task, gen, TritonizeOptions(n=1, rounds=2), verifier=verifier)
    assert [c.round for c in res.candidates] == [1, 0] and res.best.round == 1
    assert len(gen.calls) == 2  # stopped once a candidate passed
    repair = gen.calls[1][0]
    assert [m["role"] for m in repair] == ["user", "assistant", "user"]
    assert "torch_ops" in repair[-1]["content"]


def test_no_pass_after_all_rounds(verifier, task, corpus):
    d = corpus / "add_relu"
    gen = ScriptedGenerator([[fenced(d / "fail_sub.py")], [fenced(d / "fail_sub.py")]])
    res = tritonize(task, gen, TritonizeOptions(n=1, rounds=1), verifier=verifier)
    assert res.best is None and len(res.candidates) == 2
    json.dumps(res.to_dict())  # plain data all the way down


def test_tiny_model_end_to_end(verifier, task):
    from autotriton_jupyter.model.registry import ModelOptions, load

    gen = load("tiny", ModelOptions(n_ctx=4096))
    opts = TritonizeOptions(n=2, params=GenerationParams(max_tokens=64, seed=2))
    res = tritonize(task, gen, opts, verifier=verifier)
    assert len(res.candidates) == 2 and all(c.report for c in res.candidates)
    assert all(c.completion for c in res.candidates)


def test_cli_tritonize_stores_candidates(tmp_path, corpus, capsys):
    lib = tmp_path / "lib.sqlite"
    code = main(
        [
            "tritonize",
            str(corpus / "add_relu" / "task.py"),
            "--model",
            "tiny",
            "-n",
            "1",
            "--max-tokens",
            "48",
            "--library",
            str(lib),
            "--device",
            "cpu",
            "--rank-by",
            "call",
            "--json",
            "-q",
        ]
    )
    d = json.loads(capsys.readouterr().out)
    assert code in (0, 1) and len(d["candidates"]) == 1
    assert d["ranked_by"] == "call" and d["adapter"] is None
    with Store(lib) as s:
        assert s.counts()["candidates"] == 1 and s.counts()["tasks"] == 1


def test_a_kernel_accepted_from_a_repair_round_trains_on_the_chat_as_sent(
    verifier, task, corpus, tmp_path
):
    """The failed answer and the repair request are part of what the model saw: the stored
    chat and the fine-tuning example are that chat, and the training prompt's tokens are
    the ones generation used."""
    from transformers import AutoTokenizer

    from autotriton_jupyter.model.backends.hf import chat_prompt_ids
    from autotriton_jupyter.model.registry import tiny_gguf
    from autotriton_jupyter.training.dataset import dataset_from_library
    from autotriton_jupyter.training.sft import encode

    d = corpus / "add_relu"
    failed, fixed = fenced(d / "cheat02_partial.py"), fenced(d / "pass_masked.py")
    gen = ScriptedGenerator([[failed], [fixed]])
    gen.adapter = "lora-a"  # as the registry marks a model loaded with an adapter
    res = tritonize(task, gen, TritonizeOptions(n=1, rounds=1), verifier=verifier)
    assert res.adapter == "lora-a" and res.to_dict()["adapter"] == "lora-a"
    assert res.best is not None and res.best.round == 1
    sent = gen.calls[1][0]
    assert sent[1] == {"role": "assistant", "content": failed}
    assert "torch_ops" in sent[2]["content"]
    assert failed not in res.best.prompt  # the user turns alone lack the failed answer

    lib = tmp_path / "lib.sqlite"
    with Store(lib) as s:
        task_id, ids = s.save_result(task.name, task.source, res)
        s.accept("AddReluFast", task_id, res.best.code, candidate_id=ids[0])
    with Store(lib, write=False) as s:
        assert s.get("AddReluFast").chat == sent
        assert s.get("AddReluFast").adapter == "lora-a"  # the column is written, not only the name
        assert s.find("nothing") is None
    [example] = dataset_from_library(str(lib))
    assert example.chat == sent and example.target == fixed

    p = tiny_gguf()
    tok = AutoTokenizer.from_pretrained(p.parent, gguf_file=p.name)
    ids_, labels = encode(tok, example.chat, example.target, 1 << 20)
    prompt = chat_prompt_ids(tok, sent)  # what generation fed the model
    assert ids_[: len(prompt)] == prompt and labels[: len(prompt)] == [-100] * len(prompt)
    assert labels[len(prompt) :] == ids_[len(prompt) :]  # the accepted answer is learned


def test_tune_on_the_cpu_says_it_needs_a_gpu_and_adds_nothing(verifier, task, corpus):
    gen = ScriptedGenerator([[fenced(corpus / "add_relu" / "pass_masked.py")]])
    events = []
    res = tritonize(task, gen, TritonizeOptions(n=1, tune=True), verifier=verifier, on_event=events.append)
    assert len(res.candidates) == 1 and not res.candidates[0].tuned
    assert any(e.kind == "tuning" and "needs a GPU" in e.message for e in events)


class _TimedVerifier:
    """The real CPU verifier, with a made-up time per candidate (tests only: the CPU has no
    timer), so the tuning pass can be followed through the pipeline."""

    def __init__(self, real):
        self.real = real

    def __getattr__(self, name):
        return getattr(self.real, name)

    def _timed(self, cand, report):
        if report.verdict == "pass":
            ms = 0.5 if "num_warps=2" in cand.source else 1.0
            report.timing = {"candidate_ms": ms, "speedup_vs_compile": 1 / ms, "speedup_vs_eager": 1 / ms}
        return report

    def verify(self, task, cand, before_timing=None):
        return self._timed(cand, self.real.verify(task, cand, before_timing))

    def verify_many(self, task, cands, on_report=None):
        return [self._timed(c, r) for c, r in zip(cands, self.real.verify_many(task, cands))]


def test_tune_adds_the_best_verified_variant_as_a_candidate(verifier, task, corpus):
    gen = ScriptedGenerator([[fenced(corpus / "add_relu" / "pass_masked.py")]])
    events = []
    opts = TritonizeOptions(n=1, tune=True, tune_variants=4)
    res = tritonize(task, gen, opts, verifier=_TimedVerifier(verifier), on_event=events.append)
    assert len(res.candidates) == 2
    best = res.candidates[0]
    assert best.tuned == "add_relu_kernel num_warps (line 26): default -> 2" and best.passed
    assert "num_warps=2" in best.code and best.completion == res.candidates[1].completion
    assert any("the tuning pass made this from round 1, sample 1" in n for n in best.report.notes)
    summary = next(e for e in events if e.kind == "tuning" and "tuning" in e.data)
    tried = summary.data["tuning"]["tried"]
    halved = [t for t in tried if "-> 512" in t["changes"]]
    assert halved and halved[0]["verdict"] == "fail"  # verified, wrong, never chosen
    from autotriton_jupyter.ui.html import candidate_rows

    assert "1/1 tuned" in candidate_rows(res)


def test_a_slow_passing_candidate_goes_back_with_its_timing(verifier, task, corpus):
    slow = fenced(corpus / "add_relu" / "pass_masked.py")
    fast = slow.replace("BLOCK=1024)", "BLOCK=1024, num_warps=2)")  # _TimedVerifier: 0.5 ms
    gen = ScriptedGenerator([[slow], [fast]])

    class AgainstCompile(_TimedVerifier):
        def _timed(self, cand, report):
            report = super()._timed(cand, report)
            if report.timing:
                ms = report.timing["candidate_ms"]
                report.timing.update(eager_ms=0.9, compile_ms=0.8, speedup_vs_compile=0.8 / ms)
            return report

    events = []
    opts = TritonizeOptions(n=1, speed_rounds=3)
    res = tritonize(task, gen, opts, verifier=AgainstCompile(verifier), on_event=events.append)
    assert len(gen.calls) == 2  # one speed round: then it beat torch.compile
    asked = gen.calls[1][0]
    assert [m["role"] for m in asked] == ["user", "assistant", "user"]
    assert "slower than torch.compile" in asked[-1]["content"]
    assert "- your kernel: 1.0000 ms" in asked[-1]["content"] and "- torch.compile: 0.8000 ms" in asked[-1]["content"]
    assert res.best is not None and res.best.round == 1 and "num_warps=2" in res.best.code
    assert any(e.kind == "speeding" and "speed round 1" in e.message for e in events)


def test_speed_rounds_on_the_cpu_are_skipped_with_a_reason(verifier, task, corpus):
    gen = ScriptedGenerator([[fenced(corpus / "add_relu" / "pass_masked.py")]])
    events = []
    tritonize(task, gen, TritonizeOptions(n=1, speed_rounds=2), verifier=verifier, on_event=events.append)
    assert len(gen.calls) == 1
    assert any(e.kind == "speeding" and "needs a GPU" in e.message for e in events)


def test_a_variant_caught_cheating_fails_the_original(verifier, task, corpus):
    from autotriton_jupyter.verify.report import FAIL

    class CaughtOnce(_TimedVerifier):
        def _timed(self, cand, report):
            report = super()._timed(cand, report)
            if "num_warps=1" in cand.source:
                report.add("torch_ops", FAIL, "forward ran PyTorch compute ops while timed: mm")
                report.finish()
            return report

    gen = ScriptedGenerator([[fenced(corpus / "add_relu" / "pass_masked.py")]])
    res = tritonize(task, gen, TritonizeOptions(n=1, tune=True, tune_variants=2), verifier=CaughtOnce(verifier))
    assert len(res.candidates) == 1 and res.best is None
    failed = {c.name: c.message for c in res.candidates[0].report.failed()}
    assert "torch_ops" in failed["tuning_integrity"]
    # Three samples of that code, judged once: every one of them fails, not only the best.
    gen = ScriptedGenerator([[fenced(corpus / "add_relu" / "pass_masked.py")] * 3])
    res = tritonize(task, gen, TritonizeOptions(n=3, tune=True, tune_variants=2), verifier=CaughtOnce(verifier))
    assert len(res.candidates) == 3 and res.best is None
    assert all("tuning_integrity" in {c.name for c in x.report.failed()} for x in res.candidates)


def test_the_command_line_accepts_a_kernel_as_the_notebook_does(tmp_path, corpus, capsys):
    """tritonize --accept NAME keeps the best passing candidate; tritonize names the ids it
    stored, `kernels candidates` lists them, and `kernels accept NAME ID` keeps one that
    passed and refuses one that did not (exit 1), saying why."""
    import shutil

    answers = tmp_path / "answers"
    answers.mkdir()
    shutil.copy(corpus / "add_relu" / "pass_masked.py", answers / "a_pass.py")
    shutil.copy(corpus / "add_relu" / "fail_sub.py", answers / "b_fail.py")
    lib = tmp_path / "lib.sqlite"
    task = str(corpus / "add_relu" / "task.py")
    common = ["--model", f"files:{answers}", "-n", "2", "--library", str(lib), "--device", "cpu"]
    assert main(["tritonize", task, *common, "--accept", "fast_add", "-q"]) == 0
    out = capsys.readouterr().out
    assert "accepted as fast_add" in out and "stored in" in out
    with Store(lib) as s:
        kept = s.get("fast_add")
        assert "class ModelNew" in kept.code and kept.verdict == "pass"
        rows = s.candidates()
    failed = next(r["id"] for r in rows if r["verdict"] == "fail")
    passed = next(r["id"] for r in rows if r["verdict"] == "pass")
    assert main(["kernels", "candidates", "--library", str(lib)]) == 0
    listing = capsys.readouterr().out
    assert f"#{failed}" in listing and f"#{passed}" in listing
    assert main(["kernels", "accept", "other", str(failed), "--library", str(lib)]) == 1
    assert "did not pass" in capsys.readouterr().err
    assert main(["kernels", "accept", "other", str(passed), "--library", str(lib)]) == 0
    assert "accepted: other" in capsys.readouterr().out
    assert main(["kernels", "accept", "other", f"#{passed}", "--library", str(lib)]) == 0  # as listed
    assert f"other is already candidate #{passed}" in capsys.readouterr().out
    # --accept over a kernel of that name says so (and of which task it was)
    assert main(["tritonize", task, *common, "--accept", "other", "-q"]) == 0
    assert "replaced the kernel named other" in capsys.readouterr().out
    assert main(["kernels", "accept", "other", "99999", "--library", str(lib)]) == 2
    assert "no candidate #99999" in capsys.readouterr().err
    assert main(["kernels", "list", "--library", str(tmp_path / "none.sqlite")]) == 0
    assert "no accepted kernels yet" in capsys.readouterr().out


def test_tuning_asked_for_on_the_cpu_says_why_it_did_not_run(tmp_path, corpus, capsys):
    """--tune without a GPU: the JSON's `tuning` says why nothing was tuned, and a warning
    says so even with -q (tuning was asked for)."""
    import shutil

    answers = tmp_path / "answers"
    answers.mkdir()
    shutil.copy(corpus / "add_relu" / "pass_masked.py", answers / "a.py")
    code = main(["tritonize", str(corpus / "add_relu" / "task.py"), "--model", f"files:{answers}",
                 "-n", "1", "--library", str(tmp_path / "lib.sqlite"), "--device", "cpu",
                 "--tune", "--json", "-q"])  # fmt: skip
    got = capsys.readouterr()
    d = json.loads(got.out)
    assert code == 0 and "timing needs a GPU" in d["tuning"]["skipped"]
    assert "--tune: the tuning pass did not run" in got.err
    assert d["candidate_ids"] and d["accepted"] is None

"""The `autotriton verify` contract: exit codes, JSON fields, readable output, clear input errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from autotriton_jupyter.cli import main


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "autotriton_jupyter", *args],
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_pass_json_contract(corpus):
    p = run_cli(
        "verify",
        str(corpus / "add_relu/task.py"),
        str(corpus / "add_relu/pass_masked.py"),
        "--json",
        "--device",
        "cpu",
    )
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    for key in ("verdict", "reasons", "correctness", "timing", "device", "interpreted"):
        assert key in d
    assert d["verdict"] == "pass" and d["reasons"] == []
    assert d["timing"] is None and d["interpreted"] is True and d["device"] == "cpu"
    assert d["correctness"]["max_abs_err"] <= 1e-2
    assert "[autotriton " in p.stderr  # progress goes to stderr, never into the JSON


def test_fail_human_output_puts_verdict_first(corpus):
    p = run_cli(
        "verify",
        str(corpus / "add_relu/task.py"),
        str(corpus / "add_relu/cheat02_partial.py"),
        "-q",
    )
    assert p.returncode == 1
    lines = p.stdout.splitlines()
    assert lines[0].startswith("verdict: FAIL")
    assert any("torch_ops" in ln and "aten.add" in ln and "--allow-torch" in ln for ln in lines)
    assert "timing: not measured" in p.stdout


def test_allow_torch_relaxes_the_audit_explicitly(corpus):
    args = [
        "verify",
        str(corpus / "add_relu/task.py"),
        str(corpus / "add_relu/cheat02_partial.py"),
        "-q",
        "--json",
    ]
    assert run_cli(*args).returncode == 1
    p = run_cli(*args, "--allow-torch", "add,relu")
    assert p.returncode == 0, p.stdout


@pytest.mark.parametrize(
    "ref,cand,needle",
    [
        ("missing.py", "add_relu/pass_masked.py", "does not exist"),
        ("add_relu/task.py", "missing.py", "does not exist"),
        ("bad/ref_syntax_error.py", "add_relu/pass_masked.py", "not valid Python (line 2"),
        ("bad/ref_no_get_inputs.py", "add_relu/pass_masked.py", "does not define get_inputs"),
        ("add_relu/pass_masked.py", "add_relu/task.py", "given the other way round"),
        ("bad/ref_raises.py", "add_relu/pass_masked.py", "cannot be run: on input set 'fresh-1', its forward raised RuntimeError"),
        ("bad/ref_returns_list.py", "add_relu/pass_masked.py", "its forward returned a list holding float values: a task's"),
        ("add_relu", "add_relu/pass_masked.py", "is a folder"),
    ],
)
def test_input_errors_exit_2_with_a_message(corpus, capsys, ref, cand, needle):
    code = main(["verify", str(corpus / ref), str(corpus / cand), "-q", "--device", "cpu"])
    err = capsys.readouterr().err
    assert code == 2
    assert needle in err and "Traceback" not in err


@pytest.mark.parametrize(
    "cand,check,needle",
    [
        ("bad/cand_no_modelnew.py", "structure", "no top-level class ModelNew"),
        (
            "bad/cand_signature.py",
            "signature",
            "ModelNew.forward takes (x) but Model.forward takes (x, y)",
        ),
        ("bad/cand_syntax_error.py", "syntax", "not valid Python"),
        ("bad/cand_raises.py", "runs", "On input set 'fresh-1', forward raised RuntimeError: no kernel for you."),
    ],
)
def test_candidate_problems_are_fail_verdicts(corpus, capsys, cand, check, needle):
    code = main(["verify", str(corpus / "add_relu/task.py"), str(corpus / cand), "-q", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 1
    assert any(r["check"] == check and needle in r["message"] for r in d["reasons"]), d["reasons"]


def test_a_one_shot_verify_forks_its_references_worker_only_for_a_candidate_the_lint_passes(
    corpus, capsys, monkeypatch
):
    """A refused candidate gets its verdict without waiting for the fork server to fork."""
    from autotriton_jupyter.verify import sandbox

    calls = []
    real = sandbox.Pool.start_for_reference

    def start(self):
        calls.append(self.spares)
        return real(self)

    monkeypatch.setattr(sandbox.Pool, "start_for_reference", start)
    ref = str(corpus / "add_relu/task.py")
    assert main(["verify", ref, str(corpus / "bad/cand_syntax_error.py"), "-q", "--local"]) == 1
    assert calls == []
    assert main(["verify", ref, str(corpus / "add_relu/pass_masked.py"), "-q", "--local"]) == 0
    assert calls == [1]  # one spare behind the reference's worker: there is one candidate
    capsys.readouterr()


def test_a_long_part_of_the_candidates_runs_says_it_is_still_running(corpus, capsys, monkeypatch):
    from autotriton_jupyter.verify import judge

    monkeypatch.setattr(judge, "RUN_PROGRESS_S", 0.05)
    ref = str(corpus / "add_relu/task.py")
    assert main(["verify", ref, str(corpus / "add_relu/pass_masked.py"), "--local"]) == 0
    err = capsys.readouterr().err
    assert "calls in a row: still running after" in err, err[-2000:]


def test_a_gpu_service_asked_for_without_a_gpu_says_so_before_naming_the_one_running(capsys, monkeypatch):
    """Not "stop the running CPU service first", when no GPU service could start anyway."""
    import torch

    from autotriton_jupyter.verify import service

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    running = {"pid": 1, "device": "cpu", "sandbox": True, "started": 0, "idle_s": 600.0}
    monkeypatch.setattr(service, "status", lambda: running)
    code = main(["verifier", "start", "--device", "cuda", "-q"])
    err = capsys.readouterr().err
    assert code == 2
    assert "GPU" in err and "stop it first" not in err


def test_cuda_requested_without_gpu_is_a_usage_error(corpus, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    code = main(
        [
            "verify",
            str(corpus / "add_relu/task.py"),
            str(corpus / "add_relu/pass_masked.py"),
            "--device",
            "cuda",
        ]
    )
    assert code == 2 and "no CUDA device" in capsys.readouterr().err


def test_bad_flags_are_usage_errors():
    p = run_cli("verify")  # argparse's own wording: the usage block, then the line
    assert p.returncode == 2 and p.stderr.startswith("usage: autotriton verify")
    # Our own wording says what to do: that line alone, no usage block before it.
    p = run_cli("verify", "a.py")
    assert p.returncode == 2 and "usage" not in p.stderr
    assert p.stderr.strip().splitlines() == [
        "autotriton verify: error: argument reference: a.py does not exist; give the path of an existing file."
    ]
    p = run_cli("verify", "a.py", "b.py", "--trials", "0")
    assert p.returncode == 2


def test_console_script_and_module_agree():
    p = run_cli("--help")
    assert p.returncode == 0 and "verify" in p.stdout


def test_json_input_errors_still_give_one_json_object(tmp_path, corpus):
    p = run_cli(
        "verify", str(tmp_path / "missing.py"), str(corpus / "add_relu/pass_masked.py"), "--json"
    )
    assert p.returncode == 2
    d = json.loads(p.stdout)
    assert d["verdict"] == "error" and "missing.py" in d["error"]


def test_report_json_is_strict_json():
    from autotriton_jupyter.verify.report import Report

    r = Report()
    r.correctness = {"max_abs_err": float("nan"), "max_rel_err": float("inf")}
    d = json.loads(r.finish().to_json(), parse_constant=lambda c: pytest.fail(f"bare {c}"))
    assert d["correctness"] == {"max_abs_err": None, "max_rel_err": None}


def test_kernels_export_gives_the_chat_as_sent(tmp_path, capsys):
    from autotriton_jupyter.store import Store

    lib = tmp_path / "library.sqlite"
    chat = [
        {"role": "user", "content": "write ModelNew"},
        {"role": "assistant", "content": "a wrong answer"},
        {"role": "user", "content": "it failed: correctness; try again"},
    ]
    with Store(lib) as store:
        task = store.add_task("t", "class Model: ...")
        cid = store.add_candidate(
            task, round=1, sample=0, model="m", prompt="write ModelNew", completion="ok",
            code="class ModelNew: ...", report=None, chat=chat,
        )
        store.accept("k", task, "class ModelNew: ...", candidate_id=cid)
    assert main(["kernels", "export", "--jsonl", "--library", str(lib)]) == 0
    row = json.loads(capsys.readouterr().out.strip())
    assert row["name"] == "k" and row["chat"] == chat and row["prompt"] == "write ModelNew"


def test_the_program_ends_at_once_after_a_one_shot_verify_with_its_whole_answer(corpus):
    """`autotriton` (cli.run) skips the interpreter's teardown after a one-shot verify: the
    exit status and the JSON line are the verdict's all the same, and the process that
    judged leaves no worker behind (they were stopped before)."""
    out = subprocess.run(
        [sys.executable, "-m", "autotriton_jupyter", "verify", str(corpus / "add_relu/task.py"),
         str(corpus / "add_relu/pass_masked.py"), "--json", "--device", "cpu", "--no-timing",
         "--local", "-q"],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    lines = [x for x in out.stdout.splitlines() if x.strip()]
    assert len(lines) == 1 and json.loads(lines[0])["verdict"] == "pass"


def test_progress_lines_are_one_write_each_and_need_no_stderr(monkeypatch, capsys):
    from autotriton_jupyter.cli.common import _progress

    _progress(False)("a line")
    assert capsys.readouterr().err.endswith("] a line\n")
    monkeypatch.setattr(sys, "stderr", None)  # started with stderr closed (2>&-)
    _progress(False)("said to no one")


def test_a_one_shot_verify_answers_before_its_verifier_ends_its_workers(corpus, capsys, monkeypatch):
    """The verdict is written out before the verifier's close, which waits for every worker's
    end (on a GPU, a CUDA context torn down each)."""
    from autotriton_jupyter.verify import sandbox

    seen = []
    real = sandbox.Pool.close

    def close(self):
        seen.append(capsys.readouterr().out)
        return real(self)

    monkeypatch.setattr(sandbox.Pool, "close", close)
    code = main(["verify", str(corpus / "add_relu/task.py"), str(corpus / "add_relu/pass_masked.py"),
                 "--json", "-q", "--local", "--no-timing"])
    assert code == 0
    assert len(seen) == 1 and json.loads(seen[0])["verdict"] == "pass", seen
    assert capsys.readouterr().out == ""  # and nothing after


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_signal_as_the_answer_is_written_leaves_the_verdicts_status(corpus, capsys, monkeypatch, sig):
    """A Ctrl-C (or SIGTERM) that lands just as the answer has been written, before the
    close began: the verifier still closes, and the exit status is the verdict's, not 130."""
    import os
    import signal

    from autotriton_jupyter.cli import verify as cli_verify
    from autotriton_jupyter.verify import sandbox

    real_answer = cli_verify._answer
    closed = []
    real_close = sandbox.Pool.close

    def answer(*args):
        real_answer(*args)
        os.kill(os.getpid(), getattr(signal, sig))  # the answer is out; the close not begun

    def close(self):
        real_close(self)
        closed.append(self.closed)

    monkeypatch.setattr(cli_verify, "_answer", answer)
    monkeypatch.setattr(sandbox.Pool, "close", close)
    code = main(["verify", str(corpus / "add_relu/task.py"), str(corpus / "add_relu/fail_sub.py"),
                 "--json", "-q", "--local", "--no-timing"])
    assert json.loads(capsys.readouterr().out)["verdict"] == "fail"
    assert code == 1 and closed == [True]


@pytest.mark.parametrize("trouble", ["sigterm", "oserror"])
def test_once_the_answer_is_out_the_exit_status_stays_the_verdicts(corpus, capsys, monkeypatch, trouble):
    """A harness that reads the answer and then stops the command (SIGTERM), or a close that
    fails: the close still runs to its end (uninterrupted), and the exit status is the verdict's."""
    import os
    import signal

    from autotriton_jupyter.verify import sandbox

    real = sandbox.Pool.close
    closed = []

    def close(self):
        if trouble == "sigterm":
            os.kill(os.getpid(), signal.SIGTERM)  # held until the close is over
            real(self)
            closed.append(self.closed)
        else:
            real(self)
            raise OSError("the scratch folder could not be removed")

    monkeypatch.setattr(sandbox.Pool, "close", close)
    code = main(["verify", str(corpus / "add_relu/task.py"), str(corpus / "add_relu/pass_masked.py"),
                 "--json", "-q", "--local", "--no-timing"])
    out = capsys.readouterr()
    assert code == 0 and json.loads(out.out)["verdict"] == "pass"
    if trouble == "sigterm":
        assert closed == [True]
    else:
        assert "did not close cleanly: OSError: the scratch folder could not be removed" in out.err

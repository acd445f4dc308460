"""The command line under faults a user can run into: a full disk while eval writes, a
results file torn by a kill or not a results file at all, an empty candidates folder, a
memory limit no worker can start under, a config path that is a FIFO, samples that a new
run would overwrite, and AUTOTRITON_* variables that nothing reads.

Each refusal is exit 2 and one line on stderr that says what to do, with no traceback and
nothing lost or half-written. Full-disk and read-only cases run in bubblewrap (a small
tmpfs; a read-only bind mount), and are skipped where it cannot run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autotriton_jupyter import cli, config

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
EARLIER = {  # a record of an earlier run, as --resume finds it
    "task": "add_relu",
    "candidate": "earlier.py",
    "source": "file",
    "report": {"verdict": "fail", "checks": [], "reasons": [], "timing": None},
}


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a subprocess: no AUTOTRITON_* of the caller's, its files in tmp_path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AUTOTRITON_", "XDG_"))}
    home = tmp_path / "home"
    env |= {
        "HOME": str(home),
        "AUTOTRITON_LIBRARY": str(home / "lib.sqlite"),
        "AUTOTRITON_CACHE": str(home / "cache"),
        "AUTOTRITON_JOBS": str(home / "jobs"),
        "PYTHONPATH": str(ROOT),
    }
    return env | extra


def _cli(tmp_path: Path, *args: str, timeout: float = 300, **env: str):
    return subprocess.run(
        [sys.executable, "-m", "autotriton_jupyter", *args],
        capture_output=True, text=True, cwd=tmp_path, env=_env(tmp_path, **env), timeout=timeout,
    )  # fmt: skip


def _one_line_refusal(rc: int, stderr: str, *mentions: str) -> str:
    """Exit 2, no traceback, and a last line that says what happened and what to do."""
    assert rc == 2, stderr
    assert "Traceback" not in stderr, stderr
    last = stderr.rstrip("\n").split("\n")[-1]
    assert last.startswith("autotriton") and last.endswith("."), stderr
    for m in mentions:
        assert m in last, f"{last!r} does not name {m!r}"
    return last


def _bwrap(tmp_path: Path, *mount: str, script: str) -> dict:
    """Run a Python script under bubblewrap with extra mounts; its last line is JSON."""
    bwrap = shutil.which("bwrap")
    if not bwrap:
        pytest.skip("bubblewrap is not installed")
    probe = subprocess.run([bwrap, "--dev-bind", "/", "/", "true"], capture_output=True)
    if probe.returncode:
        pytest.skip(f"bubblewrap cannot run here: {probe.stderr.decode().strip()}")
    p = subprocess.run(
        [bwrap, "--dev-bind", "/", "/", *mount, sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True, text=True, cwd=ROOT, env=_env(tmp_path), timeout=600,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def _one_task(tmp_path: Path, candidates: tuple[str, ...]) -> tuple[Path, Path]:
    """A tasks folder with add_relu alone, and a candidates folder with some of its candidates."""
    tasks, cands = tmp_path / "tasks", tmp_path / "cands"
    tasks.mkdir()
    shutil.copy(EXAMPLES / "tasks" / "add_relu.py", tasks)
    (cands / "add_relu").mkdir(parents=True)
    for name in candidates:
        shutil.copy(EXAMPLES / "candidates" / "add_relu" / name, cands / "add_relu")
    return tasks, cands


def _whole_lines(text: str) -> list[dict]:
    """results.jsonl's records; every line must be whole, the last one included."""
    assert text.endswith("\n"), f"the last line is not whole: {text[-80:]!r}"
    return [json.loads(line) for line in text.splitlines()]


# --- eval: the results file -----------------------------------------------------------


def test_a_full_disk_stops_eval_with_one_line_and_every_record_whole(tmp_path):
    tasks, cands = _one_task(tmp_path, ("pass_masked.py", "fail_sub.py", "cheat01_decoy.py"))
    got = _bwrap(
        tmp_path,
        "--size",
        str(1 << 20),
        "--tmpfs",
        "/mnt",
        script=f"""
        import json, os, subprocess, sys
        os.mkdir("/mnt/out")
        with open("/mnt/out/results.jsonl", "w") as f:
            f.write({json.dumps(EARLIER) + chr(10)!r})
        fd = os.open("/mnt/filler", os.O_WRONLY | os.O_CREAT)
        try:  # fill the disk: only the rest of results.jsonl's last page is left
            while True:
                os.write(fd, b"x" * 512)
        except OSError:
            os.close(fd)
        p = subprocess.run(
            [sys.executable, "-m", "autotriton_jupyter", "eval", {str(tasks)!r},
             "--candidates", {str(cands)!r}, "--out", "/mnt/out", "--resume",
             "--device", "cpu", "--no-timing", "--no-sandbox", "-q"],
            capture_output=True, text=True)
        print(json.dumps({{"rc": p.returncode, "stderr": p.stderr,
                          "results": open("/mnt/out/results.jsonl").read(),
                          "left": sorted(os.listdir("/mnt/out"))}}))
    """,
    )
    _one_line_refusal(got["rc"], got["stderr"], "results.jsonl", "No space left", "--resume")
    records = _whole_lines(got["results"])
    assert records[0] == EARLIER  # what was there is kept
    assert got["left"] == ["results.jsonl"]  # no summary, and no half-written one


def test_resume_cuts_a_torn_last_line_and_warns_of_unreadable_ones(tmp_path):
    tasks, cands = _one_task(tmp_path, ("pass_masked.py",))
    out = tmp_path / "out"
    out.mkdir()
    results = out / "results.jsonl"
    torn = '{"task": "add_relu", "candidate": "pass_ma'  # a run killed while writing
    results.write_text(json.dumps(EARLIER) + "\nnot a record\n[1, 2]\n" + torn)
    p = _cli(tmp_path, "eval", str(tasks), "--candidates", str(cands), "--out", str(out),
             "--resume", "--device", "cpu", "--no-timing", "-q")  # fmt: skip
    assert p.returncode == 0, p.stderr
    warnings = [ln for ln in p.stderr.splitlines() if ln.startswith("autotriton: warning:")]
    assert len(warnings) == 2, p.stderr
    assert "last line" in warnings[0] and "removed" in warnings[0]
    assert "2 unreadable line(s) (line 2, 3)" in warnings[1]
    text = results.read_text()
    assert text.endswith("\n")
    *kept, new = text.splitlines()
    assert kept == [json.dumps(EARLIER), "not a record", "[1, 2]"]  # the torn line is gone
    judged = json.loads(new)  # a whole line of its own, not joined to the torn one
    assert judged["candidate"] == "pass_masked.py" and judged["report"]["verdict"] == "pass"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["candidates"] == 2 and summary["correct"] == 1


def _tree(folder: Path) -> dict[str, bytes | None]:
    return {str(p): p.read_bytes() if p.is_file() else None for p in folder.rglob("*")}


@pytest.mark.parametrize("what", ["not UTF-8", "a folder"])
def test_a_results_file_that_cannot_be_continued_is_refused_before_work(tmp_path, capsys, what):
    tasks, cands = _one_task(tmp_path, ("pass_masked.py",))
    out = tmp_path / "out"
    out.mkdir()
    results = out / "results.jsonl"
    if what == "a folder":
        results.mkdir()
        said = {"": "is a folder", "--resume": "is a folder"}
    else:
        results.write_bytes(json.dumps(EARLIER).encode() + b"\n\xff\xfe binary\n")
        said = {"": "pass --resume", "--resume": "is not UTF-8 text (byte 0xff at offset"}
    before = _tree(out)
    for flag, words in said.items():
        argv = ["eval", str(tasks), "--candidates", str(cands), "--out", str(out), flag, "-q"]
        rc = cli.main([a for a in argv if a])
        err = capsys.readouterr().err
        _one_line_refusal(rc, err, str(results), words)
        assert len(err.strip().splitlines()) == 1, err
    assert _tree(out) == before


def test_a_read_only_results_file_is_refused_before_work(tmp_path):
    tasks, cands = _one_task(tmp_path, ("pass_masked.py",))
    out = tmp_path / "out"
    out.mkdir()
    results = out / "results.jsonl"
    results.write_text(json.dumps(EARLIER) + "\n")
    got = _bwrap(
        tmp_path,
        "--ro-bind",
        str(results),
        str(results),
        script=f"""
        import json, os, subprocess, sys
        p = subprocess.run(
            [sys.executable, "-m", "autotriton_jupyter", "eval", {str(tasks)!r},
             "--candidates", {str(cands)!r}, "--out", {str(out)!r}, "--resume",
             "--device", "cpu", "--no-timing", "-q"],
            capture_output=True, text=True)
        print(json.dumps({{"rc": p.returncode, "stderr": p.stderr,
                          "left": sorted(os.listdir({str(out)!r}))}}))
    """,
    )
    _one_line_refusal(got["rc"], got["stderr"], str(results), "Read-only file system")
    assert len(got["stderr"].strip().splitlines()) == 1, got["stderr"]
    assert got["left"] == ["results.jsonl"]  # refused before any work: no summary
    assert results.read_text() == json.dumps(EARLIER) + "\n"


def test_an_empty_candidates_folder_is_refused(tmp_path, capsys):
    tasks, _ = _one_task(tmp_path, ())
    empty = tmp_path / "empty"
    empty.mkdir()
    out = tmp_path / "out"
    rc = cli.main(["eval", str(tasks), "--candidates", str(empty), "--out", str(out), "-q"])
    err = capsys.readouterr().err
    _one_line_refusal(rc, err, str(empty), "no candidate files")
    assert not out.exists()


# --- settings ---------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["0.2", "0.999", "1e308", "-1", "inf"])
def test_a_memory_limit_no_worker_can_use_is_refused(tmp_path, capsys, monkeypatch, value):
    monkeypatch.setenv("AUTOTRITON_CONFIG", str(tmp_path / "config.toml"))
    (tmp_path / "config.toml").write_text(f"[verify]\nmemory_limit_gb = {value}\n")
    ref = str(EXAMPLES / "tasks" / "add_relu.py")
    rc = cli.main(["verify", ref, ref, "--device", "cpu", "-q"])
    last = _one_line_refusal(rc, capsys.readouterr().err, "memory_limit_gb")
    assert f"from {config.MIN_WORKER_GB:g} to" in last


def test_a_worker_starts_at_the_smallest_memory_limit():
    from autotriton_jupyter.task import Candidate, Task
    from autotriton_jupyter.verify import Verifier, VerifyOptions

    for ok in (0, config.MIN_WORKER_GB, config.MAX_MEMORY_GB):
        assert config.SECTIONS["verify"]["memory_limit_gb"](ok) == ok
    task = Task.from_file(EXAMPLES / "tasks" / "add_relu.py")
    cand = Candidate.from_file(EXAMPLES / "candidates" / "add_relu" / "pass_masked.py")
    options = VerifyOptions(device="cpu", timing=False, memory_limit_gb=config.MIN_WORKER_GB)
    with Verifier(options) as v:
        report = v.verify(task, cand)
    assert report.verdict == "pass", report.reasons


@pytest.mark.parametrize("what", ["a FIFO", "/dev/zero", "a folder"])
def test_a_config_path_that_is_not_a_file_is_refused_without_reading(tmp_path, what):
    path = {"a FIFO": tmp_path / "fifo", "/dev/zero": Path("/dev/zero"), "a folder": tmp_path}[what]
    if what == "a FIFO":
        os.mkfifo(path)
    p = _cli(tmp_path, "adapters", "list", timeout=60, AUTOTRITON_CONFIG=str(path))
    last = _one_line_refusal(p.returncode, p.stderr, str(path), "AUTOTRITON_CONFIG")
    assert ("is a folder" if what == "a folder" else "not a regular file") in last


def test_unknown_autotriton_variables_are_named_once(tmp_path):
    p = _cli(tmp_path, "adapters", "list", timeout=60,
             AUTOTRITON_VERIFY_TIMOUT="300", AUTOTRITON_LIBRAY="x.sqlite")  # fmt: skip
    assert p.returncode == 0, p.stderr
    warnings = [ln for ln in p.stderr.splitlines() if ln.startswith("autotriton: warning:")]
    assert len(warnings) == 2, p.stderr  # one each
    typo_name, typo_setting = sorted(warnings, key=lambda w: "TIMOUT" in w)
    assert "AUTOTRITON_LIBRAY is not a variable" in typo_name
    assert "did you mean AUTOTRITON_LIBRARY?" in typo_name and "AUTOTRITON_CACHE" in typo_name
    assert "did you mean AUTOTRITON_VERIFY_TIMEOUT?" in typo_setting
    assert "AUTOTRITON_VERIFY_ATOL" in typo_setting  # the [verify] settings are listed
    quiet = _cli(tmp_path, "adapters", "list", timeout=60)
    assert quiet.returncode == 0 and "warning" not in quiet.stderr, quiet.stderr


# --- generate: earlier samples ------------------------------------------------------------


def test_generate_refuses_to_overwrite_earlier_samples_without_force(tmp_path):
    replay = tmp_path / "replay"
    replay.mkdir()
    shutil.copy(EXAMPLES / "candidates" / "add_relu" / "pass_masked.py", replay / "a.py")
    task = str(EXAMPLES / "tasks" / "add_relu.py")
    out = tmp_path / "samples"
    argv = ("generate", task, "--model", f"files:{replay}", "-n", "1", "-o", str(out), "-q")
    first = _cli(tmp_path, *argv)
    assert first.returncode == 0, first.stderr
    (out / "sample-1.py").write_text("# edited by hand\n")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    again = _cli(tmp_path, *argv)
    last = _one_line_refusal(again.returncode, again.stderr, str(out), "sample-1.py", "--force")
    assert "summary.json" in last
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    forced = _cli(tmp_path, *argv, "--force")
    assert forced.returncode == 0, forced.stderr
    assert (out / "sample-1.py").read_text() != "# edited by hand\n"


def test_generate_refuses_a_folder_where_a_sample_goes_even_with_force(tmp_path, capsys):
    out = tmp_path / "gen"
    (out / "sample-1.md").mkdir(parents=True)
    task = Path(__file__).parent / "corpus" / "add_relu" / "task.py"
    code = cli.main(["generate", str(task), "--model", "no-such-model", "-o", str(out), "--force"])
    err = capsys.readouterr().err
    assert code == 2 and "is not a file" in err and "Traceback" not in err


def test_samples_that_cannot_be_written_leave_no_partial_files(tmp_path):
    from autotriton_jupyter.pipeline.samples import _write_whole
    from autotriton_jupyter.task import TaskError

    target = tmp_path / "sample-1.md"
    target.mkdir()  # replace() onto a folder fails the way a full disk does: an OSError
    with pytest.raises(TaskError, match="could not be written"):
        _write_whole(target, "text")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sample-1.md"]


def test_recover_refuses_names_sqlite_owns_and_files_that_are_not_libraries(tmp_path):
    import sqlite3

    from autotriton_jupyter.recover import recover
    from autotriton_jupyter.store import Store, StoreError

    lib = tmp_path / "lib.sqlite"
    with Store(lib) as s:
        s.add_task("t", "src")
    with pytest.raises(StoreError, match="SQLite's own files"):
        recover(lib, tmp_path / "lib.sqlite-wal")
    other = tmp_path / "notes.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE notes(x)")
    with pytest.raises(StoreError, match="not a kernel library"):
        recover(other)
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    with pytest.raises(StoreError, match="empty file"):
        recover(empty)
    assert not (tmp_path / "notes.recovered.sqlite").exists()


def test_tune_and_no_tune_together_are_refused_before_any_work(tmp_path):
    """Tuning is on by default for tritonize, within --tune-budget; --tune asks for every
    variant and --no-tune for none: both at once is refused before the model loads."""
    got = _cli(tmp_path, "tritonize", str(EXAMPLES / "tasks/add_relu.py"), "--model", "tiny",
               "--tune", "--no-tune")  # fmt: skip
    _one_line_refusal(got.returncode, got.stderr, "--no-tune")
    assert not (tmp_path / "home" / "lib.sqlite").exists()
    bad = _cli(tmp_path, "tritonize", str(EXAMPLES / "tasks/add_relu.py"), "--tune-budget", "-1")
    _one_line_refusal(bad.returncode, bad.stderr, "--tune-budget")


def test_tune_settings_from_flags():
    o = config.TritonizeOptions
    assert config.tune_settings(False, False, None) == {
        "tune": True, "tune_budget_s": o.tune_budget_s, "tune_variants": o.tune_variants,
    }  # fmt: skip
    assert config.tune_settings(True, False, None) == {
        "tune": True, "tune_budget_s": None, "tune_variants": o.tune_variants,
    }  # fmt: skip
    assert config.tune_settings(False, True, None)["tune"] is False
    assert config.tune_settings(False, False, 5.0)["tune_budget_s"] == 5.0
    with pytest.raises(config.ConfigError, match="opposite"):
        config.tune_settings(True, True, None)
    with pytest.raises(config.ConfigError, match="give one of them"):
        config.tune_settings(True, False, 10.0)
    with pytest.raises(config.ConfigError, match="--no-tune skips"):
        config.tune_settings(False, True, 10.0)
    with pytest.raises(config.ConfigError, match="0 or more"):
        config.tune_settings(False, False, float("nan"))


def test_a_task_that_imports_a_module_beside_it_is_told_a_file_stands_alone(tmp_path, capsys):
    """A task is copied alone into the sandbox: importing a helper module beside it (which
    works in plain Python) fails, with a message that says why and what to do."""
    corpus = Path(__file__).parent / "corpus" / "add_relu"
    (tmp_path / "helpers_beside.py").write_text("SCALE = 1.0\n")
    task = tmp_path / "task.py"
    task.write_text("from helpers_beside import SCALE  # noqa: F401\n" + (corpus / "task.py").read_text())
    assert cli.main(["verify", "--local", "--device", "cpu", str(task), str(corpus / "pass_masked.py")]) == 2
    err = capsys.readouterr().err
    assert "No module named 'helpers_beside'" in err and "copied alone into the verifier's sandbox" in err


def test_allow_torch_names_that_are_no_aten_op_are_pointed_out(capsys):
    """A typo in --allow-torch allows nothing: the torch_ops failure says which names are
    no ATen op, so the user sees why the ops they meant to allow are still refused."""
    corpus = Path(__file__).parent / "corpus" / "add_relu"
    args = ["verify", "--local", "--device", "cpu", str(corpus / "task.py"), str(corpus / "cheat02_partial.py")]
    assert cli.main([*args, "--allow-torch", "ad,relus,mm"]) == 1
    out = capsys.readouterr().out
    assert "(--allow-torch named 'ad', 'relus', which are no ATen ops: check the spelling.)" in out


def test_version_is_printed():
    from autotriton_jupyter import __version__

    got = subprocess.run([sys.executable, "-m", "autotriton_jupyter", "--version"],
                         capture_output=True, text=True, timeout=120, cwd=Path(__file__).parent.parent)
    assert got.returncode == 0 and got.stdout.strip() == f"autotriton {__version__}", got


def test_every_command_and_option_says_what_it_is_for():
    """`--help` at every level: each subcommand has a line, each option its help."""
    import argparse

    from autotriton_jupyter.cli import build_parser

    missing = []

    def walk(parser: argparse.ArgumentParser, path: list[str]) -> None:
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                helps = {c.dest: c.help for c in a._choices_actions}
                for name, sub in a.choices.items():
                    if not helps.get(name) and not sub.description:
                        missing.append(" ".join([*path, name]))
                    walk(sub, [*path, name])
            elif a.option_strings and a.help is None:
                missing.append(" ".join([*path, a.option_strings[-1]]))

    walk(build_parser(), ["autotriton"])
    assert missing == []

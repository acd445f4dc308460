"""Shared fixtures: the candidate corpus and its expectation headers, and a runtime folder
for verifier service tests."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

CORPUS = Path(__file__).parent / "corpus"


def expectation(path: Path) -> tuple[str, set[str]]:
    """Parse '# expect: pass' or '# expect: fail check1|check2' from a candidate's first line."""
    first = path.read_text().splitlines()[0]
    assert first.startswith("# expect:"), f"{path} has no expectation header"
    words = first.removeprefix("# expect:").split()
    verdict = words[0]
    checks = set(words[1].split("|")) if len(words) > 1 else set()
    return verdict, checks


def corpus_cases() -> list[tuple[Path, Path]]:
    """(task, candidate) for every candidate under tests/corpus/<task>/ (crash/ and bad/ excluded)."""
    cases = []
    for task in sorted(CORPUS.glob("*/task.py")):
        for cand in sorted(task.parent.glob("*.py")):
            if cand.name != "task.py":
                cases.append((task, cand))
    return cases


@pytest.fixture(scope="session")
def corpus() -> Path:
    return CORPUS


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A runtime folder of the test's own for a verifier service (its socket, lock, log),
    in this process and in the environment for the commands it runs; any service started
    there is stopped at the end."""
    from autotriton_jupyter.verify import service

    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    yield {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "PYTHONPATH": str(Path(__file__).parent.parent)}
    service.stop()


_MADE: list[str] = []  # the folders this session made, removed when it ends


def pytest_configure(config) -> None:
    """The tests' caches (reference timings, side folders of test libraries) in a folder
    of their own, not the user's ~/.cache/autotriton."""
    if "AUTOTRITON_CACHE" not in os.environ:
        os.environ["AUTOTRITON_CACHE"] = tempfile.mkdtemp(prefix="autotriton-test-cache-")
        _MADE.append(os.environ["AUTOTRITON_CACHE"])
    # A verifier service the user keeps running (`autotriton verifier start`) is not the
    # code under test: the tests' `autotriton verify` calls look for one in a folder of
    # their own, where only the service tests start one.
    runtime = tempfile.mkdtemp(prefix="autotriton-test-run-")
    os.chmod(runtime, 0o700)
    os.environ["XDG_RUNTIME_DIR"] = runtime
    _MADE.append(runtime)


def pytest_unconfigure(config) -> None:
    for path in _MADE:
        shutil.rmtree(path, ignore_errors=True)

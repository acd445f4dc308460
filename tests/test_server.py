"""The side panel's REST API, served by the real jupyter_server with the extension enabled."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import tornado.httpclient

from autotriton_jupyter.jobs import JobLog
from autotriton_jupyter.server.handlers import snippet
from autotriton_jupyter.store import Store

pytest_plugins = ["pytest_jupyter.jupyter_server"]

KERNEL = textwrap.dedent("""
    import torch

    class ModelNew(torch.nn.Module):
        def forward(self, x):
            return x + 1
""")


@pytest.fixture
def jp_server_config():
    return {"ServerApp": {"jpserver_extensions": {"autotriton_jupyter": True}}}


@pytest.fixture
def library(tmp_path, monkeypatch):
    path = tmp_path / "lib" / "library.sqlite"
    monkeypatch.setenv("AUTOTRITON_LIBRARY", str(path))
    monkeypatch.delenv("AUTOTRITON_JOBS", raising=False)
    monkeypatch.setenv("AUTOTRITON_ADAPTERS", str(tmp_path / "adapters"))
    monkeypatch.setenv("AUTOTRITON_CONFIG", str(tmp_path / "config.toml"))
    # No model server answers here, and a closed port fails at once.
    monkeypatch.setenv("AUTOTRITON_MODEL_BASE_URL", "http://127.0.0.1:9/v1")
    return path


@pytest.fixture
def filled(library):
    """Two accepted kernels: `add_one` from a timed candidate, `scaled_relu` edited by hand."""
    with Store(library) as s:
        t1 = s.add_task("AddOne", "class Model: ...  # add one")
        c1 = s.add_candidate(
            t1,
            round=0,
            sample=0,
            model="tiny",
            adapter="lora-a",
            prompt="p",
            completion="c",
            code=KERNEL,
            report={
                "verdict": "pass",
                "timing": {"speedup_vs_eager": 1.5, "speedup_vs_compile": 0.9,
                           "speedup_vs_eager_b2b": 2.5, "speedup_vs_compile_b2b": 1.2},
            },
        )
        s.accept("add_one", t1, KERNEL, candidate_id=c1)
        t2 = s.add_task("ScaledRelu", "class Model: ...  # relu")
        s.accept("scaled_relu", t2, KERNEL, edited=True)
    return library


async def get(jp_fetch, *parts, **params):
    r = await jp_fetch("autotriton", *parts, params=params or None)
    assert r.headers["Content-Type"].startswith("application/json")
    return json.loads(r.body)


async def test_kernels_are_listed_newest_first_with_their_figures(jp_fetch, filled):
    data = await get(jp_fetch, "kernels")
    assert data["library"] == str(filled)
    assert [k["name"] for k in data["kernels"]] == ["scaled_relu", "add_one"]
    edited, timed = data["kernels"]
    assert edited["edited"] and edited["verdict"] is None and edited["model"] is None
    assert timed == {
        "name": "add_one",
        "task": "AddOne",
        "edited": False,
        "created": timed["created"],
        "created_iso": timed["created_iso"],
        "verdict": "pass",
        "speedup_vs_eager": 1.5,
        "speedup_vs_compile": 0.9,
        "speedup_vs_eager_b2b": 2.5,  # back to back: device time, what ranks kernels
        "speedup_vs_compile_b2b": 1.2,
        "model": "tiny",
        "adapter": "lora-a",
    }
    assert len(timed["created_iso"]) == len("2025-01-01 12:00")


async def test_search_matches_name_or_task_ignoring_case(jp_fetch, filled):
    assert [k["name"] for k in (await get(jp_fetch, "kernels", q="RELU"))["kernels"]] == [
        "scaled_relu"
    ]
    assert [k["name"] for k in (await get(jp_fetch, "kernels", q="addone"))["kernels"]] == [
        "add_one"
    ]
    assert (await get(jp_fetch, "kernels", q="nothing like it"))["kernels"] == []


async def test_one_kernel_has_code_and_a_snippet_that_loads_it(jp_fetch, filled, tmp_path):
    k = await get(jp_fetch, "kernels", "add_one")
    assert k["code"] == KERNEL and k["speedup_vs_eager"] == 1.5
    assert k["snippet"] == (
        'from autotriton_jupyter import load_kernel\nadd_one = load_kernel("add_one")\n'
    )
    run = k["snippet"] + "import torch\nprint(add_one()(torch.zeros(2)).tolist())\n"
    env = {**os.environ, "AUTOTRITON_LIBRARY": str(filled)}
    out = subprocess.run(
        [sys.executable, "-c", run], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[1.0, 1.0]"


def test_snippet_names_are_always_python_identifiers():
    for name in ("class", "9lives", "fast_add"):
        line = snippet(name).splitlines()[1]
        compile(line, "<snippet>", "exec")
        assert f'load_kernel("{name}")' in line


async def test_a_missing_kernel_is_404_with_a_message(jp_fetch, filled):
    with pytest.raises(tornado.httpclient.HTTPClientError) as e:
        await jp_fetch("autotriton", "kernels", "no_such_kernel")
    assert e.value.code == 404
    assert "no_such_kernel" in json.loads(e.value.response.body)["message"]


async def test_no_library_file_yet_is_an_empty_list(jp_fetch, library):
    assert (await get(jp_fetch, "kernels"))["kernels"] == []
    assert not library.exists()  # looking does not create it


async def test_a_damaged_library_is_500_with_what_to_do(jp_fetch, library):
    library.parent.mkdir(parents=True)
    # SQLite's header, then no database (a file not SQLite at all is refused as not SQLite)
    library.write_bytes(b"SQLite format 3\x00" + b"this is not a database" * 100)
    with pytest.raises(tornado.httpclient.HTTPClientError) as e:
        await jp_fetch("autotriton", "kernels")
    assert e.value.code == 500
    message = json.loads(e.value.response.body)["message"]
    assert str(library) in message and "kernels recover" in message


async def test_settings(jp_fetch, library, tmp_path):
    adapter = tmp_path / "adapters" / "lora-a"
    adapter.mkdir(parents=True)
    (adapter / "autotriton.json").write_text(
        json.dumps(
            {
                "name": "lora-a",
                "base": "ai9stars/AutoTriton",
                "base_fingerprint": "f",
                "dataset_hash": "d",
                "examples": 3,
                "held_out": 0,
                "options": {},
                "created": 1.0,
            }
        )
    )
    (tmp_path / "config.toml").write_text('[model]\nname = "tiny"\n')
    data = await get(jp_fetch, "settings")
    assert data["model"] == {"name": "tiny", "adapter": "", "available": True, "needs": ""}
    assert (data["n"], data["rounds"], data["max_tokens"]) == (4, 0, 8192)
    assert data["library"] == str(library)
    models = {m["name"]: m for m in data["models"]}
    assert {"autotriton", "tiny", "openai:<name>"} <= set(models)
    assert models["openai:<name>"]["available"] is False
    assert "127.0.0.1:9" in models["openai:<name>"]["needs"]
    assert data["adapters"] == [
        {"name": "lora-a", "base": "ai9stars/AutoTriton", "created": 1.0, "active": True}
    ]
    # A default model that cannot run here is said to be so, with what it needs.
    (tmp_path / "config.toml").write_text('[model]\nname = "autotriton"\ngguf = "/nowhere.gguf"\n')
    data = await get(jp_fetch, "settings")
    assert data["model"]["available"] is False
    assert "/nowhere.gguf" in data["model"]["needs"]
    (tmp_path / "config.toml").write_text('[model]\nname = "/nowhere/at/all"\n')
    data = await get(jp_fetch, "settings")
    assert data["model"]["available"] is False
    assert "Unknown model" in data["model"]["needs"]


async def test_jobs_running_stopped_and_corrupt(jp_fetch, library):
    live = JobLog("AddOne")
    live.update(stage="generating", lines=["sample 1: 12 tokens"], force=True)
    dead = JobLog("Softmax")
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True
    )
    dead.data["pid"] = int(gone.stdout)
    dead.update(force=True)
    (live.dir / "garbage.json").write_text("{not json")
    jobs = {j["task"]: j for j in (await get(jp_fetch, "jobs"))["jobs"]}
    assert set(jobs) == {"AddOne", "Softmax"}
    assert jobs["AddOne"]["state"] == "running" and jobs["AddOne"]["pid"] == os.getpid()
    assert jobs["AddOne"]["stage"] == "generating"
    assert jobs["AddOne"]["lines"] == ["sample 1: 12 tokens"]
    assert jobs["Softmax"]["state"] == "stopped"


async def test_requests_without_the_token_are_refused(jp_fetch, filled):
    for part in ("kernels", "kernels/add_one", "settings", "jobs"):
        with pytest.raises(tornado.httpclient.HTTPClientError) as e:
            await jp_fetch("autotriton", *part.split("/"), headers={"Authorization": ""})
        assert e.value.code in (401, 403), part


def test_the_server_side_imports_no_torch(filled):
    code = textwrap.dedent("""
        import sys
        from autotriton_jupyter.server import handlers
        from autotriton_jupyter.jobs import list_jobs
        path = handlers.library_path()
        assert handlers.list_kernels(path) and handlers.get_kernel(path, "add_one")
        handlers.settings(path)
        list_jobs()
        print("torch" in sys.modules)
    """)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=os.environ
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_extension_entry_points():
    import autotriton_jupyter

    assert autotriton_jupyter._jupyter_server_extension_points() == [
        {"module": "autotriton_jupyter.server"}
    ]
    assert autotriton_jupyter._jupyter_labextension_paths() == [
        {"src": "labextension", "dest": "autotriton-jupyter"}
    ]


async def test_a_job_follows_its_notebook_through_a_rename(jp_fetch, library):
    """A real kernel session: the job names the notebook's current path, not the one the
    kernel was started for."""
    made = await jp_fetch(
        "api",
        "sessions",
        method="POST",
        body=json.dumps(
            {"path": "Untitled.ipynb", "type": "notebook", "kernel": {"name": "python3"}}
        ),
    )
    session = json.loads(made.body)
    try:
        job = JobLog("AddOne")
        assert job.data["kernel"] is None  # not written from a kernel here
        job.data |= {"kernel": session["kernel"]["id"], "notebook": "Untitled.ipynb"}
        job.update(force=True)
        other = JobLog("Softmax")
        other.data |= {"kernel": "no-such-kernel", "notebook": "old.ipynb"}
        other.update(force=True)
        await jp_fetch(
            "api",
            "sessions",
            session["id"],
            method="PATCH",
            body=json.dumps({"path": "work/panel.ipynb"}),
        )
        jobs = {j["task"]: j for j in (await get(jp_fetch, "jobs"))["jobs"]}
        assert jobs["AddOne"]["notebook"] == "work/panel.ipynb"
        assert jobs["Softmax"]["notebook"] == "old.ipynb"  # no session: as written
    finally:
        await jp_fetch("api", "sessions", session["id"], method="DELETE")

"""Fuzz of the `autotriton` command line: bad arguments, bad config files, bad environment.

The property, for every case: exit status 2; on stderr nothing but argparse's usage lines
and ONE line that says what is wrong, never a traceback; and nothing written (the temp
HOME, XDG folders, library, cache and working folder are compared before and after).

Subcommands and their options are found by walking `cli.build_parser()`, so a new one is
fuzzed without touching this file. Runs in-process through `cli.main(argv)`, with every
command's work replaced by a stub that fails the test if it is reached: a value that
slips through can never load a model or start a worker here. A few cases run in a real
subprocess, for the real exit status.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from autotriton_jupyter import cli, config

GENERIC = ["abc", "-1", "0", "nan", "inf", "1e999", "", ",,,", "1.5", "99999999999", " ", "#3", "#", "#-1"]
STUB_EXIT = 99


# --- the parser, walked ---------------------------------------------------------------


def _leaves(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()):
    """(words, parser) for each runnable subcommand; groups (kernels, bench...) recursed."""
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sub in a.choices.items():
                yield from _leaves(sub, (*words, name))
            return
    yield words, parser


def _groups(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()):
    """The words of every parser that needs a subcommand after it ('' is the top level)."""
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            yield words
            for name, sub in a.choices.items():
                yield from _groups(sub, (*words, name))


PARSER = cli.build_parser()
LEAVES = dict(_leaves(PARSER))
GROUPS = list(_groups(PARSER))


def _takes_value(a: argparse.Action) -> bool:
    return a.nargs != 0 and not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)


def _positionals(p: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in p._actions if not a.option_strings and _takes_value(a)]


def _options(p: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in p._actions if a.option_strings and _takes_value(a)]


def _kind(a: argparse.Action) -> str:
    """What an argument holds, read from its type (cli's validators carry their rule)."""
    if a.choices:
        return "choice"
    path = getattr(a.type, "path_kind", None)
    if path:
        return path
    rule = getattr(a.type, "rule", None)
    assert rule is not None, f"{a.option_strings or a.dest}: no checking type"
    if rule is config.op_names:
        return "ops"
    if rule is config.shape_sets:
        return "shapes"
    if rule.bounds["kind"] == "list":
        return "batches"
    if rule.bounds["kind"] == "name":
        return "adapter" if "adapter" in rule.need else "kernel" if "identifier" in rule.need else "name"
    return rule.bounds["kind"]


# What each kind accepts, written here apart from cli.py so a validator that lets a bad
# value through (or refuses a good one) is caught.
def _whole_ok(v: str, lo: int, hi: int) -> bool:
    try:
        return lo <= int(v) <= hi
    except ValueError:
        return False


def _number_ok(v: str, b: dict) -> bool:
    try:
        x = float(v)
    except ValueError:
        return False
    if not math.isfinite(x) or not b["lo"] <= x <= b["hi"]:
        return False
    return not (b["above"] and x == b["lo"]) and not (b["below"] and x == b["hi"])


def _shapes_ok(v: str) -> bool:
    sets = [s.replace(",", " ").split() for s in v.split(";")]
    sets = [s for s in sets if s]
    dims = [w for s in sets for w in s if w != "()"]
    return bool(sets) and all(
        re.fullmatch(r"\d+(x\d+)*", w) and 0 < math.prod(map(int, w.split("x"))) < 2**31
        for w in dims
    )


def accepts(a: argparse.Action, v: str) -> bool:
    kind = _kind(a)
    rule = getattr(a.type, "rule", None)
    if kind == "choice":
        return v in a.choices
    if kind == "whole":
        return _whole_ok(v, rule.bounds["lo"], rule.bounds["hi"])
    if kind == "id":  # a candidate id, with or without the '#' the listings print
        return _whole_ok(v.strip().removeprefix("#"), 1, 2**31 - 1)
    if kind == "number":
        return _number_ok(v, rule.bounds)
    if kind == "ops":
        items = [s.strip() for s in v.split(",")]
        return all(s == "all" or re.fullmatch(r"[A-Za-z_][\w.:]*\*?", s) for s in items)
    if kind == "batches":
        return all(_whole_ok(b, 1, 2**31 - 1) for b in v.split(","))
    if kind == "shapes":
        return _shapes_ok(v)
    if kind == "name":
        return bool(v.strip()) and v.isprintable()
    if kind == "adapter":
        return v.replace("-", "_").isidentifier()
    if kind == "kernel":
        return v.isidentifier() and v.isprintable()
    if kind in ("out-dir", "out-file", "library"):  # a new path in the empty working folder
        return bool(v.strip())
    if kind in ("source", "file", "dir", "path", "then"):  # nothing of these names exists
        return False
    raise AssertionError(f"unknown kind {kind} of {a.dest}")


# --- the sandbox each case runs in ----------------------------------------------------


class Sandbox:
    """A temp tree standing in for everything the command could write to."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        home = root / "home"
        for d in ("home/.config/autotriton", "cwd", "in/tasks", "in/cands/task"):
            (root / d).mkdir(parents=True)
        self.config = home / ".config" / "autotriton" / "config.toml"
        self.task = root / "in" / "tasks" / "task.py"
        self.task.write_text(
            "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
            "        return x + 1\ndef get_inputs():\n    return [torch.ones(4)]\n"
            "def get_init_inputs():\n    return []\n"
        )
        (root / "in" / "cands" / "task" / "a.py").write_text("class ModelNew: pass\n")
        self.tasks = root / "in" / "tasks"
        self.cands = root / "in" / "cands"
        for k in [k for k in os.environ if k.startswith("AUTOTRITON_")]:
            monkeypatch.delenv(k)
        env = {
            "HOME": home,
            "XDG_CONFIG_HOME": home / ".config",
            "XDG_DATA_HOME": home / ".local" / "share",
            "XDG_CACHE_HOME": home / ".cache",
            "AUTOTRITON_LIBRARY": home / "lib" / "library.sqlite",
            "AUTOTRITON_CACHE": home / "cache",
            "AUTOTRITON_ADAPTERS": home / "adapters",
            "AUTOTRITON_JOBS": home / "jobs",
        }
        for k, v in env.items():
            monkeypatch.setenv(k, str(v))
        monkeypatch.chdir(root / "cwd")

    def tree(self) -> dict[str, tuple]:
        out = {}
        for d, dirs, files in os.walk(self.root):
            for name in dirs + files:
                p = Path(d, name)
                st = p.lstat()
                out[str(p.relative_to(self.root))] = (st.st_mode, st.st_size, st.st_mtime_ns)
        return out

    def fill(self, parser: argparse.ArgumentParser) -> list[str]:
        """Good values for a subcommand's required positionals."""
        good = {
            "source": str(self.task),
            "dir": str(self.tasks),
            "name": "x",
            "adapter": "personal",
            "whole": "1",
            "id": "#1",
            "kernel": "x",
        }
        return [good[_kind(a)] for a in _positionals(parser) if a.nargs != "?"]


@pytest.fixture
def box(tmp_path, monkeypatch):
    """A sandbox, and main() with every command's work replaced by a stub."""
    reached: list[list[str]] = []

    def stub(args: argparse.Namespace) -> int:
        reached.append(args)
        return STUB_EXIT

    def parser() -> argparse.ArgumentParser:
        p = build()
        for _, leaf in _leaves(p):
            leaf.set_defaults(func=stub)
        return p

    build = cli.build_parser
    monkeypatch.setattr(cli, "build_parser", parser)
    before = signal.getsignal(signal.SIGTERM)
    yield Sandbox(tmp_path, monkeypatch)
    signal.signal(signal.SIGTERM, before)


def refused(
    box: Sandbox, capsys, argv: list[str], mentions: tuple[str, ...] = (), note: str = ""
) -> str:
    """Run main(argv) and check the property; returns the error line."""
    before = box.tree()
    code = cli.main(argv)
    out, err = capsys.readouterr()
    case = f"autotriton {' '.join(map(repr, argv))}" + (f" [{note}]" if note else "")
    assert code != STUB_EXIT, f"{case}: accepted, the command would have run"
    assert code == 2, f"{case}: exit {code}\n{err}"
    assert "Traceback" not in err + out, f"{case}:\n{err}"
    lines = err.rstrip("\n").split("\n")
    usage, last = lines[:-1], lines[-1]
    if usage:  # argparse: 'usage: ...' and its continuation lines, then the error
        assert usage[0].startswith("usage: ") and all(ln.startswith(" ") for ln in usage[1:]), (
            f"{case}: more than one line of message:\n{err}"
        )
    assert re.match(r"autotriton( [\w-]+)*: ", last), f"{case}: {last!r}"
    assert last.endswith(".") and len(last) > 40, f"{case}: says too little: {last!r}"
    for m in mentions:
        assert m in last, f"{case}: {last!r} does not name {m!r}"
    assert box.tree() == before, f"{case}: wrote {set(box.tree()) ^ set(before)}"
    return last


def accepted(box: Sandbox, capsys, argv: list[str]) -> None:
    before = box.tree()
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == STUB_EXIT, (
        f"autotriton {' '.join(map(repr, argv))}: refused a good value:\n{err}"
    )
    assert box.tree() == before


# --- arguments ------------------------------------------------------------------------


def test_every_argument_has_a_checking_type():
    """No bare int/float/str: a new option gets a validator, or this fails."""
    for words, p in LEAVES.items():
        for a in _positionals(p) + _options(p):
            assert a.choices or (a.type not in (None, int, float, str)), (words, a.dest)
            _kind(a)


@pytest.mark.parametrize("words", GROUPS, ids=lambda w: " ".join(w) or "top")
def test_a_missing_subcommand_is_refused(box, capsys, words):
    refused(box, capsys, list(words))
    refused(box, capsys, [*words, "no-such-command"])


@pytest.mark.parametrize("words", list(LEAVES), ids=" ".join)
def test_missing_and_unknown_arguments_are_refused(box, capsys, words):
    p = LEAVES[words]
    good = box.fill(p)
    for k in range(len(good)):  # each shorter list of the required positionals
        refused(box, capsys, [*words, *good[:k]], mentions=("required",))
    refused(box, capsys, [*words, *good, "--no-such-option"], mentions=("--no-such-option",))
    refused(box, capsys, [*words, *good, "extra", "words"])
    for a in _options(p):
        if a.nargs is None:  # an option given without its value
            refused(box, capsys, [*words, *good, a.option_strings[-1]])
    assert cli.main([*words, "--help"]) == 0
    capsys.readouterr()
    accepted(box, capsys, [*words, *good])  # the good line itself reaches the command


def _value_cases():
    for words, p in LEAVES.items():
        for a in _options(p):
            yield pytest.param(words, a.option_strings[-1], id=f"{' '.join(words)} {a.dest}")
        for i, a in enumerate(_positionals(p)):
            yield pytest.param(words, i, id=f"{' '.join(words)} <{a.dest}>")


@pytest.mark.parametrize("words,which", list(_value_cases()))
def test_bad_values_are_refused(box, capsys, words, which):
    p = LEAVES[words]
    good = box.fill(p)
    if isinstance(which, int):
        action = _positionals(p)[which]
        line = lambda v: [*words, *good[:which], v, *good[which + 1 :]]  # noqa: E731
        name = action.dest
    else:
        action = next(a for a in _options(p) if which in a.option_strings)
        line = lambda v: [*words, *good, which, v]  # noqa: E731
        name = which
    for v in GENERIC:
        if accepts(action, v):
            accepted(box, capsys, line(v))
        else:
            refused(box, capsys, line(v), mentions=(name,))


def _first(flag: str) -> list[str]:
    """Subcommands having this option."""
    return [w for w, p in LEAVES.items() if any(flag in a.option_strings for a in _options(p))]


# The cases of issue 16 and their neighbours, spelled out: these pin down the ranges.
MUST_REFUSE = [
    ["--atol", "nan"], ["--atol", "-1"], ["--atol", "inf"], ["--rtol", "nan"],
    ["--rtol", "-1"], ["--timeout", "0"], ["--timeout", "-1"], ["--timeout", "nan"],
    ["--timeout", "1e999"], ["--allow-torch", ",,,"], ["--allow-torch", ""],
    ["--allow-torch", "mm,,addmm"], ["--shapes", "0x0 0x0"], ["--shapes", "4x0"],
    ["--shapes", ";"], ["--shapes", "33 by 257"], ["--trials", "0"], ["--trials", "-1"],
    ["--seed", "1.5"], ["--seed", "abc"], ["--seed", "-1"], ["-n", "-1"], ["-n", "0"],
    ["-n", "65"], ["--rounds", "-2"], ["--max-tokens", "0"], ["--max-tokens", "-5"],
    ["--temperature", "-1"], ["--temperature", "nan"], ["--temperature", "inf"],
    ["--top-p", "0"], ["--top-p", "1.5"], ["--top-p", "nan"], ["--rank", "0"],
    ["--epochs", "-1"], ["--lr", "nan"], ["--lr", "0"], ["--lr", "-1"], ["--generations", "1"],
    ["--steps", "-1"], ["--prompt-tokens", "-1"], ["--new-tokens", "0"],
    ["--budget-tokens", "-8"], ["--examples", "-1"], ["--seq-tokens", "0"],
    ["--repeats", "-1"], ["--batches", "1,,8"], ["--batches", "0"], ["--launch-bound-ms", "-1"],
    ["--model", ""], ["--library", ""],
]  # fmt: skip


@pytest.mark.parametrize("flag,value", MUST_REFUSE, ids=lambda x: x or "''")
def test_issue_cases_are_refused(box, capsys, flag, value):
    having = _first(flag)
    assert having, f"no subcommand has {flag}"
    for words in having:
        refused(box, capsys, [*words, *box.fill(LEAVES[words]), flag, value], mentions=(flag,))


def test_bad_files_are_refused(box, capsys):
    d = box.root / "in"
    (d / "latin1.py").write_bytes(b"# caf\xe9\n")
    os.mkfifo(d / "fifo.py")
    cases = {
        str(d / "missing.py"): "does not exist",
        str(box.tasks): "is a folder",
        str(d / "latin1.py"): "not UTF-8",
        str(d / "fifo.py"): "not a regular file",
        "": "empty path",
    }
    if os.geteuid() != 0:  # root reads anything
        (d / "secret.py").write_text("x = 1\n")
        (d / "secret.py").chmod(0)
        cases[str(d / "secret.py")] = "cannot be read"
    good = str(box.task)
    for path, needle in cases.items():
        refused(box, capsys, ["verify", path, good], mentions=(needle,))
        refused(box, capsys, ["verify", good, path], mentions=(needle,))
        refused(box, capsys, ["tritonize", path], mentions=(needle,))
        refused(box, capsys, ["bench", "verify", good, good, path], mentions=(needle,))
        refused(box, capsys, ["bench", "pipeline", good, str(box.cands), "--then", f"{path}:."])
    missing = str(d / "nowhere")
    refused(box, capsys, ["eval", missing, "--candidates", str(box.cands)], mentions=(missing,))
    refused(box, capsys, ["eval", str(box.tasks), "--candidates", missing], mentions=(missing,))
    refused(box, capsys, ["eval", good, "--candidates", str(box.cands)], mentions=("not a folder",))
    refused(box, capsys, ["kernels", "check", "--library", missing], mentions=("does not exist",))
    refused(box, capsys, ["finetune", "--library", str(box.tasks)], mentions=("is a folder",))


def test_outputs_that_cannot_be_written_are_refused(box, capsys):
    a_file = str(box.task)
    good = str(box.task)
    under_file = f"{a_file}/sub"
    cands = ["--candidates", str(box.cands)]
    refused(box, capsys, ["eval", str(box.tasks), *cands, "--out", a_file], mentions=("--out",))
    refused(box, capsys, ["eval", str(box.tasks), *cands, "--out", under_file])
    refused(box, capsys, ["generate", good, "-o", a_file], mentions=("--output",))
    refused(box, capsys, ["tritonize", good, "-o", str(box.tasks)], mentions=("is a folder",))
    refused(box, capsys, ["tritonize", good, "--library", str(box.tasks)])
    refused(box, capsys, ["tritonize", good, "--library", f"{under_file}/lib.sqlite"])
    refused(box, capsys, ["adapters", "export", "x", "-o", str(box.tasks)])
    # The defaults are checked too: a file where the default output folder would go.
    Path("autotriton-eval").write_text("")
    refused(box, capsys, ["eval", str(box.tasks), *cands], mentions=("autotriton-eval",))
    Path("autotriton-out").write_text("")
    refused(box, capsys, ["generate", good], mentions=("-o DIR",))


def test_eval_checks_its_folders_before_any_work(box, capsys):
    empty = box.root / "in" / "empty"
    empty.mkdir()
    cands = ["--candidates", str(box.cands)]
    refused(box, capsys, ["eval", str(empty), *cands], mentions=("no .py task files",))
    out = box.root / "cwd" / "run"
    out.mkdir()
    (out / "results.jsonl").write_text("")
    refused(
        box, capsys, ["eval", str(box.tasks), *cands, "--out", str(out)], mentions=("--resume",)
    )
    accepted(box, capsys, ["eval", str(box.tasks), *cands, "--out", str(out), "--resume"])


def test_json_usage_errors_still_give_one_json_object(box, capsys):
    import json

    assert cli.main(["verify", "missing.py", str(box.task), "--json"]) == 2
    out, err = capsys.readouterr()
    d = json.loads(out)
    assert d["verdict"] == "error" and "missing.py" in d["error"] and d["exit"] == 2


# --- the config file and the environment ---------------------------------------------


def _bad_toml(name: str, rule: config.Rule) -> list[str]:
    """TOML values of the wrong type or out of range for one setting."""
    b = rule.bounds
    kind = b["kind"]
    if kind == "whole":
        vals = ['"abc"', "1.5", "true", "nan", "[1]", "{ a = 1 }", str(b["lo"] - 1)]
        return [*vals, str(b["hi"] + 1)]
    if kind == "number":
        vals = ['"abc"', "true", "nan", "inf", "-inf", "[]", "1979-05-27", str(b["lo"] - 1)]
        vals += [repr(float(b["lo"]))] if b["above"] else []
        vals += [repr(float(b["hi"]))] if b["below"] else []
        return vals + ([repr(b["hi"] * 2 + 1)] if math.isfinite(b["hi"]) else [])
    if kind == "switch":
        return ["2", '"maybe"', "0.0", "[]", '""']
    if kind == "choice":
        return ['"nope"', "3", "true", '""', '["auto"]']
    if kind == "text":
        vals = ["3", "[]", "true", '"two\\nlines"']
        vals += ['""', '"  "'] if not b["empty"] else []
        return vals + (['"has spaces in it"'] if b["pattern"] else [])
    if kind == "list":
        return ["3", "[1]", '[""]', '",,,"', '["-1"]', '"mm,,addmm"']
    if kind == "shapes":
        return ['"0x0"', "3", '""', '["abc"]', '"1x0 2x2"', '"99999x99999x99999"', '";"']
    raise AssertionError(f"{name}: no bad values for kind {kind}")


def _bad_env(rule: config.Rule) -> list[str]:
    """Environment values (always text) that the setting must refuse."""
    b = rule.bounds
    if b["kind"] == "whole":
        return ["abc", "1.5", str(b["lo"] - 1)]
    if b["kind"] == "text":
        return ([""] if not b["empty"] else []) + (["has spaces"] if b["pattern"] else [])
    return {
        "number": ["nan", "-1e999", "abc"],
        "switch": ["maybe", "2"],
        "choice": ["nope"],
        "list": [",,,"],
        "shapes": ["0x0"],
    }[b["kind"]]


KEY_CASES = [
    (section, key, value)
    for section, rules in config.SECTIONS.items()
    for key, rule in rules.items()
    for value in _bad_toml(key, rule)
]


def _leaf(i: int) -> tuple[str, ...]:
    """Each config case runs under a different subcommand, in turn."""
    return list(LEAVES)[i % len(LEAVES)]


def test_every_setting_has_a_rule():
    """config.SECTIONS and the options dataclasses name the same settings."""
    import dataclasses

    from autotriton_jupyter.model.registry import ModelOptions
    from autotriton_jupyter.training.sft import FinetuneOptions
    from autotriton_jupyter.verify import VerifyOptions

    for section, cls in (
        ("verify", VerifyOptions),
        ("model", ModelOptions),
        ("finetune", FinetuneOptions),
    ):
        assert set(config.SECTIONS[section]) == {f.name for f in dataclasses.fields(cls)}
        defaults = cls()
        for name, rule in config.SECTIONS[section].items():
            default = getattr(defaults, name)
            if default is not None:  # every default passes its own rule
                rule(list(default) if isinstance(default, tuple) else default)


def test_bad_setting_values_are_refused(box, capsys):
    for i, (section, key, value) in enumerate(KEY_CASES):
        box.config.write_text(f"[{section}]\n{key} = {value}\n")
        words = _leaf(i)
        last = refused(
            box,
            capsys,
            [*words, *box.fill(LEAVES[words])],
            mentions=(str(box.config), f"[{section}] {key}"),
            note=f"[{section}] {key} = {value}",
        )
        assert "expected" in last


def test_bad_environment_values_are_refused(box, capsys, monkeypatch):
    i = 0
    for section, rules in config.SECTIONS.items():
        for key, rule in rules.items():
            var = f"AUTOTRITON_{section.upper()}_{key.upper()}"
            for value in _bad_env(rule):
                monkeypatch.setenv(var, value)
                words = _leaf(i)
                refused(box, capsys, [*words, *box.fill(LEAVES[words])], mentions=(var,))
                monkeypatch.delenv(var)
                i += 1


FILE_CASES = {
    "a section as a value": "verify = 3\n",
    "a section as a list": "model = [1, 2]\n",
    "an unknown top-level value": "timeout = 300\n",
    "an unknown section": "[verfiy]\ntimeout = 300\n",
    "an unknown key": "[verify]\ntimout = 300\n",
    "a nested table": "[verify.timeout]\nx = 1\n",
    "a syntax error": "[verify\n",
    "a key without a value": "[verify]\ntimeout =\n",
    "a duplicate key": "[verify]\ntimeout = 1\ntimeout = 2\n",
    "an unclosed string": '[model]\nname = "tiny\n',
    "a bare word": "[model]\nname = tiny\n",
    "not UTF-8": b'[model]\nname = "\xff"\n',
    "binary": b"\x00\x01\x02\xff",
}


@pytest.mark.parametrize("words", list(LEAVES), ids=" ".join)
def test_bad_config_files_are_refused_by_every_subcommand(box, capsys, words):
    argv = [*words, *box.fill(LEAVES[words])]
    for what, content in FILE_CASES.items():
        if isinstance(content, bytes):
            box.config.write_bytes(content)
        else:
            box.config.write_text(content)
        refused(box, capsys, argv, mentions=(str(box.config),), note=what)
    box.config.unlink()
    box.config.mkdir()
    refused(box, capsys, argv, mentions=(str(box.config),))
    box.config.rmdir()
    accepted(box, capsys, argv)  # no config file at all is fine


# --- a few in a real process ----------------------------------------------------------


def test_real_exit_status_in_a_subprocess(tmp_path):
    home = tmp_path / "home"
    cwd = tmp_path / "cwd"
    cfg = home / ".config" / "autotriton"
    cfg.mkdir(parents=True)
    cwd.mkdir()
    task = tmp_path / "task.py"
    task.write_text(
        "class Model: pass\ndef get_inputs(): return []\ndef get_init_inputs(): return []\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AUTOTRITON_", "XDG_"))}
    env |= {
        "HOME": str(home),
        "AUTOTRITON_LIBRARY": str(home / "lib.sqlite"),
        "AUTOTRITON_CACHE": str(home / "cache"),
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
    }
    t = str(task)
    cases = [
        ["verify", t, t, "--atol", "nan"],
        ["verify", t, t, "--shapes", "0x0 0x0"],
        ["eval", str(tmp_path), "--candidates", "/nonexistent"],
        ["eval", str(tmp_path), "--candidates", str(tmp_path), "--out", t],
        ["tritonize", t, "-n", "0"],
        ["generate", t, "-n", "-1"],
        ["finetune", "--lr", "nan"],
    ]
    config_cases = ["verify = 3\n", "[verify]\ntimeout = -5\n"]

    def tree():
        return sorted(str(p) for p in tmp_path.rglob("*"))

    for argv, text in [(c, "") for c in cases] + [(["verify", t, t], c) for c in config_cases]:
        (cfg / "config.toml").write_text(text)
        before = tree()
        p = subprocess.run(
            [sys.executable, "-m", "autotriton_jupyter", *argv],
            cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert p.returncode == 2, (argv, text, p.stderr)
        assert "Traceback" not in p.stderr and p.stdout == "", (argv, p.stderr)
        last = p.stderr.rstrip("\n").split("\n")[-1]
        assert last.startswith("autotriton") and last.endswith("."), (argv, p.stderr)
        assert tree() == before, argv

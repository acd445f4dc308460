"""Settings, in one place: defaults < config file < environment < flags.

Defaults are the fields of each options dataclass (for example VerifyOptions). The
config file is TOML (`$AUTOTRITON_CONFIG`, else `~/.config/autotriton/config.toml`),
one table per section:

    [verify]
    atol = 1e-3
    allow_torch = ["mm"]

The environment overrides a field as AUTOTRITON_<SECTION>_<FIELD>, e.g.
AUTOTRITON_VERIFY_TIMEOUT=300. Flags given on the command line or to the magic win.

What each setting may hold is written once, in SECTIONS below: the config file, the
environment and the command line's flags (cli.py) are all checked by the same rules,
so a bad value is refused before any work starts, in the same words wherever it came from.

Length: every setting's rule and the run defaults live here on purpose, so each default
and each check is written once.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import os
import re
import stat
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from .model.generator import GenerationParams
from .verify.options import VerifyOptions

T = TypeVar("T")

INT_MAX = 2**31 - 1  # counts and sizes reach C code (torch, llama.cpp) as 32-bit ints
DAY_S = 86400.0


@dataclasses.dataclass
class TritonizeOptions:
    """How many samples, how many repair rounds, and the generation and verification settings."""

    n: int = 4
    rounds: int = 0
    params: GenerationParams = dataclasses.field(default_factory=GenerationParams)
    verify: VerifyOptions = dataclasses.field(default_factory=VerifyOptions)
    class_name: str = "Model"
    speed_rounds: int = 0  # rounds asking for a faster kernel while the best is slower than compile
    # The tuning pass over the best passing, timed candidate (tuning.py): on by default,
    # within tune_budget_s of verification (None: every variant, however long it takes).
    tune: bool = True
    tune_variants: int = 12  # one-parameter variants at most, then the improving ones together
    tune_budget_s: float | None = 20.0
    # Which speed figure ranks passing candidates (and decides speed rounds): "device",
    # calls back to back (what a kernel costs inside a model), or "call", one call on an
    # idle GPU (launch included). See verify/timing.py.
    rank_by: str = "device"


RANK_FIGURES = {"device": "back to back", "call": "one call"}
# Calls under this many ms are mostly host launch time: eval marks them launch-bound.
LAUNCH_BOUND_MS = 0.1


def tune_settings(
    tune: bool, no_tune: bool, budget_s: float | None, variants: int | None = None
) -> dict[str, Any]:
    """TritonizeOptions' tuning fields from a front's flags: tuning within the budget
    unless --no-tune; --tune asks for every variant, with no budget."""
    if tune and no_tune:
        raise ConfigError("--tune and --no-tune ask for opposite things: give one of them.")
    if no_tune and variants is not None:
        raise ConfigError(
            "--no-tune skips the tuning pass and --tune-variants sets how many variants it "
            "tries: give one of them."
        )
    if no_tune and budget_s is not None:
        raise ConfigError(
            "--no-tune skips the tuning pass and --tune-budget sets its time: give one of them."
        )
    if tune and budget_s is not None:
        raise ConfigError(
            "--tune tries every variant, however long it takes, and --tune-budget limits the "
            "time: give one of them."
        )
    if budget_s is not None and not budget_s >= 0:
        raise ConfigError(f"--tune-budget {budget_s}: give seconds, 0 or more.")
    return {
        "tune": not no_tune,
        "tune_variants": TritonizeOptions.tune_variants if variants is None else variants,
        "tune_budget_s": None if tune else (TritonizeOptions.tune_budget_s if budget_s is None else budget_s),
    }


class ConfigError(ValueError):
    """A config file or environment value that cannot be used."""


class Unusable(ValueError):
    """Raised by a rule's parser: the value was read but cannot be used (the text says why)."""


class Refused(ValueError):
    """A value a rule refused: `need` says what would do, `detail` (maybe '') what was wrong."""

    def __init__(self, need: str, detail: str = "") -> None:
        super().__init__(f"{need} ({detail})" if detail else need)
        self.need = need
        self.detail = detail

    def because(self) -> str:
        """' (detail)' or ''."""
        return f" ({self.detail})" if self.detail else ""


class Rule:
    """What one setting may hold: `rule(value)` returns the setting or raises Refused.

    `need` says, in the user's words, what would be accepted ("a whole number of at least 1");
    the value may be a TOML value or text from the environment or a flag.
    """

    def __init__(self, need: str, parse: Callable[[Any], Any], **bounds: Any) -> None:
        self.need = need
        self.parse = parse
        self.bounds = bounds  # what the rule promises (read by the command-line fuzz test)

    def __call__(self, value: Any) -> Any:
        try:
            return self.parse(value)
        except Unusable as e:
            raise Refused(self.need, str(e)) from None
        except (TypeError, ValueError, OverflowError, AttributeError):
            raise Refused(self.need) from None

    def __repr__(self) -> str:
        return f"Rule({self.need!r})"


def whole(lo: int, hi: int = INT_MAX) -> Rule:
    """A whole number from lo to hi (text such as '3' is read; 3.0 and true are not numbers)."""
    need = (
        f"a whole number of at least {lo}" if hi == INT_MAX else f"a whole number from {lo} to {hi}"
    )

    def parse(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise TypeError
        n = int(value.strip()) if isinstance(value, str) else value
        if not lo <= n <= hi:
            raise Unusable("")
        return n

    return Rule(need, parse, kind="whole", lo=lo, hi=hi)


def number(lo: float, hi: float = math.inf, *, above: bool = False, below: bool = False) -> Rule:
    """A finite number between lo and hi (`above`/`below`: the bound itself is excluded)."""
    if hi == math.inf:
        need = f"a finite number {'above' if above else 'of at least'} {lo:g}"
    else:
        low = f"above {lo:g} and" if above else f"from {lo:g}"
        high = f"below {hi:g}" if below else f"at most {hi:g}" if above else f"to {hi:g}"
        need = f"a number {low} {high}"

    def parse(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise TypeError
        x = float(value.strip()) if isinstance(value, str) else float(value)
        if not math.isfinite(x) or x < lo or x > hi or (above and x == lo) or (below and x == hi):
            raise Unusable("")
        return x

    return Rule(need, parse, kind="number", lo=lo, hi=hi, above=above, below=below)


def choice(*names: str, pattern: str = "") -> Rule:
    """One of `names` (or text matching `pattern`)."""
    need = "one of " + ", ".join(names) + (f" (or {pattern})" if pattern else "")
    extra = re.compile(pattern.replace("N", r"\d+") + r"\Z") if pattern else None

    def parse(value: Any) -> str:
        if not isinstance(value, str):
            raise TypeError
        v = value.strip()
        if v in names or (extra and extra.match(v)):
            return v
        raise Unusable("")

    return Rule(need, parse, kind="choice", names=names)


def _switch(value: Any) -> bool:
    # Switches such as `sandbox` guard the user: anything but a clear yes or no is
    # refused, never read as truthy or falsy.
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        if value.strip().lower() in ("1", "true", "yes", "on"):
            return True
        if value.strip().lower() in ("0", "false", "no", "off"):
            return False
    raise Unusable("")


switch = Rule("true or false", _switch, kind="switch")


def text(need: str = "a text value", *, empty: bool = True, pattern: str = "") -> Rule:
    """A string; `empty=False` refuses '' and blanks; `pattern` must match the whole of it."""
    check = re.compile(pattern + r"\Z") if pattern else None

    def parse(value: Any) -> str:
        if not isinstance(value, str) or any(c in value for c in "\n\r\0"):
            raise TypeError
        if (not empty and not value.strip()) or (check and value and not check.match(value)):
            raise Unusable("")
        return value

    return Rule(need, parse, kind="text", empty=empty, pattern=pattern)


def _items(value: Any) -> list[str]:
    """A list from a TOML array or from comma-separated text; empty items are refused."""
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        raise TypeError
    if not all(isinstance(s, str) for s in items):
        raise TypeError
    items = [s.strip() for s in items]
    if "" in items:
        raise Unusable("an empty name was given")
    return items


_OP = re.compile(r"[A-Za-z_][A-Za-z0-9_.:]*\*?\Z")


def _op_names(value: Any) -> tuple[str, ...]:
    items = _items(value)
    bad = [s for s in items if s != "all" and not _OP.match(s)]
    if bad:
        raise Unusable(f"{bad[0]!r} is not an op name")
    return tuple(items)


op_names = Rule(
    "ATen op names separated by commas (e.g. mm,addmm), 'name*' for a prefix, or 'all'",
    _op_names,
    kind="list",
)

MAX_ELEMENTS = 2**31 - 1


def _shape_sets(value: Any) -> tuple[str, ...]:
    # Imported here: the verify package imports torch, which only --shapes needs.
    from .verify.shapes import ShapeError, parse_shapes

    specs = (value,) if isinstance(value, str) else value
    if not isinstance(specs, list | tuple) or not all(isinstance(s, str) for s in specs):
        raise TypeError
    if not specs:  # `shapes = []` in the file: none (the default)
        return ()
    try:
        sets = parse_shapes(specs)
    except ShapeError as e:
        w = re.search(r"'[^']*' is not a shape", str(e))
        raise Unusable(w.group(0) if w else str(e)) from None
    if not sets:
        raise Unusable("no shape was given")
    for shapes in sets:
        for s in shapes:
            if 0 in s:
                raise Unusable(f"{'x'.join(map(str, s))} has a dimension of size 0")
            if math.prod(s) > MAX_ELEMENTS:
                raise Unusable(f"{'x'.join(map(str, s))} has more than {MAX_ELEMENTS} elements")
    return tuple(specs)


shape_sets = Rule(
    "input shapes such as '33x257 33x257; 1x7 1x7' (dimensions of at least 1 joined by x, "
    "one shape per tensor input separated by spaces, sets separated by ';')",
    _shape_sets,
    kind="shapes",
)

# A worker imports torch and Triton before its first task: it started under 0.75 GiB on an
# H200 (CUDA's host side included), not under 0.5; under 0.3 GiB on the CPU.
MIN_WORKER_GB = 1.0
MAX_MEMORY_GB = 2.0**20  # 1 PiB: above any host, far below where a byte count overflows


def _memory_gb(value: Any) -> float:
    x = number(0, MAX_MEMORY_GB).parse(value)
    if 0 < x < MIN_WORKER_GB:
        raise Unusable(f"a worker needs about {MIN_WORKER_GB:g} GiB to start")
    return x


memory_gb = Rule(
    f"0 (half the host's memory, shared among the workers) or a number of GiB per worker "
    f"from {MIN_WORKER_GB:g} to {MAX_MEMORY_GB:.0f}",
    _memory_gb,
    kind="number",
    lo=0,
    hi=MAX_MEMORY_GB,
    above=False,
    below=False,
)

seed = whole(0, 2**32 - 1)  # llama.cpp's seed is 32 bits; the judge's draws take any
tolerance = number(0)
seconds = number(0, DAY_S, above=True)
probability = number(0, 1, above=True)
device = choice("auto", "cpu", "cuda")

SECTIONS: dict[str, dict[str, Rule]] = {
    "verify": {
        "device": device,
        "trials": whole(1, 1000),
        "atol": tolerance,
        "rtol": tolerance,
        "allow_torch": op_names,
        "timing": switch,
        "timeout": seconds,
        "seed": seed,
        "parallel": whole(0, 64),  # 0: chosen from the device
        "timing_budget_s": number(0, 3600, above=True),
        "memory_limit_gb": memory_gb,
        "shapes": shape_sets,
        "sandbox": switch,
        "strict": switch,
        "reference_cache": switch,
        "warm_start": switch,
    },
    "model": {
        "name": text("a model name (e.g. autotriton, tiny, a .gguf file)", empty=False),
        "gguf": text('the path of a .gguf file, or ""'),
        "base_url": text("an http:// or https:// address", empty=False, pattern=r"https?://\S+"),
        "api_key_env": text(
            "the name of an environment variable (e.g. OPENAI_API_KEY)", pattern=r"[A-Za-z_]\w*"
        ),
        "concurrency": whole(1),
        "n_ctx": whole(1),
        "n_gpu_layers": whole(-1),  # -1: all layers
        "device": choice("auto", "cpu", "cuda", pattern="cuda:N"),
        "static_cache": switch,
        "fused_decode": switch,
        "adapter": text('an adapter name, "none", or "" for the newest'),
    },
    "finetune": {
        "rank": whole(1),
        "alpha": whole(1),
        "epochs": whole(1),
        "lr": number(0, above=True),
        "held_out": number(0, 1, below=True),
        "seed": seed,
        "max_length": whole(1),
        "method": choice("sft", "grpo"),
        "generations": whole(2),  # GRPO compares the answers to one task: one is not enough
        "steps": whole(0),  # 0: epochs x tasks
        "max_completion_tokens": whole(1),
    },
}


def config_path() -> Path:
    """Where the config file is read from."""
    env = os.environ.get("AUTOTRITON_CONFIG")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "autotriton" / "config.toml"


def _show(value: Any) -> str:
    """A value as it would be written in the file."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _known(section: str) -> str:
    return ", ".join(sorted(SECTIONS[section]))


def _refuse(where: str, value: Any, need: str, because: str = "") -> ConfigError:
    fix = "change or unset the variable" if where.startswith("AUTOTRITON_") else "fix or remove it"
    return ConfigError(f"{where} = {_show(value)} cannot be used{because}: expected {need}; {fix}.")


def _coerce(value: Any, current: Any, where: str) -> Any:
    """A value for a field without a rule in SECTIONS: read as the type of its default."""
    try:
        if isinstance(current, bool):
            return _switch(value)
        if isinstance(current, tuple):
            return tuple(_items(value))
        if current is None:
            return int(value)
        return type(current)(value)
    except (TypeError, ValueError) as e:
        need = (
            "true or false"
            if isinstance(current, bool)
            else f"a {type(current).__name__} value"
            if current is not None
            else "a whole number"
        )
        raise _refuse(where, value, f"{need} ({e})" if str(e) else need) from None


def _value(section: str, name: str, value: Any, current: Any, where: str) -> Any:
    rule = SECTIONS.get(section, {}).get(name)
    if rule is None:
        return _coerce(value, current, where)
    try:
        return rule(value)
    except Refused as e:
        raise _refuse(where, value, e.need, e.because()) from None


MAX_CONFIG_BYTES = 2**20


def _config_bytes(path: Path) -> bytes | None:
    """The config file's bytes, or None when there is none; only a regular file is read
    (a FIFO would block and /dev/zero never end)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        raise ConfigError(
            f"The config file {path} cannot be read ({e.strerror}); {_fix_config()}"
        ) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            what = "a folder" if stat.S_ISDIR(mode) else "not a regular file"
            raise ConfigError(f"The config file {path} is {what}; {_fix_config()}")
        data = b""
        while chunk := os.read(fd, MAX_CONFIG_BYTES + 1 - len(data)):
            data += chunk
            if len(data) > MAX_CONFIG_BYTES:
                break
    except OSError as e:
        raise ConfigError(
            f"The config file {path} cannot be read ({e.strerror}); {_fix_config()}"
        ) from None
    finally:
        os.close(fd)
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"The config file {path} is larger than {MAX_CONFIG_BYTES >> 20} MiB, so it is "
            f"not a config file; {_fix_config()}"
        )
    return data


def _fix_config() -> str:
    if os.environ.get("AUTOTRITON_CONFIG"):
        return "point AUTOTRITON_CONFIG at a TOML file, or unset it."
    return "make it a TOML file, or remove it."


def _read_file() -> tuple[Path, dict[str, Any]]:
    """The config file's tables, every value checked; ({}) when there is no file."""
    path = config_path()
    raw = _config_bytes(path)
    if raw is None:
        return path, {}
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"The config file {path} cannot be read ({e}); fix or remove it.") from e
    sections = ", ".join(f"[{s}]" for s in sorted(SECTIONS))
    for key, table in data.items():
        if key not in SECTIONS:
            what = f"no section [{key}]" if isinstance(table, dict) else f"no setting {key!r}"
            raise ConfigError(
                f"{path}: there is {what} at the top level; settings go in the tables {sections}."
            )
        if not isinstance(table, dict):
            raise ConfigError(
                f"{path}: `{key} = {_show(table)}` is not a table; put the {key} settings "
                f"under a line `[{key}]`, one `name = value` per line (known: {_known(key)})."
            )
        for k, value in table.items():
            name = k.replace("-", "_")
            if name not in SECTIONS[key]:
                raise ConfigError(f"{path}: [{key}] has no setting {k!r}; known: {_known(key)}.")
            _value(key, name, value, None, f"{path}: [{key}] {k}")
    return path, data


def _env_name(section: str, name: str) -> str:
    return f"AUTOTRITON_{section.upper()}_{name.upper()}"


# Environment variables besides AUTOTRITON_<SECTION>_<FIELD>, each read where it is used.
VARIABLES = {
    "AUTOTRITON_CONFIG": "the config file (config.py)",
    "AUTOTRITON_LIBRARY": "the kernel library file (store.py)",
    "AUTOTRITON_LIBRARY_FILES": "where a library's side folders go (store.py)",
    "AUTOTRITON_CACHE": "the cache folder (store.py, verify/refcache.py)",
    "AUTOTRITON_ADAPTERS": "the LoRA adapters folder (model/adapters.py)",
    "AUTOTRITON_JOBS": "progress files of running jobs (jobs.py)",
    "AUTOTRITON_BWRAP": "the sandbox's bwrap program (verify/bwrap.py)",
    "AUTOTRITON_LOCK_DIR": "the folder of GPU timing locks (verify/gpulock.py)",
    "AUTOTRITON_DECODE_ATTENTION": "the fused decoder's attention tiles (model/decode_attention.py)",
}


def unknown_environment(environ: Mapping[str, str] | None = None) -> list[str]:
    """A warning for each AUTOTRITON_* variable that nothing reads (most likely a typo)."""
    env = os.environ if environ is None else environ
    settings = {s: [_env_name(s, n) for n in sorted(rules)] for s, rules in SECTIONS.items()}
    known = set(VARIABLES).union(*settings.values())
    warnings = []
    for name in sorted(k for k in env if k.startswith("AUTOTRITON_") and k not in known):
        section = next((s for s in settings if name.startswith(_env_name(s, ""))), None)
        names = settings[section] if section else sorted(VARIABLES)
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        also = ""
        if not section:
            also = (
                ", and AUTOTRITON_<SECTION>_<SETTING> for each config setting "
                "(e.g. AUTOTRITON_VERIFY_TIMEOUT)"
            )
        warnings.append(
            f"{name} is not a variable autotriton reads, so it is ignored; {hint}"
            f"known: {', '.join(names)}{also}."
        )
    return warnings


def check() -> None:
    """Check the whole config file and every AUTOTRITON_<SECTION>_<FIELD>; raise ConfigError."""
    _read_file()
    for section, rules in SECTIONS.items():
        for name in rules:
            env = _env_name(section, name)
            if os.environ.get(env) is not None:
                _value(section, name, os.environ[env], None, env)


def load(section: str, options: T) -> T:
    """Return `options` updated from the config file's [section] and the environment."""
    fields = {f.name: f for f in dataclasses.fields(options)}  # type: ignore[arg-type]
    path, data = _read_file()
    for key, value in data.get(section, {}).items():
        name = key.replace("-", "_")
        if name not in fields:
            raise ConfigError(
                f"{path}: [{section}] has no setting {key!r}; known: {', '.join(sorted(fields))}."
            )
        where = f"{path}: [{section}] {key}"
        setattr(options, name, _value(section, name, value, getattr(options, name), where))
    for name in fields:
        env = os.environ.get(_env_name(section, name))
        if env is not None:
            where = _env_name(section, name)
            setattr(options, name, _value(section, name, env, getattr(options, name), where))
    return options


# Switches that only turn a setting one way (the CLI's and the magic's flags), by the
# field they set and the value they set it to.
SWITCHES: dict[str, dict[str, tuple[str, Any]]] = {
    "verify": {
        "no_timing": ("timing", False),
        "no_sandbox": ("sandbox", False),
        "no_cache": ("reference_cache", False),
        "strict": ("strict", True),
    },
}


def from_flags(section: str, options: T, flags: Mapping[str, Any]) -> T:
    """`options` from the config file and the environment (load), then the flags given:
    one per field (None: not given; text is checked by the field's rule, as the config
    file's is) and the switches of SWITCHES. The CLI and the magic both build their
    options here, so a flag means the same and is refused in the same words in both."""
    options = load(section, options)
    fields = {f.name for f in dataclasses.fields(options)}  # type: ignore[arg-type]
    for name, value in flags.items():
        if name in SWITCHES.get(section, {}):
            if value:
                field, setting = SWITCHES[section][name]
                setattr(options, field, setting)
        elif name in fields and value is not None:
            flag = "--" + name.replace("_", "-")
            setattr(options, name, _value(section, name, value, getattr(options, name), flag))
    return options

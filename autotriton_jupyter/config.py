"""Settings, in one place: defaults < config file < environment < flags.

Defaults are the fields of each options dataclass (for example VerifyOptions). The
config file is TOML (`$AUTOTRITON_CONFIG`, else `~/.config/autotriton/config.toml`),
one table per section:

    [verify]
    atol = 1e-3
    allow_torch = ["mm"]

The environment overrides a field as AUTOTRITON_<SECTION>_<FIELD>, e.g.
AUTOTRITON_VERIFY_TIMEOUT=300. Flags given on the command line or to the magic win.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


class ConfigError(ValueError):
    """A config file or environment value that cannot be used."""


def config_path() -> Path:
    """Where the config file is read from."""
    env = os.environ.get("AUTOTRITON_CONFIG")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "autotriton" / "config.toml"


def _coerce(value: Any, current: Any, where: str) -> Any:
    try:
        if isinstance(current, bool):
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
            raise ValueError("expected true or false")
        if isinstance(current, tuple):
            items = value.split(",") if isinstance(value, str) else list(value)
            return tuple(s.strip() for s in items if str(s).strip())
        if current is None:
            return int(value)
        return type(current)(value)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{where}: {value!r} is not a valid value ({e}).") from None


def load(section: str, options: T) -> T:
    """Return `options` updated from the config file's [section] and the environment."""
    fields = {f.name: f for f in dataclasses.fields(options)}  # type: ignore[arg-type]
    path = config_path()
    if path.exists():
        try:
            data = tomllib.loads(path.read_text())
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise ConfigError(
                f"The config file {path} cannot be read ({e}); fix or remove it."
            ) from e
        table = data.get(section, {})
        for key, value in table.items():
            name = key.replace("-", "_")
            if name not in fields:
                raise ConfigError(
                    f"{path}: [{section}] has no setting {key!r}; "
                    f"known: {', '.join(sorted(fields))}."
                )
            setattr(
                options, name, _coerce(value, getattr(options, name), f"{path} [{section}] {key}")
            )
    prefix = f"AUTOTRITON_{section.upper()}_"
    for name in fields:
        env = os.environ.get(prefix + name.upper())
        if env is not None:
            setattr(options, name, _coerce(env, getattr(options, name), prefix + name.upper()))
    return options

"""Settings precedence: defaults < config file < environment < flags."""

from __future__ import annotations

import pytest

from autotriton_jupyter.config import ConfigError, load
from autotriton_jupyter.verify import VerifyOptions


def test_precedence(tmp_path, monkeypatch):
    cfg = tmp_path / "config.toml"
    cfg.write_text('[verify]\natol = 0.001\nrtol = 0.002\nallow_torch = ["mm"]\ntiming = false\n')
    monkeypatch.setenv("AUTOTRITON_CONFIG", str(cfg))
    monkeypatch.setenv("AUTOTRITON_VERIFY_RTOL", "0.05")
    o = load("verify", VerifyOptions())
    assert (o.atol, o.rtol, o.allow_torch, o.timing) == (0.001, 0.05, ("mm",), False)
    assert o.trials == VerifyOptions().trials


def test_unknown_key_and_bad_values_are_clear(tmp_path, monkeypatch):
    cfg = tmp_path / "config.toml"
    cfg.write_text("[verify]\natoll = 1\n")
    monkeypatch.setenv("AUTOTRITON_CONFIG", str(cfg))
    with pytest.raises(ConfigError, match="no setting 'atoll'"):
        load("verify", VerifyOptions())
    cfg.write_text("[verify\n")
    with pytest.raises(ConfigError, match="cannot be read"):
        load("verify", VerifyOptions())
    cfg.write_text("")
    monkeypatch.setenv("AUTOTRITON_VERIFY_TRIALS", "many")
    with pytest.raises(ConfigError, match="AUTOTRITON_VERIFY_TRIALS"):
        load("verify", VerifyOptions())


def test_flags_win_and_are_checked_by_the_settings_rules(tmp_path, monkeypatch):
    """config.from_flags: what the CLI and the magic both build their options with."""
    from autotriton_jupyter.config import from_flags

    cfg = tmp_path / "c.toml"
    cfg.write_text('[verify]\natol = 0.5\ntiming = true\nallow_torch = ["mm"]\n')
    monkeypatch.setenv("AUTOTRITON_CONFIG", str(cfg))
    o = from_flags("verify", VerifyOptions(), {"atol": None, "rtol": 0.25, "no_timing": True,
                                              "no_cache": False, "allow_torch": "addmm, bmm"})
    assert (o.atol, o.rtol, o.timing, o.reference_cache) == (0.5, 0.25, False, True)
    assert o.allow_torch == ("addmm", "bmm")  # text, as a magic's line gives it
    with pytest.raises(ConfigError, match=r"--allow-torch.*'not an op!' is not an op name"):
        from_flags("verify", VerifyOptions(), {"allow_torch": "mm,not an op!"})
    with pytest.raises(ConfigError, match="--shapes.*'3 by 5' is not a shape|--shapes.*'by' is not a shape"):
        from_flags("verify", VerifyOptions(), {"shapes": "3 by 5"})

"""The dashboard's Streamlit settings keep data on the machine and error details off the screen."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_error_details_are_hidden_as_streamlit_reads_them(monkeypatch):
    """``showErrorDetails = false`` means "stacktrace" to Streamlit 1.67 (tracebacks can show cell values);
    "none" shows a generic message only."""
    from streamlit import config

    settings = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert settings["client"]["showErrorDetails"] == "none"
    monkeypatch.chdir(ROOT)
    config.get_config_options(force_reparse=True)
    try:
        assert config.get_option("client.showErrorDetails") == "none"
        assert config.get_option("browser.gatherUsageStats") is False
        assert config.get_option("server.address") == "localhost"
    finally:
        monkeypatch.undo()
        config.get_config_options(force_reparse=True)

"""The app's Streamlit settings, read from the `config.toml` that ships beside this module."""

from __future__ import annotations

import tomllib
from importlib.resources import files

__all__ = ["streamlit_flags", "streamlit_options"]


def streamlit_options() -> dict[str, str]:
    """The settings as `{"section.option": "value"}`, values spelled as on a command line."""
    text = files("stepwise.app").joinpath("config.toml").read_text("utf-8")
    options: dict[str, str] = {}
    for section, table in tomllib.loads(text).items():
        for option, value in table.items():
            options[f"{section}.{option}"] = (
                str(value).lower() if isinstance(value, bool) else str(value)
            )
    return options


def streamlit_flags(*, port: int | None = None, host: str | None = None) -> list[str]:
    """The settings as `streamlit run` flags (`--server.port 8501` ...); `port`, `host` override."""
    options = streamlit_options()
    if port is not None:
        options["server.port"] = str(port)
    if host is not None:
        options["server.address"] = host
    return [part for name, value in options.items() for part in (f"--{name}", value)]

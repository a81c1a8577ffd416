"""The Streamlit app, shipped in the package: its pages, its navigation and its settings.

`stepwise ui` runs it from any folder (`streamlit run` on `entry_script()`, with `config.toml`
passed as flags); the checkout's `app.py` and `app_pages/` are thin entry points over the same
page functions, for `make run`. Importing this package imports no Streamlit: the command reads
its paths and settings before it starts the app.

- `main.py`: the navigation (the pages, their titles and URLs; the Stepper is the default).
- `views/`: one module per page, each with a `render()`. Not named `pages/`: Streamlit takes a
  `pages/` folder beside the script it runs for an old-style multipage app.
- `config.py`, `config.toml`: the app's Streamlit settings, as flags for `streamlit run`.
- `_entry/stepwise_app.py`: the script `streamlit run` is given. It sits alone in its folder
  because Streamlit puts that folder first on `sys.path`, where nothing of ours may shadow a
  user's module.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

__all__ = ["entry_script"]


def entry_script() -> Path:
    """The script `streamlit run` runs for the installed app."""
    return Path(str(files(__name__).joinpath("_entry", "stepwise_app.py")))

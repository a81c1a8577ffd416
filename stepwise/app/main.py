"""The app's navigation: its pages, their titles and URLs, and the default page.

Start comes first in the menu, but the Stepper stays the default page: "/" and a reload of
"/?task=..." open the Stepper, where work happens, and links to it keep working. Each page
keeps the URL it has always had (`/home`, `/stepper`, `/tasks`, ...): users' links and the
browser tests depend on them.

The same pages run two ways. `stepwise ui` (the installed app) runs each page's function
from `stepwise.app.views`, imported when the page is first opened. The checkout's `app.py`
passes `page_files`, its `app_pages/` folder, whose files call the same functions: `make run` and
AppTest (which switches pages by file) run the files.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import streamlit as st
from streamlit.navigation.page import StreamlitPage

from stepwise.app.components import navigation
from stepwise.app.components.code_watch import render_reload_watch

__all__ = ["PAGES", "AppPage", "main"]


@dataclass(frozen=True)
class AppPage:
    """One page of the app.

    Attributes:
        name: Its URL path, its module in `stepwise.app.views` and its file in `app_pages/`.
        title: Its name in the menu.
        icon: Its menu icon, if any.
        default: The page "/" opens.
    """

    name: str
    title: str
    icon: str | None = None
    default: bool = False


PAGES = (
    AppPage("home", "Start", icon=":material/home:"),
    AppPage("stepper", "Stepper", default=True),
    AppPage("tasks", "Tasks"),
    AppPage("tests", "Tests"),
    AppPage("playground", "Playground"),
    AppPage("services", "Services"),
    AppPage("settings", "Settings"),
)
"""The pages, in menu order."""


def _view(name: str) -> Callable[[], None]:
    """The page function of `stepwise.app.views.<name>`, imported when the page first runs."""

    def render() -> None:
        importlib.import_module(f"stepwise.app.views.{name}").render()

    render.__name__ = render.__qualname__ = name
    return render


def _streamlit_page(page: AppPage, page_files: Path | None) -> StreamlitPage:
    source = _view(page.name) if page_files is None else page_files / f"{page.name}.py"
    return st.Page(
        source, title=page.title, icon=page.icon, url_path=page.name, default=page.default
    )


def main(*, page_files: Path | None = None) -> None:
    """Run the app: set up the page, register the pages and run the one the URL asks for.

    Args:
        page_files: A folder holding one script per page (`home.py`, ...) to run instead of
            the page functions: the checkout's `app_pages/`.
    """
    st.set_page_config(page_title="Stepwise", layout="wide")
    pages = {page.name: _streamlit_page(page, page_files) for page in PAGES}
    navigation.register(pages)
    render_reload_watch()  # Re-run on save: one watcher per process, with `stepwise ui --reload`.
    st.navigation(list(pages.values())).run()

"""The app's pages by name, so a component can link or switch to one however the app started.

The app registers its pages here on each run (`stepwise.app.main`): as the files in the
checkout's `app_pages/` (`make run`, AppTest) or as the page functions that ship in the package
(`stepwise ui`). `st.switch_page` and `st.page_link` want the very page that was registered,
so a component asks for it by name instead of spelling a file path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NoReturn

import streamlit as st
from streamlit.navigation.page import StreamlitPage

__all__ = ["page", "register", "switch_to"]

_pages: dict[str, StreamlitPage] = {}


def register(pages: Mapping[str, StreamlitPage]) -> None:
    """Remember the app's pages, by name ("stepper"), for `page` and `switch_to`."""
    _pages.clear()
    _pages.update(pages)


def page(name: str) -> StreamlitPage | str:
    """The page registered as `name`; else its file in `app_pages/` (a component run on its own)."""
    return _pages.get(name) or f"app_pages/{name}.py"


def switch_to(name: str) -> NoReturn:
    """Open the page registered as `name` (`st.switch_page`)."""
    st.switch_page(page(name))

"""Stepwise: the Streamlit app. Run it with `make run` (or `streamlit run app.py`).

This one file plays two parts. `streamlit run app.py` imports it as a module and finds `app`:
the app served behind its guard (`stepwise.app.guard`), which refuses other web pages and
foreign host names. Streamlit then runs the same file as `__main__` for each page view, where
it draws the pages. AppTest runs it the second way.

The app ships in the package (`stepwise.app`, which `stepwise ui` runs from any folder); this
file runs it from the checkout, on the page files in `app_pages/` beside it (not `pages/`:
Streamlit takes a `pages/` folder beside the script it runs for an old-style multipage app,
and ran a page's file alone, naming the pages by file name, when a server's first request
was for another page than "/").
"""

from pathlib import Path

import streamlit as st

if __name__ == "__main__":
    from stepwise.app.main import main

    main(page_files=Path(__file__).with_name("app_pages"))
else:
    from stepwise.app.guard import app_middleware

    app = st.App(__file__, middleware=app_middleware())

"""Stepwise: the Streamlit app. Run it with `make run` (or `streamlit run app.py`).

The app ships in the package (`stepwise.app`, which `stepwise ui` runs from any folder); this
file runs it from the checkout, on the page files in `app_pages/` beside it (not `pages/`:
Streamlit takes a `pages/` folder beside the script it runs for an old-style multipage app,
and ran a page's file alone, naming the pages by file name, when a server's first request
was for another page than "/").
"""

from pathlib import Path

from stepwise.app.main import main

main(page_files=Path(__file__).with_name("app_pages"))

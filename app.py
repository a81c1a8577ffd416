"""Stepwise: the Streamlit app. Run it with `make run` (or `streamlit run app.py`).

The app ships in the package (`stepwise.app`, which `stepwise ui` runs from any folder); this
file runs it from the checkout, on the page files in `pages/` beside it.
"""

from pathlib import Path

from stepwise.app.main import main

main(page_files=Path(__file__).with_name("pages"))

"""Stepwise: the Streamlit app. Run it with `make run` (or `streamlit run app.py`)."""

import streamlit as st

st.set_page_config(page_title="Stepwise", layout="wide")

# Start comes first in the menu, but the Stepper stays the default page: "/" and a reload of
# "/?task=..." open the Stepper, where work happens, and links to it keep working. Each page
# keeps the URL its file name gives (Start is /home): the browser checks a URL opened
# directly against the files in pages/ before this script runs.
navigation = st.navigation(
    [
        st.Page("pages/home.py", title="Start", icon=":material/home:"),
        st.Page("pages/stepper.py", title="Stepper", default=True),
        st.Page("pages/tasks.py", title="Tasks"),
        st.Page("pages/playground.py", title="Playground"),
        st.Page("pages/services.py", title="Services"),
        st.Page("pages/settings.py", title="Settings"),
    ]
)
navigation.run()

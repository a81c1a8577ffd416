"""Stepwise: the Streamlit app. Run it with `make run` (or `streamlit run app.py`)."""

import streamlit as st

st.set_page_config(page_title="Stepwise", layout="wide")

navigation = st.navigation(
    [
        st.Page("pages/stepper.py", title="Stepper", default=True),
        st.Page("pages/tasks.py", title="Tasks"),
        st.Page("pages/settings.py", title="Settings"),
    ]
)
navigation.run()

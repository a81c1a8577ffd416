"""The installed app: the script `stepwise ui` gives `streamlit run` (the checkout's app.py).

`streamlit run` imports it as a module and serves `app`, the app behind its guard; Streamlit
then runs it as `__main__` for each page view, where it draws the pages.
"""

import streamlit as st

if __name__ == "__main__":
    from stepwise.app.main import main

    main()
else:
    from stepwise.app.guard import app_middleware

    app = st.App(__file__, middleware=app_middleware())

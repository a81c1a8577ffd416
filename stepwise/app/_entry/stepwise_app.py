"""The installed app: the script `stepwise ui` gives `streamlit run` (the checkout's app.py)."""

from stepwise.app.main import main

main()

"""Reusable Streamlit UI pieces (added with the app)."""

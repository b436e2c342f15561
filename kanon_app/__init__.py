"""Streamlit glue for the kanon dashboard: session state and small widgets. No statistics here."""

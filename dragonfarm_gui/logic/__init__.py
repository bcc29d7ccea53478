"""Plain-Python logic for the app: no Qt here, so it is easy to test."""

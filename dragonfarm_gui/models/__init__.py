"""Qt item models."""

"""Qt widgets of the app; thin over the logic in dragonfarm_gui.logic."""

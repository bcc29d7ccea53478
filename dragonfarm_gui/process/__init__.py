"""Qt process handling: the trainer as a detached process, and file following."""

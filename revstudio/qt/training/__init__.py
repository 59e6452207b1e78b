"""Training from the editor: run settings, the run controller (a child process) and the Run menu."""

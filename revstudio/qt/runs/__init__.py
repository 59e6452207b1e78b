"""A project's training runs: reading run directories (Qt-free) and the Runs tab."""

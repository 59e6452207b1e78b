"""The frozen app's entry point (packaging/revstudio.spec): the same main as the `revstudio` command.

It also runs the app's own child processes: `revstudio --run-module MODULE ARGS` is `python -P -m MODULE
ARGS` there (revstudio/frozen.py), since the app has no Python to start them with."""
import sys

from revstudio.cli import main

if __name__ == "__main__":
    sys.exit(main())

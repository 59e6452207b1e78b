"""The frozen app's entry point (packaging/revstudio.spec): the same main as the `revstudio` command."""
import sys

from revstudio.cli import main

if __name__ == "__main__":
    sys.exit(main())

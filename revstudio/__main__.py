"""``python -m revstudio``: the ``revstudio`` command (``revstudio.cli.main``).

A ``train`` run takes SIGINT/SIGTERM from its first moment, before the CLI's imports
(:mod:`revstudio.early_stop`); ``main`` ends a ``train`` process without the interpreter's
slow teardown of torch, so a stopped run exits within 2 s of the signal.
"""
import sys

from revstudio.early_stop import install_for

install_for(sys.argv[1:])

from revstudio.cli import main  # noqa: E402 - after the handlers: this import takes a while

sys.exit(main())

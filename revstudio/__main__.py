import os
import sys

from revstudio.cli import main

code = main()
if sys.argv[1:2] == ["train"]:
    # A training run has closed and fsynced everything it wrote by now; the interpreter's
    # teardown of torch's native libraries takes seconds on a loaded machine, and a stopped
    # run must exit within 2 s of SIGTERM (the app waits for it), so skip the teardown.
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(code)
sys.exit(code)

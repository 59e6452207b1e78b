import sys

from revstudio.cli import main

sys.exit(main())

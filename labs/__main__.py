"""``python -m labs``: the command line, which lives in `labs.cli`."""

import sys

from labs.cli import main

if __name__ == "__main__":
    sys.exit(main())

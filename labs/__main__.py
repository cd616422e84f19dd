"""``python -m labs``: the command line, which lives in `labs.retrieval.cli`."""

import os
import signal
import sys


def _stopped_while_starting(signum, frame):
    """A stop signal before the command line is even imported: nothing exists yet to clean up."""
    print(f"interrupted by {signal.Signals(signum).name}; nothing was changed", file=sys.stderr, flush=True)
    os._exit(128 + signum)


if __name__ == "__main__":
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):  # the command line installs its own handlers as it starts
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), _stopped_while_starting)
    from labs.retrieval.cli import main

    sys.exit(main())

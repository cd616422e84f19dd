"""``python -m labs``: the command line, which lives in `labs.retrieval.cli`."""

import sys

if __name__ == "__main__":
    try:
        from labs.retrieval.cli import main
    except KeyboardInterrupt:  # Ctrl-C while Python is still importing: one line, as everywhere else
        print("interrupted by SIGINT; nothing was changed", file=sys.stderr)
        sys.exit(130)
    sys.exit(main())

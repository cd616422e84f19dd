"""``python -m labs``: the command line, which lives in `labs.retrieval.cli`."""

import _signal  # the C module, loaded with Python itself: the handlers go in before any import below
import os
import sys

_NAMES = {getattr(_signal, name): name for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(_signal, name)}


def _stopped_while_starting(signum, frame):
    """A stop signal before the command line is even imported: nothing exists yet to clean up. One of
    several launched processes says nothing unless it is the machine's first of a plain torchrun (the
    rule of `labs.retrieval.cli._speaks`: ``train --processes`` says the line itself)."""
    launched = os.environ.get("TORCHELASTIC_RUN_ID")
    if not launched or (not os.environ.get("LABS_LAUNCHED") and os.environ.get("LOCAL_RANK", "0") in ("", "0")):
        os.write(2, f"interrupted by {_NAMES[signum]}; nothing was changed\n".encode())
    os._exit(128 + signum)


def _fill_closed_streams() -> None:
    """A standard stream the caller closed (``>&-``, ``2>&-``) becomes /dev/null: what would have been
    printed goes nowhere, the command runs as usual, and no file this command opens can take the
    stream's number (a library writing to it would write into that file)."""
    for fd, name, mode in ((0, "stdin", os.O_RDONLY), (1, "stdout", os.O_WRONLY), (2, "stderr", os.O_WRONLY)):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, mode)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            setattr(sys, name, open(fd, "r" if fd == 0 else "w", encoding="utf-8", closefd=False))


if __name__ == "__main__":
    for _signum in _NAMES:  # the command line installs its own handlers as it starts
        _signal.signal(_signum, _stopped_while_starting)
    _fill_closed_streams()
    import signal

    from labs.retrieval.cli import main
    from labs.retrieval.files import stop_signals

    code = main()
    # Finished (the result printed, the output recorded): a stop signal from here on changes nothing.
    # Ignored, not handled: Python puts the default action (end the process) back in place of its
    # own handlers while it shuts down, but leaves an ignored signal ignored.
    for _signum in stop_signals():
        signal.signal(_signum, signal.SIG_IGN)
    sys.exit(code)

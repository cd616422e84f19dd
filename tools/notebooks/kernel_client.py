"""A kernel client that never sleeps through a message: `poll_in_slices(kc)`.

pyzmq's asyncio poll can miss the wake-up of a message that arrives on a socket (the socket's
file descriptor is edge-triggered, and a send on the same socket can consume the edge). The
``get_msg(timeout=T)`` of jupyter_client's asynchronous client then sleeps the whole ``T``; when the
timer fires, pyzmq looks at the socket once more, finds the message and hands it over as if nothing
had happened. So nothing fails, but nbclient's wait for a cell's reply, given the cell timeout,
sleeps that long: lesson 3 took 925 s on the Colab twin (timeout 900 s, 25 s of work), a slider
test 124 s in make test (timeout 120 s, 4 s of work), and a loop of that test under load slept
through its 30 s timeout once in 30 runs.

`poll_in_slices` makes every ``get_msg`` of a client's shell and IOPub channels wait in slices of
at most a second, looking at the socket afresh after each, until the caller's own timeout: a
missed wake-up costs at most a second. What a caller gets (a message, or ``queue.Empty`` at its
timeout) is unchanged.
"""

from __future__ import annotations

import time
from queue import Empty

SLICE_S = 1.0


def poll_in_slices(kc, every: float = SLICE_S) -> None:
    """Make ``kc``'s shell and IOPub ``get_msg`` (an asynchronous jupyter_client client's) wait at
    most ``every`` seconds at a time. Idempotent; a no-op on a client without those channels."""
    if every <= 0:
        raise ValueError(f"every must be positive, got {every}")
    for name in ("shell_channel", "iopub_channel"):
        channel = getattr(kc, name, None)
        get = getattr(channel, "get_msg", None)
        if get is None or getattr(get, "_sliced", False):
            continue

        async def sliced(timeout: float | None = None, _get=get):
            deadline = None if timeout is None else time.monotonic() + timeout
            while True:
                left = every if deadline is None else max(0.0, deadline - time.monotonic())
                try:
                    return await _get(timeout=min(every, left))
                except Empty:
                    if deadline is not None and time.monotonic() >= deadline:
                        raise

        sliced._sliced = True
        channel.get_msg = sliced


def slice_polls(client):
    """An nbclient ``NotebookClient`` whose kernel client polls in slices (`poll_in_slices`) from its
    first cell on, whether it runs the notebook (``execute``) or cell by cell; returns ``client``."""
    before = client.on_cell_start

    def on_cell_start(**kwargs):
        poll_in_slices(client.kc)
        return before(**kwargs) if before is not None else None

    client.on_cell_start = on_cell_start
    return client

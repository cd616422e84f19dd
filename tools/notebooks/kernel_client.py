"""A kernel client that never sleeps through a message: `poll_in_slices(kc)`.

pyzmq's asyncio poll can miss a message's wake-up (an edge-triggered descriptor whose edge a send
can consume): ``get_msg(timeout=T)`` then sleeps the whole ``T``, a cell's whole timeout in nbclient.
Waiting in slices of a second caps a missed wake-up at a second; what a caller gets is unchanged.
"""

from __future__ import annotations

import time
from queue import Empty


def poll_in_slices(kc, every: float = 1.0) -> None:
    """Make ``kc``'s shell and IOPub ``get_msg`` (an asynchronous jupyter_client client's) wait at
    most ``every`` seconds at a time, until the caller's own timeout. Idempotent."""
    for channel in (kc.shell_channel, kc.iopub_channel):
        get = channel.get_msg
        if getattr(get, "_sliced", False):
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
    """An nbclient ``NotebookClient`` whose kernel client polls in slices from its first cell on,
    whether it runs the notebook (``execute``) or cell by cell; returns ``client``."""
    before = client.on_cell_start

    def on_cell_start(**kwargs):
        poll_in_slices(client.kc)
        return before(**kwargs) if before is not None else None

    client.on_cell_start = on_cell_start
    return client

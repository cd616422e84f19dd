"""tools/notebooks/kernel_client.py: a missed wake-up costs one slice, not the caller's whole timeout."""

from __future__ import annotations

import asyncio
import time
from queue import Empty
from types import SimpleNamespace

import pytest

from tools.notebooks.kernel_client import poll_in_slices, slice_polls

REPLY = {"msg_id": "reply"}


class Sleepy:
    """A channel like jupyter_client's asynchronous one whose socket misses the wake-up, as pyzmq's
    asyncio poll can: a message that is there by ``ready_at`` is seen only when a call's timer runs
    out (then handed over, as pyzmq does), never while it waits."""

    def __init__(self, ready_at: float | None = None):
        self.ready_at = ready_at
        self.calls: list[float | None] = []

    async def get_msg(self, timeout=None):
        self.calls.append(timeout)
        await asyncio.sleep(5 if timeout is None else timeout)  # 5 s: a wait without end, for a test
        if self.ready_at is not None and time.monotonic() >= self.ready_at:
            return REPLY
        raise Empty


def client_with(shell: Sleepy, iopub: Sleepy) -> SimpleNamespace:
    return SimpleNamespace(shell_channel=shell, iopub_channel=iopub)


def took(coro) -> tuple[object, float]:
    start = time.monotonic()
    try:
        result = asyncio.run(coro)
    except Empty as err:
        result = err
    return result, time.monotonic() - start


@pytest.mark.parametrize("channel, ready_in, timeout, reply, least", [
    ("shell_channel", 0.1, 30, True, 0.0),  # a missed wake-up costs one slice (unsliced, all 30 s)
    ("iopub_channel", None, 0.3, False, 0.3),  # no message: still Empty at the caller's timeout
    ("iopub_channel", None, 0, False, 0.0),  # a look, no wait
    ("iopub_channel", 0.2, None, True, 0.0),  # no timeout: slices until the message
])
def test_sliced_each_wait_is_a_slice_and_the_caller_gets_what_it_would(channel, ready_in, timeout, reply, least):
    sleepy = Sleepy(None if ready_in is None else time.monotonic() + ready_in)
    kc = client_with(Sleepy(), Sleepy())
    setattr(kc, channel, sleepy)
    poll_in_slices(kc, every=0.05)
    result, waited = took(getattr(kc, channel).get_msg(timeout=timeout))
    assert result == REPLY if reply else isinstance(result, Empty)
    assert least <= waited < least + 0.7 and all(t is not None and t <= 0.05 for t in sleepy.calls)


def test_a_notebook_client_slices_once_from_its_first_cell_and_keeps_its_own_hook():
    seen = []
    client = SimpleNamespace(on_cell_start=lambda **kw: seen.append(kw["cell_index"]),
                             kc=client_with(Sleepy(), Sleepy()))
    slice_polls(client)
    client.on_cell_start(cell={}, cell_index=3)
    sliced = client.kc.shell_channel.get_msg
    client.on_cell_start(cell={}, cell_index=4)  # every later cell: that wrapper, not one more around it
    assert seen == [3, 4] and sliced._sliced and client.kc.shell_channel.get_msg is sliced

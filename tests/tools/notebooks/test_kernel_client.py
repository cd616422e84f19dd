"""tools/notebooks/kernel_client.py: a missed wake-up costs one slice, not the caller's whole timeout."""

from __future__ import annotations

import asyncio
import time
from queue import Empty
from types import SimpleNamespace

import pytest

from tools.notebooks.kernel_client import poll_in_slices, slice_polls


class Sleepy:
    """A channel like jupyter_client's asynchronous one whose socket misses the wake-up, as pyzmq's
    asyncio poll can: a message that is there by ``ready_at`` is seen only when a call's timer runs
    out (then handed over, as pyzmq does), never while it waits."""

    def __init__(self, ready_at: float | None):
        self.ready_at = ready_at
        self.calls: list[float | None] = []

    async def get_msg(self, timeout=None):
        self.calls.append(timeout)
        if timeout is None:
            await asyncio.sleep(3600)
        await asyncio.sleep(timeout)
        if self.ready_at is not None and time.monotonic() >= self.ready_at:
            return {"msg_id": "reply"}
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


def test_a_missed_wake_up_costs_one_slice_not_the_whole_timeout():
    shell = Sleepy(ready_at=time.monotonic() + 0.1)
    kc = client_with(shell, Sleepy(None))
    unsliced, waited = took(kc.shell_channel.get_msg(timeout=1.5))
    assert unsliced == {"msg_id": "reply"} and waited >= 1.5  # the whole timeout, then the message

    shell = Sleepy(ready_at=time.monotonic() + 0.1)
    kc = client_with(shell, Sleepy(None))
    poll_in_slices(kc, every=0.05)
    sliced, waited = took(kc.shell_channel.get_msg(timeout=30))
    assert sliced == {"msg_id": "reply"} and waited < 1.0
    assert all(t <= 0.05 for t in shell.calls)


def test_no_message_is_still_empty_at_the_callers_timeout():
    kc = client_with(Sleepy(None), Sleepy(None))
    poll_in_slices(kc, every=0.05)
    result, waited = took(kc.iopub_channel.get_msg(timeout=0.3))
    assert isinstance(result, Empty) and 0.3 <= waited < 1.0
    result, waited = took(kc.iopub_channel.get_msg(timeout=0))  # a look, no wait
    assert isinstance(result, Empty) and waited < 0.2


def test_no_timeout_waits_in_slices_until_the_message():
    iopub = Sleepy(ready_at=time.monotonic() + 0.2)
    kc = client_with(Sleepy(None), iopub)
    poll_in_slices(kc, every=0.05)
    result, waited = took(kc.iopub_channel.get_msg())
    assert result == {"msg_id": "reply"} and waited < 1.0 and None not in iopub.calls


def test_slicing_twice_wraps_once_and_a_bad_slice_is_refused():
    shell = Sleepy(None)
    kc = client_with(shell, Sleepy(None))
    poll_in_slices(kc, every=0.05)
    first = kc.shell_channel.get_msg
    poll_in_slices(kc, every=0.05)
    assert kc.shell_channel.get_msg is first
    with pytest.raises(ValueError, match="every must be positive"):
        poll_in_slices(kc, every=0)


def test_a_notebook_client_slices_from_its_first_cell_and_keeps_its_own_hook():
    seen = []
    client = SimpleNamespace(on_cell_start=lambda **kw: seen.append(kw["cell_index"]),
                             kc=client_with(Sleepy(None), Sleepy(None)))
    slice_polls(client)
    client.on_cell_start(cell={}, cell_index=3)
    assert seen == [3] and getattr(client.kc.shell_channel.get_msg, "_sliced", False)

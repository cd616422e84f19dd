"""A pytest plugin (``-p tools.nbval_timing``): time each notebook under nbval.

Writes ``.cache/timings/<key>.json`` ({"<key>": {notebook name: seconds}}) for the
performance summary that `make test` prints; the key is ``notebooks``, or the value of
``NBVAL_TIMING_KEY`` (``notebooks_alt`` for the second pass). It measures; it never fails a test.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import defaultdict
from pathlib import Path

import pytest

_times: dict[str, float] = defaultdict(float)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start = time.perf_counter()
    yield
    path = Path(str(item.fspath))
    if path.suffix == ".ipynb":
        _times[path.name] += time.perf_counter() - start


def pytest_sessionfinish(session, exitstatus):
    if _times:
        key = os.environ.get("NBVAL_TIMING_KEY", "notebooks")
        if not re.fullmatch(r"[a-z_]+", key):
            raise ValueError(f"NBVAL_TIMING_KEY must be lower-case letters and '_', got {key!r}")
        out = Path(".cache/timings")
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{key}.json").write_text(json.dumps({key: dict(_times)}, indent=1))

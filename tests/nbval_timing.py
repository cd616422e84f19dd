"""A pytest plugin (``-p tests.nbval_timing``): time each notebook under nbval.

Writes ``.cache/timings/notebooks.json`` ({notebook name: seconds}) for the
performance summary that `make test` prints. It measures; it never fails a test.
"""

from __future__ import annotations

import json
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
        out = Path(".cache/timings")
        out.mkdir(parents=True, exist_ok=True)
        (out / "notebooks.json").write_text(json.dumps({"notebooks": dict(_times)}, indent=1))

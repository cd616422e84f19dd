"""A pytest plugin for the spread measurement: what each notebook cell printed under nbval.

Loaded only by tools/outputs/spread.py, in the nbval run it starts under one CPU setting:
``-p tools.outputs.spread_record --spread-record FILE``. FILE gets, for every code cell, the
stored and the new outputs exactly as nbval compared them (sanitized, by output key; recorded
by nbval_tolerance's comparison), or the error that stopped the cell. It records; it never
changes a result.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

_cells: list[dict] = []


def pytest_addoption(parser):
    parser.addoption("--spread-record", metavar="FILE", default=None,
                     help="write what each notebook cell printed, as nbval compared it, to FILE (JSON)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if call.when != "call" or not item.config.getoption("spread_record") or not hasattr(item, "cell_num"):
        return
    report = outcome.get_result()
    entry = {"id": item.cell.get("id"), "index": item.cell_num, "path": str(item.fspath),
             "checked": bool(item.options["check"]), "skipped": bool(report.skipped)}
    view = getattr(item, "nbval_text_view", None)
    if view is not None:
        entry.update(view)
    elif call.excinfo is not None and not report.skipped:
        raised = [o for o in (getattr(item, "test_outputs", None) or []) if o.get("output_type") == "error"]
        if raised:
            entry["error"] = f"{raised[-1].get('ename')}: {raised[-1].get('evalue')}"[:500]
        else:
            entry["error"] = f"{call.excinfo.typename}: {str(call.excinfo.value).strip()}"[:500]
    _cells.append(entry)


def pytest_sessionfinish(session, exitstatus):
    path = session.config.getoption("spread_record")
    if path:
        Path(path).write_text(json.dumps({"cells": _cells}, indent=1), encoding="utf-8")

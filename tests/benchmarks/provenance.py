"""The check both experiments' committed results share: made by the code and the pinned versions here."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def assert_made_here(results: Mapping, name: str, regenerate: str) -> None:
    """Each file the results record (``code.sha256``) is byte for byte the same now, and every package
    version they record is the one constraints.txt pins; a failure names the file or package and
    ``regenerate``."""
    for path, recorded in results["code"]["sha256"].items():
        now = hashlib.sha256((ROOT / path).read_bytes()).hexdigest()
        assert now == recorded, f"{path} changed since {name} was made: {regenerate}"
    pins = dict(line.split("==", 1) for line in (ROOT / "constraints.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    pins = {k.lower().replace("_", "-"): v.strip() for k, v in pins.items()}
    for package, version in results["versions"].items():
        if package != "python":
            assert pins.get(package) == version.split("+")[0], (
                f"{name} was made with {package} {version}, constraints.txt pins {pins.get(package)}: {regenerate}")

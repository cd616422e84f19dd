"""Exact pins as pip compares them: canonical package names, and a pin file (constraints.txt for
test_environment.py, colab_runtime.txt for the Colab twin) as {name: version}."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def canonical(name: str) -> str:
    """A package name as pip compares it (PEP 503), without extras: `Sentence_Transformers[x]` ->
    `sentence-transformers`."""
    return re.sub(r"[-_.]+", "-", name).lower().split("[")[0]


def constraints(path: Path = ROOT / "constraints.txt") -> dict[str, str]:
    """{canonical name: version} of a pin file; every line must be an exact `name==version` pin."""
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"{path.name}: {line!r} is not an exact pin"
            pins[canonical(name)] = version
    return pins

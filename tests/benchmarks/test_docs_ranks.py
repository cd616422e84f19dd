"""benchmarks/docs_ranks.py: the per-query ranks of the experiment's untouched systems.

The quick mode (``--quick``) builds a small slice of the data (12 pairs per library) and ranks its
test split (about a minute on two cores). The committed file must come from the current code,
the pinned versions and the experiment's data, and give back the experiment's stored numbers
(tests/classroom/test_results.py holds those together).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import pytest

from labs.classroom.results import SYSTEMS, load_ranks, load_results

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "docs_ranks.py"
RANKS = ROOT / "benchmarks" / "results" / "docs_ranks.json"
REGENERATE = "regenerate it with: nice -n 5 python benchmarks/docs_ranks.py"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("docs_ranks", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_answer_ranks_and_their_metrics(script):
    rankings = {"q1": ["a", "b", "c"], "q2": ["c", "b", "a"], "q3": ["b", "a", "c"]}
    qrels = {"q1": {"a"}, "q2": {"a"}, "q3": {"a"}}
    ranks = script.answer_ranks(rankings, qrels, ["q1", "q2", "q3"])
    assert ranks == [1, 3, 2]
    assert script.from_ranks(ranks) == {"mrr@10": round((1 + 1 / 3 + 1 / 2) / 3, 4), "recall@1": round(1 / 3, 4)}
    assert script.from_ranks([11, 1]) == {"mrr@10": 0.5, "recall@1": 0.5}  # past rank 10 counts 0


@pytest.mark.e2e
def test_quick_mode_writes_a_file_the_lesson_reads(script, tmp_path, capsys):
    out = tmp_path / "ranks.json"
    written = script.main(["--quick", "--out", str(out)])
    ranks = load_ranks(out)
    assert written["quick"] and ranks["quick"] and set(ranks["ranks"]) == set(SYSTEMS)
    n = len(ranks["test_query_ids"])
    assert n > 0 and all(1 <= r <= ranks["test_documents"] for row in ranks["ranks"].values() for r in row)
    assert all(len(row) == n for row in ranks["ranks"].values())
    assert ranks["code"]["sha256"]["benchmarks/docs_ranks.py"] == hashlib.sha256(SCRIPT.read_bytes()).hexdigest()
    assert "MRR@10" in capsys.readouterr().out


def test_data_that_is_not_the_experiment_s_is_refused(script, tmp_path):
    with pytest.raises(SystemExit, match="no metadata.json"):
        script.main(["--data", str(tmp_path), "--out", str(tmp_path / "r.json")])
    assert not (tmp_path / "r.json").exists()


def test_committed_ranks_match_code_pins_and_the_experiment():
    ranks = load_ranks(RANKS)
    assert not ranks["quick"]
    for name, recorded in ranks["code"]["sha256"].items():
        now = hashlib.sha256((ROOT / name).read_bytes()).hexdigest()
        assert now == recorded, f"{name} changed since {RANKS.name} was made: {REGENERATE}"
    pins = dict(line.split("==", 1) for line in (ROOT / "constraints.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    pins = {k.lower().replace("_", "-"): v.strip() for k, v in pins.items()}
    for package, version in ranks["versions"].items():
        if package != "python":
            assert pins.get(package) == version.split("+")[0], f"{package} {version}: {REGENERATE}"
    results = load_results()
    assert ranks["data_sha256"] == results["data"]["sha256"]
    for system in SYSTEMS:
        check = ranks["check"][system]
        assert {m: check[m] for m in ("mrr@10", "recall@1")} == check["stored"], system
    assert json.loads(RANKS.read_text())["command"].startswith("nice -n 5 python benchmarks/docs_ranks.py")

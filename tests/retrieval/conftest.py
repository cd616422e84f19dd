"""Fixtures of the retrieval tests: a sealed run folder built without training, and a fresh copy of
it for each test that breaks something.

The run is built by the same library calls as `labs.retrieval.training.train` (save the model,
`write_index`, validation rankings, metrics.json, `seal_run`) on a tiny random Qwen3.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

INSTRUCTION = "Find the help article"


@pytest.fixture(scope="session")
def sealed(tmp_path_factory, tiny_qwen, data_dir) -> Path:
    from labs.retrieval.contract import seal_run
    from labs.retrieval.data import load_dataset
    from labs.retrieval.files import write_json
    from labs.retrieval.index import write_index
    from labs.retrieval.instruction import format_query
    from labs.retrieval.qwen3 import build_qwen3

    model = build_qwen3(tiny_qwen, max_length=64)
    run = tmp_path_factory.mktemp("runs") / "sealed"
    run.mkdir()
    model.prompts = {"query": format_query("", INSTRUCTION), "document": ""}
    model.save(str(run / "best"), create_model_card=False)
    data = load_dataset(data_dir)
    index = write_index(run, model, instruction=INSTRUCTION, max_length=64, source="tiny", revision=None,
                        corpus=data.corpus, corpus_sha256=data.sha256["corpus.jsonl"])
    run_files = {"validation_rankings.json": write_json(run / "validation_rankings.json", {}),
                 "metrics.json": write_json(run / "metrics.json", {"data_sha256": data.sha256})}
    seal_run(run, index.contract, data.sha256, run_files)
    return run


@pytest.fixture()
def run(sealed, tmp_path) -> Path:
    """A fresh copy of the sealed run for one test to break."""
    return Path(shutil.copytree(sealed, tmp_path / "run"))

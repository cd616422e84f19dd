"""Fixtures of the filter, ranker, window and queries-file tests: the help-desk fixture with a
``fields`` object on every document and one private staff document, and sealed runs of the tiny
random Qwen3 over it (no instruction, so a query with a document's exact text gets that
document's exact vector), one of them also indexed as windows. Built without training, by the
library calls `labs.retrieval.training.train` makes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

#: The private document's text; a query with exactly this text has it as its exact nearest neighbour.
PRIVATE_TEXT = "Orbit staff only: refund a customer without a manager's approval by editing the ledger."
PRIVATE_ID = "staff-refund"


def fielded_dataset():
    from labs.retrieval.helpdesk import make_helpdesk

    data = make_helpdesk()
    for i, doc in enumerate(data.corpus):
        doc["fields"] = {"product": doc["group"], "access": "public", "year": 2023 + i % 3,
                         "tags": [doc["doc_id"].split("-", 1)[1], "help"]}
    data.corpus.append({"doc_id": PRIVATE_ID, "text": PRIVATE_TEXT, "group": "Staff", "split": "train",
                        "fields": {"product": "Orbit", "access": "staff", "year": 2025, "tags": ["refund"]}})
    return data


@pytest.fixture(scope="session")
def fielded_data(tmp_path_factory) -> Path:
    from labs.retrieval.data import write_dataset

    return write_dataset(fielded_dataset(), tmp_path_factory.mktemp("data") / "fielded")


def seal(run: Path, tiny_qwen: Path, data_dir: Path, **index) -> Path:
    """A sealed run of the tiny Qwen3 (no instruction) over ``data_dir``; ``index`` goes to write_index."""
    from labs.retrieval.contract import seal_run
    from labs.retrieval.data import load_dataset
    from labs.retrieval.files import write_json
    from labs.retrieval.index import write_index
    from labs.retrieval.qwen3 import build_qwen3

    model = build_qwen3(tiny_qwen, max_length=64)
    run.mkdir()
    model.prompts = {"query": "", "document": ""}
    model.save(str(run / "best"), create_model_card=False)
    data = load_dataset(data_dir)
    written = write_index(run, model, instruction="", max_length=64, source="tiny", revision=None,
                          corpus=data.corpus, corpus_sha256=data.sha256["corpus.jsonl"], **index)
    run_files = {"validation_rankings.json": write_json(run / "validation_rankings.json", {}),
                 "metrics.json": write_json(run / "metrics.json", {"data_sha256": data.sha256})}
    seal_run(run, written.contract, data.sha256, run_files)
    return run


@pytest.fixture(scope="session")
def fielded_run(tmp_path_factory, tiny_qwen, fielded_data) -> Path:
    return seal(tmp_path_factory.mktemp("runs") / "fielded", tiny_qwen, fielded_data)


@pytest.fixture(scope="session")
def windowed_run(tmp_path_factory, tiny_qwen, fielded_data) -> Path:
    return seal(tmp_path_factory.mktemp("runs") / "windowed", tiny_qwen, fielded_data, chunk=8, stride=4)


@pytest.fixture()
def fresh_run(fielded_run, tmp_path) -> Path:
    """A copy of the fielded run for one test to evaluate or break."""
    return Path(shutil.copytree(fielded_run, tmp_path / "run"))

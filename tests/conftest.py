"""Session fixtures shared by the test files: the models and data are built once per test run.

- ``minilm``: the packaged all-MiniLM-L6-v2, loaded once (read-only: do not train it in place).
- ``tiny_qwen``: a random 2-layer Qwen3 with the real Qwen tokenizer (`labs.retrieval.qwen3.write_tiny_qwen3`).
- ``tiny_bert``: a random 2-layer BERT with MiniLM's tokenizer (`labs.retrieval.scaling.write_tiny_bert`).
- ``data_dir``: the help-desk fixture written as the three JSONL files.
- ``run_dir``: one training run of the tiny Qwen3 through the command line (2 epochs, hard
  negatives), searched and evaluated on test once; ``texts_seen`` holds every text it tokenised.

Nothing is downloaded; everything lives in pytest's temporary folders.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from labs.retrieval.models import offline

offline()


@pytest.fixture(scope="session")
def minilm():
    from labs.retrieval.models import load_minilm

    return load_minilm()


@pytest.fixture(scope="session")
def tiny_qwen(tmp_path_factory) -> Path:
    from labs.retrieval.qwen3 import write_tiny_qwen3

    return write_tiny_qwen3(tmp_path_factory.mktemp("qwen") / "tiny", seed=0)


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    from labs.retrieval.scaling import write_tiny_bert

    return write_tiny_bert(tmp_path_factory.mktemp("bert") / "tiny", seed=0)


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory) -> Path:
    from labs.retrieval.data import write_dataset
    from labs.retrieval.helpdesk import make_helpdesk

    return write_dataset(make_helpdesk(), tmp_path_factory.mktemp("data") / "helpdesk")


@pytest.fixture(scope="session")
def texts_seen() -> list[str]:
    return []


@pytest.fixture(scope="session")
def run_dir(tiny_qwen, data_dir, tmp_path_factory, texts_seen) -> Path:
    """One training run through the CLI, recording every text the model tokenises; then one
    search and the one test evaluation."""
    from sentence_transformers import SentenceTransformer

    from labs.retrieval.cli import main

    original = SentenceTransformer.preprocess

    def recording(self, inputs, *args, **kwargs):
        texts_seen.extend(inputs)
        return original(self, inputs, *args, **kwargs)

    out = tmp_path_factory.mktemp("runs") / "tiny"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(SentenceTransformer, "preprocess", recording)
        code = main(["train", "--data", str(data_dir), "--out", str(out), "--model", str(tiny_qwen), "--epochs", "2",
                     "--batch-size", "8", "--lr", "1e-3", "--hard-negatives", "--seed", "1"])
        assert code == 0
        assert main(["search", str(out), "In Iris, I need to stop future renewals.", "--k", "3"]) == 0
        assert main(["evaluate", str(out), "--data", str(data_dir), "--split", "test"]) == 0
    return out

"""Long documents: the length limit's cut is reported (make-data, train, evaluate), ``train --chunk
--stride`` indexes overlapping windows that cover every token, and a document scores by its best
window or their mean (each equal to its readable loop); bad settings are one line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from labs.retrieval.chunking import document_scores, document_scores_loop, truncation, window_starts, windows
from tests.retrieval.conftest import cli, one_line, train_args
from tests.retrieval.fielded import fielded_data, windowed_run  # noqa: F401


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    from labs.retrieval.models import minilm_path

    return AutoTokenizer.from_pretrained(minilm_path())


@pytest.mark.parametrize("n, chunk, stride", [(1, 4, 2), (4, 4, 2), (5, 4, 2), (10, 4, 3), (10, 4, 4), (11, 5, 1)])
def test_windows_cover_every_token_and_the_last_ends_at_the_end(n, chunk, stride):
    starts = window_starts(n, chunk, stride)
    covered = {t for s in starts for t in range(s, min(s + chunk, n))}
    assert covered == set(range(n)) and starts[0] == 0 and min(starts[-1] + chunk, n) == n
    assert all(b - a <= stride for a, b in zip(starts, starts[1:]))


def test_windows_are_spans_of_the_text_within_the_chunk(tokenizer):
    text = "The quick brown fox jumps over the lazy dog, then naps under the old oak tree until dusk."
    parts = windows(tokenizer, text, 6, 3)
    assert len(parts) > 1 and all(p in text for p in parts) and parts[0].startswith("The") and text.endswith(parts[-1])
    assert all(len(tokenizer(p, add_special_tokens=False)["input_ids"]) <= 6 for p in parts)
    assert windows(tokenizer, "short text", 6, 3) == ["short text"]


def test_truncation_counts_texts_over_the_limit_and_the_share_cut(tokenizer):
    short, long = "a b", " ".join(["word"] * 18)  # 2 + 2 and 18 + 2 tokens
    report = truncation(tokenizer, [short, long], 10)
    assert (report["over"], report["tokens_over"], report["cut"]) == (1, 20, 10)
    assert report["cut_share"] == 0.5 and report["cut_share_all"] == pytest.approx(10 / 24)
    assert truncation(tokenizer, [short], 10)["cut_share"] == 0.0


def test_document_scores_equal_their_loop():
    rng = np.random.default_rng(1)
    window_doc = np.array([0, 0, 1, 2, 2, 2, 3])
    scores = rng.normal(size=(3, 7))
    for how in ("max", "mean"):
        assert np.allclose(document_scores(scores, window_doc, 4, how), document_scores_loop(scores, window_doc, 4, how))


@pytest.mark.parametrize("extra, message", [
    (["--chunk", "32"], "--chunk and --stride go together"),
    (["--stride", "16"], "--chunk and --stride go together"),
    (["--chunk", "32", "--stride", "33"], "--stride must be an integer from 1 to 32"),
    (["--chunk", "127", "--stride", "16"], "--chunk must be an integer from 8 to 126"),
    (["--chunk", "4", "--stride", "2"], "--chunk must be an integer from 8 to 126"),
])
def test_bad_window_settings_are_one_line_before_anything_loads(capsys, tmp_path, data_dir, extra, message):
    code, _, err = cli(capsys, *train_args(data_dir, tmp_path / "run", "minilm", *extra))
    assert code == 2 and message in one_line(err) and not (tmp_path / "run").exists()


def test_a_windowed_run_scores_whole_max_and_mean_side_by_side(capsys, windowed_run, fielded_data, tmp_path):
    import shutil

    run = shutil.copytree(windowed_run, tmp_path / "run")
    contract = json.loads((run / "index_contract.json").read_text())
    assert {"chunk_embeddings.npy", "chunk_docs.json"} <= set(contract["files"])
    chunks = json.loads((run / "chunk_docs.json").read_text())
    assert (chunks["tokens"], chunks["stride"]) == (8, 4) and len(chunks["docs"]) > 61
    for how in ("max", "mean", "whole"):
        code, out, err = cli(capsys, "search", str(run), "cancel my plan", "--windows", how, "--k", "2")
        assert code == 0 and len(out.splitlines()) == 2, err
    code, out, err = cli(capsys, "evaluate", str(run), "--data", str(fielded_data))
    assert code == 0, err
    names = [line.split()[0] for line in out.splitlines()[1:7]]
    assert names == ["bm25", "dense", "hybrid", "dense/max", "dense/mean", "hybrid/max"]
    assert "dense/max - dense" in out and "saved: the rankings of dense/max" in out
    saved = json.loads((run / "val_metrics.json").read_text())
    assert saved["windows"] == {"tokens": 8, "stride": 4} and saved["ranking"] == "dense/max"


def test_edited_windows_are_refused(capsys, windowed_run, tmp_path):
    import shutil

    run = shutil.copytree(windowed_run, tmp_path / "run")
    chunks = json.loads((run / "chunk_docs.json").read_text())
    chunks["docs"][0] = 5
    (run / "chunk_docs.json").write_text(json.dumps(chunks))
    code, _, err = cli(capsys, "search", str(run), "cancel")
    assert code == 2 and "chunk_docs.json does not match its SHA-256" in one_line(err)


def test_make_data_reports_what_trains_defaults_would_cut(capsys, tmp_path):
    code, out, err = cli(capsys, "make-data", "--out", str(tmp_path / "data"))
    assert code == 0, err
    assert "length limit of train's defaults (minilm, --max-length 128):" in out
    assert "  documents: 0 of 60 over 128 tokens; 0.0% of their tokens cut (0.0% of all)" in out


def test_train_records_and_prints_the_documents_cut(run_dir):
    report = json.loads((run_dir / "metrics.json").read_text())["truncation"]
    assert report["texts"] == 60 and report["max_length"] == 128 and 0 <= report["cut_share"] <= 1

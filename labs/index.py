"""Encoding, indexing and search: a run folder that refuses to be searched with the wrong model or files.

In plain words: document vectors are only comparable with query vectors made by
the *same* model, with the same tokenizer, pooling, length limit and query
instruction. A run folder therefore stores, next to the selected model and the
corpus vectors, a contract (``index_contract.json``, rules in `labs.contract`)
with those settings and the SHA-256 of every file. `search` and `evaluate`
verify it before they encode anything, and refuse (ValueError naming the file
and the field) a run that is unfinished, edited or mixed. The instruction is
added here, in `format_query`, exactly once; documents are never prefixed.

Run folder
----------
========================  =====================================================
file                      content
========================  =====================================================
best/                     the selected model (sentence-transformers folder)
index_contract.json       instruction, pooling, dimensions, max length, hashes
corpus_embeddings.npy     (N, d) float32, unit rows, made by best/
corpus_ids.json           the N doc ids, row order of the embeddings
validation_rankings.json  query id -> top 10 doc ids on validation
metrics.json              configuration, validation history, data hashes, memory
{split}_metrics.json      written only by `evaluate` (never overwritten), with
{split}_rankings.json     the top 10 doc ids of each query of that split
========================  =====================================================

Writing order (the trainer's): ``best/``, `write_index` (contract with
``complete: false``), validation_rankings.json, metrics.json, then `seal_run`.

Relations: scores are dot products of unit vectors (= cosine), ranked with
`labs.metrics.rank_documents`; a model folder loads with
``SentenceTransformer(run / "best")``. Lesson: ``notebooks/05_finetuning.ipynb``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from labs.contract import (CONTRACT, FORMAT, INDEX_FILES, QUERY_TEMPLATE, write_json, contract_digest, seal_run,
                           verify_contract)
from labs.helpdesk import HelpdeskData, file_sha256, has_instruction, load_dataset
from labs.metrics import rank_documents, retrieval_metrics

__all__ = [
    "QUERY_TEMPLATE",
    "format_query",
    "show_progress",
    "encode_texts",
    "encode_queries",
    "model_pooling",
    "rank_split",
    "write_index",
    "seal_run",
    "contract_digest",
    "verify_contract",
    "load_index",
    "search",
    "evaluate",
]

KS = (1, 5, 10)


def format_query(query: str, instruction: str | None) -> str:
    """``Instruct: {instruction}\\nQuery:{query}``, or the query unchanged when there is no instruction.

    Refuses a query that already carries an instruction, so it is never added twice.
    """
    if not isinstance(query, str):
        raise ValueError(f"query must be a string, got {type(query).__name__}")
    if has_instruction(query):
        raise ValueError("query already starts with 'Instruct:': the instruction is added exactly once, here")
    return QUERY_TEMPLATE.format(task=instruction, query=query) if instruction else query


def show_progress() -> bool:
    """Progress bars on, unless TQDM_DISABLE is set (CI and nbval set it)."""
    return os.environ.get("TQDM_DISABLE", "").lower() not in ("1", "true", "yes")


def encode_texts(model, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
    """Unit-length embeddings (len(texts), d) as float32, documents as they are."""
    emb = model.encode(list(texts), batch_size=batch_size, convert_to_numpy=True, normalize_embeddings=True,
                       show_progress_bar=show_progress())
    return np.asarray(emb, dtype=np.float32)


def encode_queries(model, queries: Sequence[str], instruction: str | None, batch_size: int = 32) -> np.ndarray:
    """Unit-length query embeddings (Q, d), each query formatted once with the instruction."""
    return encode_texts(model, [format_query(q, instruction) for q in queries], batch_size)


def model_pooling(model) -> tuple[str, bool]:
    """(pooling mode, whether a Normalize module follows) of a SentenceTransformer."""
    mode, normalize = "unknown", False
    for module in model:
        name = type(module).__name__
        if name == "Pooling":
            mode = module.get_config_dict().get("pooling_mode", "unknown")
            mode = "+".join(mode) if isinstance(mode, (list, tuple)) else str(mode)
        normalize |= name == "Normalize"
    return mode, normalize


def rank_split(model, instruction: str | None, corpus_emb: np.ndarray, corpus_ids: Sequence[str],
               data: HelpdeskData, split: str, batch_size: int = 32, k: int = 10) -> tuple[dict, dict]:
    """Encode one split's queries, rank the whole corpus; return (metrics, top-k rankings)."""
    queries = data.split_queries(split)
    q = encode_queries(model, [x["text"] for x in queries], instruction, batch_size)
    rankings = rank_documents(q @ corpus_emb.T, list(corpus_ids), [x["query_id"] for x in queries], k=k)
    return retrieval_metrics(rankings, data.qrels(split), KS), rankings


def _model_files(run: Path) -> list[str]:
    """Every file under run/best, as run-relative paths, sorted."""
    return sorted(p.relative_to(run).as_posix() for p in (run / "best").rglob("*") if p.is_file())


def _hashed_files(run: Path) -> dict[str, str]:
    names = _model_files(run) + list(INDEX_FILES)
    return {name: file_sha256(run / name) for name in names}


def write_index(run: str | Path, model, *, instruction: str | None, max_length: int, source: str,
                revision: str | None, corpus: Sequence[dict], corpus_sha256: str, batch_size: int = 32) -> dict:
    """Encode the corpus with the model saved in ``run/best``, write the vectors, ids and an unsealed contract.

    The contract says ``"complete": false`` until `seal_run` is called, last, by the trainer.
    """
    run = Path(run)
    emb = encode_texts(model, [d["text"] for d in corpus], batch_size)
    np.save(run / "corpus_embeddings.npy", emb)
    write_json(run / "corpus_ids.json", [d["doc_id"] for d in corpus])
    pooling, normalize = model_pooling(model)
    contract = {
        "format": FORMAT,
        "model_dir": "best",
        "source_model": source,
        "revision": revision,
        "instruction": instruction or "",
        "query_template": QUERY_TEMPLATE if instruction else "{query}",
        "document_template": "{document}",
        "pooling": pooling,
        "normalize": normalize,
        "padding_side": model.tokenizer.padding_side,
        "dimensions": int(emb.shape[1]),
        "max_length": int(max_length),
        "similarity": "dot product of unit vectors (cosine)",
        "corpus_size": int(emb.shape[0]),
        "corpus_sha256": corpus_sha256,
        "files": _hashed_files(run),
        "complete": False,
    }
    write_json(run / CONTRACT, contract)
    return contract


def load_index(run: str | Path, device: str = "cpu"):
    """Verify the contract, then return (model, contract, corpus embeddings, corpus ids)."""
    from sentence_transformers import SentenceTransformer

    run = Path(run)
    _check_device(device)
    contract = verify_contract(run)
    model = SentenceTransformer(str(run / contract["model_dir"]), device=device, trust_remote_code=False,
                                local_files_only=True)
    if model.max_seq_length != contract["max_length"]:
        raise ValueError(f"{CONTRACT} field 'max_length' is {contract['max_length']}, but the saved model loads "
                         f"with a maximum sequence length of {model.max_seq_length}")
    model.max_seq_length = contract["max_length"]
    if model.tokenizer.padding_side != contract["padding_side"]:
        raise ValueError(f"tokenizer pads on the {model.tokenizer.padding_side}, the contract says "
                         f"{contract['padding_side']}")
    pooling, normalize = model_pooling(model)
    if (pooling, normalize) != (contract["pooling"], contract["normalize"]):
        raise ValueError(f"model pooling {(pooling, normalize)} differs from the contract's "
                         f"{(contract['pooling'], contract['normalize'])}")
    emb = np.load(run / "corpus_embeddings.npy", allow_pickle=False)
    ids = json.loads((run / "corpus_ids.json").read_text(encoding="utf-8"))
    if emb.shape != (contract["corpus_size"], contract["dimensions"]) or len(ids) != emb.shape[0]:
        raise ValueError(f"corpus_embeddings.npy has shape {emb.shape}, the contract says "
                         f"({contract['corpus_size']}, {contract['dimensions']})")
    return model, contract, emb, ids


def search(run: str | Path, query: str, k: int = 5, device: str = "cpu") -> list[tuple[str, float]]:
    """The top ``k`` (doc id, cosine) for one query against a verified run's index."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    _check_device(device)
    if not isinstance(query, str) or not query.strip():
        raise ValueError(f"query must be a non-empty string, got {query!r}")
    format_query(query, None)  # refuses a query that already carries an instruction, before loading anything
    model, contract, emb, ids = load_index(run, device)
    q = encode_queries(model, [query], contract["instruction"])[0]
    scores = emb @ q
    top = rank_documents(scores[None, :], ids, ["q"], k=k)["q"]
    where = {d: i for i, d in enumerate(ids)}
    return [(d, float(scores[where[d]])) for d in top]


def evaluate(run: str | Path, data: str | Path, split: str = "val", device: str = "cpu",
             batch_size: int = 32) -> dict:
    """Score one split of ``data`` against a verified run; write ``{split}_metrics.json`` and rankings.

    Refuses data whose corpus.jsonl or queries.jsonl differs from the files the run was
    trained on (SHA-256 in the contract), and refuses to overwrite an earlier evaluation
    of the same split.
    """
    run, data_dir = Path(run), Path(data)
    if split not in ("val", "test"):
        raise ValueError(f"split must be 'val' or 'test', got {split!r}")
    _check_batch_size(batch_size)
    _check_device(device)
    out_metrics, out_rankings = run / f"{split}_metrics.json", run / f"{split}_rankings.json"
    for path in (out_metrics, out_rankings):
        if path.exists():
            raise ValueError(f"{path.name} already exists in {str(run)!r}: the {split} split was evaluated "
                             "already; nothing was overwritten")
    contract = verify_contract(run)
    if not data_dir.is_dir():
        raise ValueError(f"data folder {str(data_dir)!r} does not exist or is not a folder")
    for name in ("corpus.jsonl", "queries.jsonl"):
        if not (data_dir / name).is_file():
            raise ValueError(f"{name}: file not found at {str(data_dir / name)!r}")
    if file_sha256(data_dir / "corpus.jsonl") != contract["corpus_sha256"]:
        raise ValueError(f"corpus.jsonl differs from the corpus this index was built from (SHA-256 mismatch with "
                         f"{CONTRACT} field 'corpus_sha256')")
    if file_sha256(data_dir / "queries.jsonl") != contract["data_sha256"]["queries.jsonl"]:
        raise ValueError(f"queries.jsonl differs from the one this run was trained with (SHA-256 mismatch with "
                         f"{CONTRACT} field 'data_sha256'): queries edited after training are not scored; "
                         "nothing was evaluated")
    dataset = load_dataset(data_dir)
    model, contract, emb, ids = load_index(run, device)
    metrics, rankings = rank_split(model, contract["instruction"], emb, ids, dataset, split, batch_size)
    for path, obj in ((out_rankings, rankings), (out_metrics, {"split": split, "queries": len(rankings), **metrics})):
        tmp = path.with_name(path.name + ".tmp")  # whole files only; metrics, the marker, last
        write_json(tmp, obj)
        os.replace(tmp, path)
    return metrics


def _check_batch_size(batch_size: int) -> None:
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")


def _check_device(device: str) -> None:
    import torch

    if not isinstance(device, str) or device.split(":")[0] not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} but torch sees no CUDA GPU here (a CPU build or no driver); use 'cpu'")

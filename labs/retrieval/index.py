"""Encoding, indexing and search: a run folder that refuses to be searched with the wrong model or files.

In plain words: document vectors are only comparable with query vectors made by
the *same* model, with the same tokenizer, pooling, length limit and query
instruction. A run folder therefore stores, next to the selected model and the
corpus vectors, a contract (``index_contract.json``, rules in `labs.retrieval.contract`)
with those settings and the SHA-256 of every file. `search` and `evaluate`
verify it before they encode anything, and refuse (ValueError naming the file
and the field) a run that is unfinished, edited or mixed. The instruction is
added once, by `labs.retrieval.instruction.format_query`; documents are never prefixed.

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
{split}_rankings.json     the top 10 doc ids of each query of that split; both
                          listed with their SHA-256 in the contract's ``evaluations``
========================  =====================================================

Writing order (the trainer's, inside the folder it is still building): ``best/``,
`write_index` (the vectors and ids; it returns the contract's body with their hashes),
validation_rankings.json, metrics.json, then `labs.retrieval.contract.seal_run`.

Relations: scores are dot products of unit vectors (= cosine), ranked with
`labs.retrieval.metrics.rank_documents`; a model folder loads with
``SentenceTransformer(run / "best")``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from labs.retrieval import validate
from labs.retrieval.contract import CONTRACT, FORMAT, evaluation_files, record_evaluation, verify_contract
from labs.retrieval.data import RetrievalData, load_dataset
from labs.retrieval.files import (exclusive, file_sha256, move_together, named, remove_stale, temporary_folder,
                                  write_json)
from labs.retrieval.instruction import QUERY_TEMPLATE, format_query
from labs.retrieval.metrics import rank_documents, retrieval_metrics
from labs.retrieval.progress import show_progress

__all__ = ["encode_texts", "encode_queries", "model_pooling", "rank_queries", "rank_split", "IndexWritten",
           "write_index", "load_index", "search", "evaluate"]

KS = (1, 5, 10)


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


def rank_queries(model, queries: dict[str, str], qrels: dict[str, set[str]], corpus_emb: np.ndarray,
                 corpus_ids: Sequence[str], batch_size: int = 32, k: int = 10) -> tuple[dict, dict]:
    """Encode ``queries`` (query id -> text as encoded, instruction included), rank the whole corpus;
    return (metrics at 1, 5, 10 against ``qrels``, top-k rankings)."""
    q = encode_texts(model, list(queries.values()), batch_size)
    rankings = rank_documents(q @ corpus_emb.T, list(corpus_ids), list(queries), k=k)
    return retrieval_metrics(rankings, qrels, KS), rankings


def rank_split(model, instruction: str | None, corpus_emb: np.ndarray, corpus_ids: Sequence[str],
               data: RetrievalData, split: str, batch_size: int = 32, k: int = 10) -> tuple[dict, dict]:
    """Encode one split's queries with the instruction, rank the whole corpus; return (metrics, rankings)."""
    queries = {x["query_id"]: format_query(x["text"], instruction) for x in data.split_queries(split)}
    return rank_queries(model, queries, data.qrels(split), corpus_emb, corpus_ids, batch_size, k)


def _model_files(run: Path) -> list[str]:
    """Every file under run/best, as run-relative paths, sorted."""
    return sorted(p.relative_to(run).as_posix() for p in (run / "best").rglob("*") if p.is_file())


@dataclass
class IndexWritten:
    """What `write_index` wrote: the contract's body (not yet sealed), the (N, d) unit vectors and
    the N doc ids in their row order."""

    contract: dict
    embeddings: np.ndarray
    ids: list[str]


def write_index(run: str | Path, model, *, instruction: str | None, max_length: int, source: str,
                revision: str | None, corpus: Sequence[dict], corpus_sha256: str,
                batch_size: int = 32) -> IndexWritten:
    """Encode the corpus with the model saved in ``run/best``; write the vectors and ids; return
    what was written, with the contract's body listing the SHA-256 of the model and index files.

    The contract is written by `labs.retrieval.contract.seal_run`, last, once the trainer's own
    files are written too.
    """
    run = Path(run)
    emb = encode_texts(model, [d["text"] for d in corpus], batch_size)
    ids = [d["doc_id"] for d in corpus]
    with open(run / "corpus_embeddings.npy", "wb") as f, named(run / "corpus_embeddings.npy"):
        np.save(f, emb)
    files = {name: file_sha256(run / name) for name in _model_files(run)}
    files["corpus_embeddings.npy"] = file_sha256(run / "corpus_embeddings.npy")
    files["corpus_ids.json"] = write_json(run / "corpus_ids.json", ids)
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
        "files": files,
        "complete": False,
    }
    return IndexWritten(contract, emb, ids)


def load_index(run: str | Path, device: str = "cpu", contract: dict | None = None):
    """Verify the contract (unless the caller passes the one it has just verified), then return
    (model, contract, corpus embeddings, corpus ids).

    ``device`` is trusted (`search` and `evaluate` check it)."""
    from sentence_transformers import SentenceTransformer

    contract = verify_contract(run) if contract is None else contract
    run = Path(run)
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
    try:
        emb = np.load(run / "corpus_embeddings.npy", allow_pickle=False)
    except ValueError:  # numpy's "Object arrays cannot be loaded when allow_pickle=False", or not .npy at all
        raise ValueError("corpus_embeddings.npy is not an array of numbers (a pickled object array, or another "
                         "format): it is never unpickled (that could run code); rebuild the index") from None
    if emb.dtype != np.float32:
        raise ValueError(f"corpus_embeddings.npy holds {emb.dtype} values, the index is float32; rebuild the index")
    ids = json.loads((run / "corpus_ids.json").read_text(encoding="utf-8"))  # verified against its SHA-256
    if emb.shape != (contract["corpus_size"], contract["dimensions"]) or len(ids) != emb.shape[0]:
        raise ValueError(f"corpus_embeddings.npy has shape {emb.shape}, the contract says "
                         f"({contract['corpus_size']}, {contract['dimensions']})")
    return model, contract, emb, ids


def search(run: str | Path, query: str, k: int = 5, device: str = "cpu") -> list[tuple[str, float]]:
    """The top ``k`` (doc id, cosine) for one query against a verified run's index."""
    validate.integer("k", k, 1)
    validate.device("device", device)
    if not isinstance(query, str) or not query.strip():
        raise ValueError(f"query must be a non-empty string, got {query!r}")
    validate.text("query", query)
    format_query(query, None)  # refuses a query that already carries an instruction, before loading anything
    model, contract, emb, ids = load_index(run, device)
    q = encode_queries(model, [query], contract["instruction"])[0]
    scores = emb @ q
    top = rank_documents(scores[None, :], ids, ["q"], k=k)["q"]
    where = {d: i for i, d in enumerate(ids)}
    return [(d, float(scores[where[d]])) for d in top]


def evaluate(run: str | Path, data: str | Path, split: str = "val", device: str = "cpu",
             batch_size: int = 32) -> dict:
    """Score one split of ``data`` against a verified run; add ``{split}_rankings.json`` and
    ``{split}_metrics.json`` to the run and record their SHA-256 in its contract (field
    ``evaluations``), so that an edited evaluation file is refused like any other.

    Refuses data whose corpus.jsonl or queries.jsonl differs from the files the run was trained
    on (SHA-256 in the contract), a split evaluated already (nothing is overwritten), and a
    second evaluation of the same run running at the same time. The two files and the renewed
    contract are written aside and moved in together; the contract, moved last, is what makes
    the evaluation count, so an evaluation that fails or is stopped changes nothing and can
    simply be run again.
    """
    run = Path(os.path.abspath(validate.folder("run folder", run)))  # '.' and '..': the lock goes beside it
    validate.choice("split", split, ("val", "test"))
    validate.integer("batch_size", batch_size, 1)
    validate.device("device", device)
    names = evaluation_files(split)
    with exclusive(run.parent / f".{run.name}.lock", f"run folder {str(run)!r}"):
        contract = verify_contract(run, replacing=names)
        if names[0] in contract["evaluations"]:
            raise ValueError(f"{names[0]} already exists in {str(run)!r}: the {split} split was evaluated "
                             "already; nothing was overwritten")
        dataset = load_dataset(data)
        if dataset.sha256["corpus.jsonl"] != contract["corpus_sha256"]:
            raise ValueError(f"corpus.jsonl differs from the corpus this index was built from (SHA-256 mismatch "
                             f"with {CONTRACT} field 'corpus_sha256')")
        if dataset.sha256["queries.jsonl"] != contract["data_sha256"]["queries.jsonl"]:
            raise ValueError(f"queries.jsonl differs from the one this run was trained with (SHA-256 mismatch with "
                             f"{CONTRACT} field 'data_sha256'): queries edited after training are not scored; "
                             "nothing was evaluated")
        model, contract, emb, ids = load_index(run, device, contract)
        metrics, rankings = rank_split(model, contract["instruction"], emb, ids, dataset, split, batch_size)
        remove_stale(run.parent, f".{run.name}.eval-")  # left by a killed evaluate (we hold the lock)
        with temporary_folder(f".{run.name}.eval-", run.parent, stands_for=run) as staged:
            written = {names[1]: write_json(staged / names[1], rankings),
                       names[0]: write_json(staged / names[0], {"split": split, "queries": len(rankings), **metrics})}
            write_json(staged / CONTRACT, record_evaluation(contract, written))
            move_together(staged, run, [*written, CONTRACT])  # the contract last: the evaluation counts now
    return metrics

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
corpus_texts.json         the N document texts (what BM25 ranks), same order
corpus_fields.json        the N documents' ``fields`` ({} if none; --where)
chunk_embeddings.npy      only with --chunk: (W, d) unit vectors of the
chunk_docs.json           windows, and each window's document row
validation_rankings.json  query id -> top 10 doc ids on validation
metrics.json              configuration, validation history, data hashes, memory
{split}_metrics.json      written only by `evaluate` (never overwritten), with
{split}_rankings.json     the top 10 doc ids of each query of that split; both
                          listed with their SHA-256 in the contract's ``evaluations``
========================  =====================================================

Writing order (the trainer's, inside the folder it is still building): ``best/``,
`write_index` (the vectors and ids; it returns the contract's body with their hashes),
validation_rankings.json, metrics.json, then `labs.retrieval.contract.seal_run`.

Ranking (`score_queries`): ``--ranker dense`` ranks by the cosine (with windows, a
document's best window or their mean, `labs.retrieval.chunking`), ``bm25`` by BM25 on the
stored texts, ``hybrid`` by both fused (`labs.retrieval.hybrid`); a ``--where`` filter
(`labs.retrieval.filters`) removes the documents that fail it before anything is ranked.

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

from labs import checks
from labs.retrieval import machine
from labs.retrieval.contract import CONTRACT, FORMAT, evaluation_files, record_evaluation, verify_contract
from labs.retrieval.data import RetrievalData, load_dataset
from labs.retrieval.files import (exclusive, file_sha256, move_together, named, remove_stale, temporary_folder,
                                  write_json)
from labs.retrieval.instruction import QUERY_TEMPLATE, format_query
from labs.retrieval.metrics import rank_documents, retrieval_metrics
from labs.retrieval.progress import show_progress
from labs.retrieval import chunking, filters, hybrid

__all__ = ["encode_texts", "encode_queries", "model_pooling", "rank_queries", "rank_split", "IndexWritten",
           "write_index", "load_index", "search", "evaluate",
           "Ranking", "Loaded", "load_run", "score_queries", "score_split", "truncation_report", "masks_for",
           "read_index_file", "evaluate_all"]

KS = (1, 5, 10)


def encode_texts(model, texts: Sequence[str], batch_size: int = 32, bar: bool | None = None) -> np.ndarray:
    """Unit-length embeddings (len(texts), d) as float32, documents as they are; ``bar`` overrides
    whether a progress bar shows (default: unless TQDM_DISABLE)."""
    emb = model.encode(list(texts), batch_size=batch_size, convert_to_numpy=True, normalize_embeddings=True,
                       show_progress_bar=show_progress() if bar is None else bar)
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
    truncation: dict | None = None


def write_index(run: str | Path, model, *, instruction: str | None, max_length: int, source: str,
                revision: str | None, corpus: Sequence[dict], corpus_sha256: str,
                batch_size: int = 32, chunk: int | None = None, stride: int | None = None) -> IndexWritten:
    """Encode the corpus with the model saved in ``run/best``; write the vectors and ids; return
    what was written, with the contract's body listing the SHA-256 of the model and index files.

    The contract is written by `labs.retrieval.contract.seal_run`, last, once the trainer's own
    files are written too. Beside the vectors it keeps the texts (for BM25) and the fields (for
    ``--where``); with ``chunk`` and ``stride`` (tokens), also every window's vector
    (`labs.retrieval.chunking.windows`). ``truncation`` reports what the length limit cuts.
    """
    run = Path(run)
    emb = encode_texts(model, [d["text"] for d in corpus], batch_size)
    ids = [d["doc_id"] for d in corpus]
    with open(run / "corpus_embeddings.npy", "wb") as f, named(run / "corpus_embeddings.npy"):
        np.save(f, emb)
    files = {name: file_sha256(run / name) for name in _model_files(run)}
    files["corpus_embeddings.npy"] = file_sha256(run / "corpus_embeddings.npy")
    files["corpus_ids.json"] = write_json(run / "corpus_ids.json", ids)
    files["corpus_texts.json"] = write_json(run / "corpus_texts.json", [d["text"] for d in corpus])
    files["corpus_fields.json"] = write_json(run / "corpus_fields.json", [d.get("fields", {}) for d in corpus])
    if chunk is not None:
        texts, docs = [], []
        for row, d in enumerate(corpus):
            parts = chunking.windows(model.tokenizer, d["text"], chunk, stride)
            texts += parts
            docs += [row] * len(parts)
        chunk_emb = encode_texts(model, texts, batch_size)
        with open(run / "chunk_embeddings.npy", "wb") as f, named(run / "chunk_embeddings.npy"):
            np.save(f, chunk_emb)
        files["chunk_embeddings.npy"] = file_sha256(run / "chunk_embeddings.npy")
        files["chunk_docs.json"] = write_json(run / "chunk_docs.json", {"tokens": chunk, "stride": stride,
                                                                         "docs": docs})
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
    cut = chunking.truncation(model.tokenizer, [d["text"] for d in corpus], max_length)
    return IndexWritten(contract, emb, ids, cut)


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


def search(run: str | Path, query: str, k: int = 5, device: str = "cpu", *, where: Sequence[str] = (),
           ranking: Ranking | None = None) -> list[tuple[str, float]]:
    """The top ``k`` (doc id, score) for one query against a verified run's index: the cosine by
    default, else as ``ranking`` says; with ``where`` (``["access=public", ...]``) only among the
    documents whose fields pass every condition (fewer than k, or none, if fewer pass)."""
    checks.integer(k, "k", 1)
    machine.device(device, "device")
    if not isinstance(query, str) or not query.strip():
        raise ValueError(f"query must be a non-empty string, got {query!r}")
    checks.text(query, "query")
    format_query(query, None)  # refuses a query that already carries an instruction, before loading anything
    ranking = Ranking() if ranking is None else ranking
    conditions = filters.parse_where(where)
    contract = verify_contract(run)
    masks = masks_for(read_index_file(run, contract, "corpus_fields.json"), [conditions])  # before the model loads
    ranking.check(contract)
    loaded = load_run(run, device, contract)
    ranking.windows_of(loaded)  # a run without windows is refused before anything is encoded
    q = encode_queries(loaded.model, [query], loaded.contract["instruction"]) if ranking.ranker != "bm25" else None
    return score_queries(loaded, q, [query], ranking, masks, k)[0]


def evaluate(run: str | Path, data: str | Path, split: str = "val", device: str = "cpu",
             batch_size: int = 32, ranking: Ranking | None = None) -> dict:
    """`evaluate_all`, returning only the metrics of ``ranking`` (the model's cosine by default)."""
    report = evaluate_all(run, data, split, device, batch_size, ranking)
    return {key: report[key] for key in report["systems"][report["ranking"]]}


def evaluate_all(run: str | Path, data: str | Path, split: str = "val", device: str = "cpu",
                 batch_size: int = 32, ranking: Ranking | None = None) -> dict:
    """Score one split of ``data`` against a verified run; add ``{split}_rankings.json`` and
    ``{split}_metrics.json`` to the run and record their SHA-256 in its contract (field
    ``evaluations``), so that an edited evaluation file is refused like any other.

    Refuses data whose corpus.jsonl or queries.jsonl differs from the files the run was trained
    on (SHA-256 in the contract), a split evaluated already (nothing is overwritten), and a
    second evaluation of the same run running at the same time. The two files and the renewed
    contract are written aside and moved in together; the contract, moved last, is what makes
    the evaluation count, so an evaluation that fails or is stopped changes nothing and can
    simply be run again.

    Besides ``ranking`` (whose top 10 are the saved rankings and whose metrics are the file's
    top-level keys), it scores, on the same queries, BM25, the model's cosine and the two fused
    (``systems``; with windows also by max and by mean), the paired bootstrap interval of their
    MRR@10 differences (``differences``) and what the length limit cuts (``truncation``); it
    returns the file's content.
    """
    ranking = Ranking() if ranking is None else ranking
    run = Path(os.path.abspath(machine.folder(run, "run folder")))  # '.' and '..': the lock goes beside it
    checks.choice(split, "split", ("val", "test"))
    checks.integer(batch_size, "batch_size", 1)
    machine.device(device, "device")
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
        ranking.check(contract)
        loaded = load_run(run, device, contract)
        report, rankings = score_split(loaded, dataset, split, batch_size, ranking)
        remove_stale(run.parent, f".{run.name}.eval-")  # left by a killed evaluate (we hold the lock)
        with temporary_folder(f".{run.name}.eval-", run.parent, stands_for=run) as staged:
            written = {names[1]: write_json(staged / names[1], rankings),
                       names[0]: write_json(staged / names[0], report)}
            write_json(staged / CONTRACT, record_evaluation(contract, written))
            move_together(staged, run, [*written, CONTRACT])  # the contract last: the evaluation counts now
    return report


#: The paired differences `evaluate_all` reports (first minus second), when both systems were scored.
DIFFERENCES = (("hybrid", "dense"), ("hybrid", "bm25"), ("dense", "bm25"), ("dense/max", "dense"),
               ("dense/mean", "dense"), ("dense/max", "dense/mean"), ("hybrid/max", "hybrid"))


def score_split(loaded: Loaded, data: RetrievalData, split: str, batch_size: int,
                 ranking: Ranking) -> tuple[dict, dict]:
    """(the {split}_metrics.json content, the chosen ranking's top 10 per query) for one split."""
    from labs.retrieval.intervals import paired_interval, per_query

    queries = data.split_queries(split)
    ids = [x["query_id"] for x in queries]
    bare = [x["text"] for x in queries]
    formatted = [format_query(t, loaded.contract["instruction"]) for t in bare]
    qrels = data.qrels(split)
    chosen = ranking.label(loaded)
    q = encode_texts(loaded.model, formatted, batch_size)
    lexical = _lexical(loaded, bare) if loaded.texts is not None else None
    settings = {"fusion": ranking.fusion, "rrf_k": ranking.rrf_k, "weight": ranking.weight}
    systems = {"dense": Ranking("dense", windows="whole")}
    if lexical is not None:
        systems = {"bm25": Ranking("bm25", **settings), **systems, "hybrid": Ranking("hybrid", windows="whole",
                                                                                        **settings)}
    if loaded.chunk is not None:
        systems.update({"dense/max": Ranking("dense", windows="max"), "dense/mean": Ranking("dense", windows="mean")})
        if lexical is not None:
            systems["hybrid/max"] = Ranking("hybrid", windows="max", **settings)
    def key(r: Ranking):
        return (r.ranker, None if r.ranker == "bm25" else r.windows_of(loaded),
                (r.fusion, r.rrf_k, r.weight) if r.ranker == "hybrid" else None)

    same = [name for name, r in systems.items() if key(r) == key(ranking)]
    chosen = same[0] if same else chosen
    systems.setdefault(chosen, ranking)
    dense = {w: _dense(loaded, q, w) for w in {r.windows_of(loaded) for r in systems.values()}}
    scored, values, saved = {}, {}, {}
    for name, r in systems.items():
        top = score_queries(loaded, q, bare, r, None, 10, dense=dense[r.windows_of(loaded)], lexical=lexical)
        rankings = {qid: [d for d, _ in hits] for qid, hits in zip(ids, top)}
        scored[name] = retrieval_metrics(rankings, qrels, KS)
        values[name] = per_query(rankings, qrels, "mrr", 10)
        saved = rankings if name == chosen else saved
    differences = {}
    for a, b in DIFFERENCES:
        if a in values and b in values:
            mean, low, high = paired_interval(values[a], values[b])
            differences[f"{a} - {b}"] = {"mrr@10": mean, "low": low, "high": high}
    report = {"split": split, "queries": len(ids), **scored[chosen], "ranking": chosen, "systems": scored,
              "differences": differences, "truncation": truncation_report(loaded, formatted),
              "windows": loaded.chunk}
    return report, saved


# ---- rankers, filters and windows (search --ranker/--where, evaluate's side-by-side table) ----

#: How a document's windows score it: ``auto`` is ``max`` when the run has windows, else the whole
#: document's vector; ``whole`` always the whole document's vector.
WINDOWS = ("auto", "whole", *chunking.WINDOW_SCORES)


@dataclass(frozen=True)
class Ranking:
    """How documents are ranked (the flags --ranker, --fusion, --rrf-k, --weight, --windows), checked
    when made."""

    ranker: str = "dense"
    fusion: str = "rrf"
    rrf_k: int = hybrid.RRF_K
    weight: float = 0.5
    windows: str = "auto"

    def __post_init__(self) -> None:
        checks.choice(self.ranker, "--ranker", hybrid.RANKERS)
        checks.choice(self.fusion, "--fusion", hybrid.FUSIONS)
        checks.integer(self.rrf_k, "--rrf-k", 1)
        if isinstance(self.weight, bool) or not isinstance(self.weight, (int, float)) or not 0 <= self.weight <= 1:
            raise ValueError(f"--weight must be a number from 0 to 1 (the dense score's share), got {self.weight!r}")
        checks.choice(self.windows, "--windows", WINDOWS)

    def check(self, contract: dict) -> None:
        """ValueError when the flags ask for windows that the verified run's ``contract`` does not list."""
        if self.windows in chunking.WINDOW_SCORES and "chunk_docs.json" not in contract["files"]:
            raise ValueError(f"--windows {self.windows}: this run's index has no windows; train it with "
                             "--chunk TOKENS --stride TOKENS, or use --windows whole")

    def windows_of(self, loaded: Loaded) -> str | None:
        """``"max"``, ``"mean"`` or None (whole documents) for this run; ValueError for windows a run lacks."""
        if self.windows in chunking.WINDOW_SCORES and loaded.chunk is None:
            raise ValueError(f"--windows {self.windows}: this run's index has no windows; train it with "
                             "--chunk TOKENS --stride TOKENS, or use --windows whole")
        if self.windows == "auto":
            return "max" if loaded.chunk is not None else None
        return None if self.windows == "whole" else self.windows

    def label(self, loaded: Loaded | None = None) -> str:
        """E.g. ``hybrid (rrf, k=60)``, ``dense (windows: max)``."""
        parts = []
        if self.ranker == "hybrid":
            parts.append(f"rrf, k={self.rrf_k}" if self.fusion == "rrf" else f"weighted, dense {self.weight:g}")
        windows = self.windows_of(loaded) if loaded is not None and self.ranker != "bm25" else None
        if windows:
            parts.append(f"windows: {windows}")
        return self.ranker + (f" ({'; '.join(parts)})" if parts else "")


@dataclass
class Loaded:
    """A verified run's index: the model, the contract, the (N, d) document vectors and their ids,
    the texts and fields (None in a run trained before they were kept), and with --chunk the (W, d)
    window vectors, each window's document row (W,) and the chunk settings."""

    model: object
    contract: dict
    embeddings: np.ndarray
    ids: list[str]
    texts: list[str] | None
    fields: list[dict] | None
    chunk_embeddings: np.ndarray | None
    chunk_docs: np.ndarray | None
    chunk: dict | None

    def masks(self, conditions: Sequence[Sequence[filters.Condition]], what: str = "--where") -> np.ndarray | None:
        """`masks_for` this run's fields."""
        return masks_for(self.fields, conditions, what)


def masks_for(fields: list[dict] | None, conditions: Sequence[Sequence[filters.Condition]],
              what: str = "--where") -> np.ndarray | None:
    """(Q, N) bool: which documents each query's conditions let through; None when no query has any.
    ``fields`` None is a run trained before fields were kept."""
    if not any(conditions):
        return None
    if fields is None:
        raise ValueError(f"{what}: this run keeps no document fields (it was trained before fields were "
                         "kept); train it again to filter")
    return np.stack([filters.where_mask(fields, c, what) for c in conditions])


def read_index_file(run: str | Path, contract: dict, name: str):
    """A JSON index file the verified ``contract`` lists (its SHA-256 checked), or None if it lists none."""
    return json.loads((Path(run) / name).read_text(encoding="utf-8")) if name in contract["files"] else None


def load_run(run: str | Path, device: str = "cpu", contract: dict | None = None) -> Loaded:
    """`load_index`, and the texts, fields and windows the run keeps (each verified by its SHA-256)."""
    model, contract, emb, ids = load_index(run, device, contract)
    run = Path(run)

    def read(name: str):
        return read_index_file(run, contract, name)

    texts, fields, chunk = read("corpus_texts.json"), read("corpus_fields.json"), read("chunk_docs.json")
    chunk_emb = chunk_docs = None
    for name, value in (("corpus_texts.json", texts), ("corpus_fields.json", fields)):
        if value is not None and len(value) != len(ids):
            raise ValueError(f"{name} holds {len(value)} entries, the index {len(ids)} documents")
    if chunk is not None:
        chunk_emb = np.load(run / "chunk_embeddings.npy", allow_pickle=False)
        chunk_docs = np.asarray(chunk["docs"], dtype=np.int64)
        if chunk_emb.shape != (len(chunk_docs), emb.shape[1]) or set(chunk_docs.tolist()) != set(range(len(ids))):
            raise ValueError(f"chunk_embeddings.npy has shape {chunk_emb.shape} for {len(chunk_docs)} windows of "
                             f"{len(ids)} documents: the windows do not match the index")
        chunk = {"tokens": chunk["tokens"], "stride": chunk["stride"]}
    return Loaded(model, contract, emb, ids, texts, fields, chunk_emb, chunk_docs, chunk)


def _dense(loaded: Loaded, q: np.ndarray, windows: str | None) -> np.ndarray:
    if windows is None:
        return q @ loaded.embeddings.T
    return chunking.document_scores(q @ loaded.chunk_embeddings.T, loaded.chunk_docs, len(loaded.ids), windows)


def _lexical(loaded: Loaded, query_texts: Sequence[str]) -> np.ndarray:
    from labs.retrieval.metrics import bm25_scores

    if loaded.texts is None:
        raise ValueError("--ranker bm25 and hybrid need the document texts, which this run does not keep (it was "
                         "trained before they were kept); train it again")
    return bm25_scores(loaded.texts, list(query_texts))


def score_queries(loaded: Loaded, q: np.ndarray | None, query_texts: Sequence[str], ranking: Ranking,
                  masks: np.ndarray | None = None, k: int = 10, *, dense: np.ndarray | None = None,
                  lexical: np.ndarray | None = None) -> list[list[tuple[str, float]]]:
    """For each query, its top ``k`` (doc id, score) under ``ranking``, among the documents its row of
    ``masks`` lets through (all without masks): ``q`` is (Q, d) query vectors (None for bm25),
    ``query_texts`` the bare queries BM25 reads. ``dense`` / ``lexical`` pass (Q, N) scores already
    computed. The fused score of ``hybrid`` is what is returned as its score."""
    windows = ranking.windows_of(loaded)
    if ranking.ranker != "bm25" and dense is None:
        dense = _dense(loaded, q, windows)
    if ranking.ranker != "dense" and lexical is None:
        lexical = _lexical(loaded, query_texts)
    everything = np.arange(len(loaded.ids))
    out = []
    for i in range(len(query_texts)):
        cols = everything if masks is None else np.flatnonzero(masks[i])
        if not len(cols):
            out.append([])
            continue
        ids = [loaded.ids[c] for c in cols]
        if ranking.ranker == "dense":
            scores = dense[i, cols]
        elif ranking.ranker == "bm25":
            scores = lexical[i, cols]
        else:
            scores = hybrid.fuse(dense[i:i + 1, cols], lexical[i:i + 1, cols], ids, ranking.fusion, ranking.rrf_k,
                                 ranking.weight)[0]
        top = rank_documents(scores[None, :], ids, ["q"], k=min(k, len(ids)))["q"]
        position = {d: j for j, d in enumerate(ids)}
        out.append([(d, float(scores[position[d]])) for d in top])
    return out


def truncation_report(loaded: Loaded, queries: Sequence[str]) -> dict:
    """What the run's length limit cuts of its documents and of ``queries`` (texts as encoded)."""
    tokenizer, limit = loaded.model.tokenizer, loaded.contract["max_length"]
    documents = loaded.texts if loaded.texts is not None else []
    return {"documents": chunking.truncation(tokenizer, documents, limit),
            "queries": chunking.truncation(tokenizer, list(queries), limit)}

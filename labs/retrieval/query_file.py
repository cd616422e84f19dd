"""Many queries at once: a JSONL file of queries in, a JSONL file of results out, whole or not at all.

In plain words: ``search --queries FILE.jsonl --out FILE.jsonl`` reads one query per line,
encodes them in batches (one model call per batch, not one per query; a progress bar on a
terminal), ranks each against the run's index exactly as ``search`` ranks one, and writes one
line per query. The output is written beside its final name and renamed into place only when
every line is written, under a lock that refuses a second writer of the same file.

The files (one JSON object per line)
------------------------------------
========  ==================================================================================
in        ``id`` (str, distinct; ``query_id`` is read too), ``text`` (str), optional ``where``
          (list of ``KEY=VALUE`` strings, added to the command's ``--where``)
out       ``id``, ``results`` (the top k as ``{"doc_id", "score"}``, best first), ``where`` (the
          conditions applied to this query), ``ranking`` (e.g. ``hybrid (rrf, k=60)``)
========  ==================================================================================

A bad line is refused before the model loads, naming the file and line. Relations: rows are read
with `labs.retrieval.data.read_jsonl`'s checks; ranking is `labs.retrieval.index.score_queries`;
the whole-or-nothing write is `labs.retrieval.files` (``benchmarks/search_queries.py`` times
batched against one at a time).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

from labs import checks
from labs.retrieval import files, filters, machine
from labs.retrieval.data import DataError, read_jsonl
from labs.retrieval.instruction import format_query

__all__ = ["read_queries", "search_file", "write_jsonl"]


def read_queries(path: str | Path, where: list[str] | tuple = ()) -> list[dict]:
    """The queries of a JSONL file as ``{"id", "text", "where": [conditions as given]}``, each row's
    ``where`` after the command's; DataError naming the file and line for a bad row."""
    path = Path(path)
    name = path.name
    rows = read_jsonl(path)
    if not rows:
        raise DataError(name, None, "the file has no queries (it is empty or blank): one JSON object per line")
    seen: dict[str, int] = {}
    out = []
    for n, row in rows:
        qid = row.get("id", row.get("query_id"))
        if not isinstance(qid, str) or not qid.strip() or not qid.isprintable():
            raise DataError(name, n, "each query needs an 'id': a non-empty printable string")
        if qid in seen:
            raise DataError(name, n, f"duplicate id {qid!r} (first on line {seen[qid]})")
        seen[qid] = n
        text = row.get("text")
        if not isinstance(text, str) or not text.strip():
            raise DataError(name, n, "field 'text' must be a non-empty string")
        try:
            checks.text(text, "field 'text'")
            format_query(text, None)  # refuses a query that already carries an instruction
            own = row.get("where", [])
            if not isinstance(own, list) or not all(isinstance(c, str) for c in own):
                raise ValueError("field 'where' must be a list of KEY=VALUE strings")
            filters.parse_where(own, "field 'where'")
        except ValueError as err:
            raise DataError(name, n, str(err)) from None
        out.append({"id": qid, "text": text, "where": [*where, *own], "line": n})
    return out


def write_jsonl(out: str | Path, rows: list[dict]) -> Path:
    """Write ``rows`` as a new JSONL file ``out`` (missing folders made), whole or not at all: refused
    if it exists, or if another process is writing it now."""
    out = machine.new_path(out, "--out", folder=False)
    folder = Path(os.path.abspath(out)).parent
    text = "".join(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n" for row in rows)
    with files.new_parents(folder), files.exclusive(folder / f".{out.name}.lock", f"--out {str(out)!r}"):
        machine.new_path(out, "--out", folder=False)  # again, now that no other writer can race us
        files.remove_stale(folder, f".{out.name}.tmp-")  # left by a killed search
        with files.temporary_folder(f".{out.name}.tmp-", folder, stands_for=folder) as staged:
            with files.named(folder / out.name), open(staged / out.name, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            files.move_together(staged, folder, [out.name])
    return out


def search_file(run: str | Path, queries: str | Path, out: str | Path, *, k: int = 5, device: str = "cpu",
                where: list[str] | tuple = (), ranking=None, batch_size: int = 32) -> dict:
    """Rank every query of the file ``queries`` against the run and write ``out`` (JSONL, one line per
    query); return ``{"queries": Q, "out": path}``. Everything is checked before the model loads."""
    from labs.retrieval.contract import verify_contract
    from labs.retrieval.index import Ranking, encode_texts, load_run, masks_for, read_index_file, score_queries

    checks.integer(k, "--k", 1)
    checks.integer(batch_size, "--batch-size", 1)
    machine.device(device, "--device")
    ranking = Ranking() if ranking is None else ranking
    filters.parse_where(where)
    machine.new_path(out, "--out", folder=False)
    rows = read_queries(queries, where)
    contract = verify_contract(run)
    ranking.check(contract)
    fields = read_index_file(run, contract, "corpus_fields.json")
    if where:
        masks_for(fields, [filters.parse_where(where)])  # the command's own conditions: refused as --where
    masks = None
    if any(r["where"] for r in rows):  # every row's conditions checked before the model loads
        masks = np.ones((len(rows), contract["corpus_size"]), dtype=bool)
        for i, r in enumerate(rows):
            try:
                if r["where"]:
                    masks[i] = masks_for(fields, [filters.parse_where(r["where"], "field 'where'")], "field 'where'")[0]
            except ValueError as err:
                raise DataError(Path(queries).name, r["line"], str(err)) from None
    loaded = load_run(run, device, contract)
    ranking.windows_of(loaded)
    texts = [r["text"] for r in rows]
    q = None
    if ranking.ranker != "bm25":
        bar = sys.stderr.isatty() and None  # a bar on a terminal only (and never under TQDM_DISABLE)
        q = encode_texts(loaded.model, [format_query(t, loaded.contract["instruction"]) for t in texts], batch_size,
                         bar=bar)
    label = ranking.label(loaded)
    results = score_queries(loaded, q, texts, ranking, masks, k)
    lines = [{"id": r["id"], "results": [{"doc_id": d, "score": s} for d, s in hits], "where": r["where"],
              "ranking": label} for r, hits in zip(rows, results)]
    write_jsonl(out, lines)
    return {"queries": len(rows), "out": str(out)}

"""The index contract: a run folder that refuses to be searched with the wrong model or the wrong files.

In plain words: document vectors are only comparable with query vectors made by
the *same* model, with the same tokenizer, pooling, length limit and query
instruction. A run folder therefore stores, next to the selected model and the
corpus vectors, a contract (``index_contract.json``) with those settings and the
SHA-256 of every file. `search` and `evaluate` check every hash before they
encode anything, and refuse (ValueError naming the file) when one differs.
The instruction is added here, in `format_query`, exactly once; documents are
never prefixed.

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
{split}_metrics.json      written only by `evaluate` (never overwritten)
========================  =====================================================

Relations: scores are dot products of unit vectors (= cosine), ranked with
`labs.metrics.rank_documents`; a model folder loads with
``SentenceTransformer(run / "best")``. Lesson: ``notebooks/05_finetuning.ipynb``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

import numpy as np

from labs.helpdesk import FILES, HelpdeskData, file_sha256, has_instruction, load_dataset
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

QUERY_TEMPLATE = "Instruct: {task}\nQuery:{query}"
CONTRACT = "index_contract.json"
FORMAT = 2
INDEX_FILES = ("corpus_embeddings.npy", "corpus_ids.json")
RUN_FILES = ("metrics.json", "validation_rankings.json")  # hashed by seal_run, the trainer's last step
EVALUATION_FILES = tuple(f"{split}_{kind}.json" for split in ("val", "test") for kind in ("metrics", "rankings"))
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


def _write_json(path: Path, obj) -> None:
    path.write_text(json.dumps(obj, indent=1, ensure_ascii=False, sort_keys=False) + "\n", encoding="utf-8")


def _read_json(path: Path, what: str):
    """Parse a JSON file; ValueError naming the file for a missing, unreadable or malformed one."""
    if not path.is_file():
        raise ValueError(f"{what} is missing from {str(path.parent)!r}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise ValueError(f"{what}: byte offset {err.start} is not valid UTF-8") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{what}: malformed JSON ({err.msg} at line {err.lineno}, column {err.colno})") from None
    except OSError as err:
        raise ValueError(f"{what}: cannot read it ({err.strerror})") from None


def _model_files(run: Path, model_dir: str = "best") -> list[str]:
    """Every file under run/model_dir, as run-relative paths, sorted."""
    return sorted(p.relative_to(run).as_posix() for p in (run / model_dir).rglob("*") if p.is_file())


def _hashed_files(run: Path) -> dict[str, str]:
    names = _model_files(run) + list(INDEX_FILES)
    return {name: file_sha256(run / name) for name in names}


def contract_digest(contract: dict) -> str:
    """SHA-256 of the contract's canonical JSON (sorted keys, no spaces), ``contract_sha256`` left out."""
    body = {k: v for k, v in contract.items() if k != "contract_sha256"}
    text = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def write_index(run: str | Path, model, *, instruction: str | None, max_length: int, source: str,
                revision: str | None, corpus: Sequence[dict], corpus_sha256: str, batch_size: int = 32) -> dict:
    """Encode the corpus with the model saved in ``run/best``, write the vectors, ids and an unsealed contract.

    The contract says ``"complete": false`` until `seal_run` is called, last, by the trainer.
    """
    run = Path(run)
    emb = encode_texts(model, [d["text"] for d in corpus], batch_size)
    np.save(run / "corpus_embeddings.npy", emb)
    _write_json(run / "corpus_ids.json", [d["doc_id"] for d in corpus])
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
    _write_json(run / CONTRACT, contract)
    return contract


def seal_run(run: str | Path) -> dict:
    """Mark a run complete; the trainer calls this last, after metrics.json and validation_rankings.json.

    Adds to the contract the SHA-256 of those two files (``run_files``), the data hashes
    recorded in metrics.json (``data_sha256``), ``complete: true`` and the digest of the
    body (``contract_sha256``); writes it atomically, then checks the sealed run.
    """
    run = Path(run)
    contract = _read_json(run / CONTRACT, CONTRACT)
    if not isinstance(contract, dict) or contract.get("complete") is not False:
        raise ValueError(f"{CONTRACT} in {str(run)!r} is not an unsealed contract written by write_index")
    metrics = _read_json(run / "metrics.json", "metrics.json")
    data = metrics.get("data_sha256") if isinstance(metrics, dict) else None
    if not isinstance(data, dict) or set(data) != set(FILES) or not all(_is_sha(v) for v in data.values()):
        raise ValueError(f"metrics.json field 'data_sha256' must map {', '.join(FILES)} to SHA-256 digests")
    if data["corpus.jsonl"] != contract.get("corpus_sha256"):
        raise ValueError("metrics.json field 'data_sha256' names another corpus.jsonl than the one indexed "
                         f"({CONTRACT} field 'corpus_sha256')")
    for name in RUN_FILES:
        if not (run / name).is_file():
            raise ValueError(f"{name} is missing from {str(run)!r}: write it before sealing the run")
    contract["run_files"] = {name: file_sha256(run / name) for name in RUN_FILES}
    contract["data_sha256"] = {name: data[name] for name in FILES}
    contract["complete"] = True
    contract["contract_sha256"] = contract_digest(contract)
    tmp = run / (CONTRACT + ".tmp")
    _write_json(tmp, contract)
    os.replace(tmp, run / CONTRACT)
    return verify_contract(run)


def _is_sha(value) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def _inside(run: Path, name, field: str) -> Path:
    """run/name for a plain relative path that stays inside run (no absolute path, '..' or symbolic link)."""
    bad = not isinstance(name, str) or not name or "\\" in name or "\0" in name
    parts = () if bad else PurePosixPath(name).parts
    if bad or PurePosixPath(name).is_absolute() or any(p in ("..", ".") for p in parts) or name != "/".join(parts):
        raise ValueError(f"{CONTRACT} field {field} is {name!r}: it must be a plain relative path inside the run "
                         "folder (no absolute path, no '..')")
    for i in range(1, len(parts) + 1):
        if (run / Path(*parts[:i])).is_symlink():
            raise ValueError(f"{CONTRACT} field {field}: {'/'.join(parts[:i])} is a symbolic link; a run folder "
                             "holds plain files and folders only")
    return run / Path(*parts)


_FIELDS = {"format": int, "model_dir": str, "source_model": str, "instruction": str, "query_template": str,
           "document_template": str, "pooling": str, "normalize": bool, "padding_side": str, "dimensions": int,
           "max_length": int, "similarity": str, "corpus_size": int, "corpus_sha256": str, "files": dict,
           "run_files": dict, "data_sha256": dict, "contract_sha256": str}


def _check_fields(contract: dict) -> None:
    """Every field present, of its type and range; each failure names the field."""
    for field, kind in _FIELDS.items():
        if field not in contract:
            raise ValueError(f"{CONTRACT} has no field {field!r}")
        value = contract[field]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ValueError(f"{CONTRACT} field {field!r} must be {kind.__name__}, got {type(value).__name__}")
    if contract["format"] != FORMAT:
        raise ValueError(f"{CONTRACT} field 'format' is {contract['format']}, this code reads format {FORMAT}; "
                         "train the run again with this version")
    for field in ("dimensions", "max_length", "corpus_size"):
        if contract[field] < 1:
            raise ValueError(f"{CONTRACT} field {field!r} must be an integer >= 1, got {contract[field]}")
    if contract["padding_side"] not in ("left", "right"):
        raise ValueError(f"{CONTRACT} field 'padding_side' must be 'left' or 'right', got {contract['padding_side']!r}")
    if set(contract["data_sha256"]) != set(FILES):
        raise ValueError(f"{CONTRACT} field 'data_sha256' must list exactly {', '.join(FILES)}")
    if set(contract["run_files"]) != set(RUN_FILES):
        raise ValueError(f"{CONTRACT} field 'run_files' must list exactly {', '.join(RUN_FILES)}")
    for field in ("files", "run_files", "data_sha256"):
        bad = next((k for k, v in contract[field].items() if not _is_sha(v)), None)
        if bad is not None:
            raise ValueError(f"{CONTRACT} field {field!r}: the entry for {bad!r} is not a SHA-256 hex digest")
    for field in ("corpus_sha256", "contract_sha256"):
        if not _is_sha(contract[field]):
            raise ValueError(f"{CONTRACT} field {field!r} is not a SHA-256 hex digest")


def _check_listing(contract: dict) -> None:
    """``files`` lists the index files and the model folder's files, nothing else."""
    prefix = contract["model_dir"] + "/"
    for name in contract["files"]:
        if name not in INDEX_FILES and not name.startswith(prefix):
            raise ValueError(f"{CONTRACT} field 'files' lists {name!r}, which is neither an index file nor in "
                             f"the model folder {contract['model_dir']!r}")
    for name in INDEX_FILES + (prefix + "modules.json",):
        if name not in contract["files"]:
            raise ValueError(f"{CONTRACT} field 'files' does not list {name}")


def _saved_settings(run: Path, model_dir: Path) -> tuple[str, int | None]:
    """(query prompt, max sequence length or None) as saved in a sentence-transformers folder's config files."""
    where = model_dir.relative_to(run).as_posix()
    config = model_dir / "config_sentence_transformers.json"
    prompts = _read_json(config, f"{where}/{config.name}").get("prompts") if config.is_file() else None
    prompt = (prompts or {}).get("query", "") if isinstance(prompts, dict) else ""
    modules = _read_json(model_dir / "modules.json", f"{where}/modules.json")
    paths = [m.get("path", "") for m in modules if isinstance(m, dict) and str(m.get("type", "")).endswith("Transformer")]
    if not paths or not isinstance(paths[0], str):
        return prompt, None
    folder = _inside(model_dir, paths[0], f"{where}/modules.json path") if paths[0] else model_dir
    for name, key in (("sentence_bert_config.json", "max_seq_length"), ("tokenizer_config.json", "model_max_length")):
        value = _read_json(folder / name, f"{where}/{name}").get(key) if (folder / name).is_file() else None
        if isinstance(value, int) and not isinstance(value, bool):
            return prompt, value
    return prompt, None


def _check_against_model(run: Path, model_dir: Path, contract: dict) -> None:
    """The contract's instruction, templates and max_length agree with the saved model's configuration."""
    where = model_dir.relative_to(run).as_posix()
    prompt, max_length = _saved_settings(run, model_dir)
    want = format_query("", contract["instruction"]) if contract["instruction"] else ""
    if prompt != want:
        raise ValueError(f"{CONTRACT} field 'instruction' is {contract['instruction']!r}, but the saved model "
                         f"{where}/config_sentence_transformers.json has the query prompt {prompt!r}")
    expected = QUERY_TEMPLATE if contract["instruction"] else "{query}"
    for field, want in (("query_template", expected), ("document_template", "{document}")):
        if contract[field] != want:
            raise ValueError(f"{CONTRACT} field {field!r} is {contract[field]!r}, but this code encodes "
                             f"{'queries' if field == 'query_template' else 'documents'} as {want!r}")
    if max_length is not None and max_length != contract["max_length"]:
        raise ValueError(f"{CONTRACT} field 'max_length' is {contract['max_length']}, but the saved model "
                         f"{where} has a maximum sequence length of {max_length}")


def verify_contract(run: str | Path) -> dict:
    """Read the contract and check it; raise ValueError naming the file (and field) of the first problem.

    Checks, in order: the run is sealed (``complete``); every field has its type and range;
    ``model_dir`` stays inside the run; instruction, templates and max_length agree with the
    saved model; the body matches ``contract_sha256``; every listed file exists with its
    SHA-256; no other file is in the run (only evaluate's ``{split}_metrics.json`` and
    ``{split}_rankings.json`` may be added) and no symbolic link.
    """
    run = Path(run)
    if not run.is_dir():
        raise ValueError(f"run folder {str(run)!r} does not exist or is not a folder")
    path = run / CONTRACT
    if not path.is_file():
        raise ValueError(f"run folder {str(run)!r} has no {CONTRACT}: it is not a finished training run")
    contract = _read_json(path, CONTRACT)
    if not isinstance(contract, dict):
        raise ValueError(f"{CONTRACT} must hold a JSON object, got {type(contract).__name__}")
    if contract.get("complete") is not True:
        raise ValueError(f"{CONTRACT} field 'complete' is not true in {str(run)!r}: training stopped before the run "
                         "was finished (metrics.json sealed); train again into a new folder")
    _check_fields(contract)
    model_dir = _inside(run, contract["model_dir"], "'model_dir'")
    _check_listing(contract)
    if not model_dir.is_dir():
        raise ValueError(f"{CONTRACT} field 'model_dir' names {contract['model_dir']!r}, which is not a folder "
                         f"in {str(run)!r}")
    _check_against_model(run, model_dir, contract)
    if contract_digest(contract) != contract["contract_sha256"]:
        raise ValueError(f"{CONTRACT} does not match its own digest (field 'contract_sha256'): the contract was "
                         "edited after training; restore it or train again")
    listed = {**contract["files"], **contract["run_files"]}
    for name, digest in listed.items():
        file = _inside(run, name, f"'files' entry {name!r}")
        if not file.is_file():
            raise ValueError(f"{name} is listed in {CONTRACT} but missing from {str(run)!r}")
        if file_sha256(file) != digest:
            if name in RUN_FILES:
                raise ValueError(f"{name} does not match its SHA-256 in {CONTRACT} (field 'run_files'): it "
                                 "changed after training")
            raise ValueError(f"{name} does not match its SHA-256 in {CONTRACT}: the model or index changed "
                             "after training; rebuild the index instead of mixing them")
    _refuse_unknown_files(run, set(listed), contract["model_dir"])
    return contract


def _refuse_unknown_files(run: Path, listed: set[str], model_dir: str) -> None:
    allowed = listed | {CONTRACT, *EVALUATION_FILES}
    for folder, dirs, files in os.walk(run):
        for name in sorted(dirs) + sorted(files):
            path = Path(folder, name)
            rel = path.relative_to(run).as_posix()
            if path.is_symlink():
                raise ValueError(f"{rel} in {str(run)!r} is a symbolic link: a run folder holds plain files only")
            if name in files and rel not in allowed:
                if rel.startswith(model_dir + "/"):
                    raise ValueError(f"{rel} is in the model folder but not in {CONTRACT}: refusing an unknown file")
                raise ValueError(f"{rel} is in the run folder but not listed in {CONTRACT}: refusing an unknown "
                                 "file (only evaluate adds files to a finished run)")


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
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
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
        _write_json(tmp, obj)
        os.replace(tmp, path)
    return metrics


def _check_batch_size(batch_size: int) -> None:
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")


def _check_device(device: str) -> None:
    import torch

    if not isinstance(device, str) or device.split(":")[0] not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} but torch sees no CUDA GPU here (a CPU build or no driver); use 'cpu'")

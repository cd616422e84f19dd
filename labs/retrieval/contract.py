"""The index contract: what a finished run folder promises, checked before any search or evaluation.

In plain words: document vectors are only comparable with query vectors made by
the *same* model, tokenizer, pooling, length limit and query instruction, and a
run is only usable when training wrote all of it. ``index_contract.json`` records
those settings and the SHA-256 of every file; `verify_contract` refuses (one
ValueError line naming the file and the field) a run that breaks any rule:

1. ``complete`` is true: `seal_run`, the trainer's last step, wrote it;
2. every field is present, of its type and range (``max_length`` >= 1, ...);
3. ``model_dir`` is a plain relative path inside the run, with no symbolic link;
4. every file in ``files`` (model and index), ``run_files`` (metrics.json,
   validation_rankings.json) and ``evaluations`` (what `evaluate` added:
   ``{val,test}_metrics.json`` and ``{val,test}_rankings.json``) exists with its SHA-256;
5. no other file and no symbolic link is in the run;
6. instruction, query template and max_length agree with the saved model's own
   configuration (its query prompt, its maximum sequence length);
7. the body's canonical JSON matches ``contract_sha256`` (any other edit).

``data_sha256`` keeps the hashes of the three data files as training read them, so
`labs.retrieval.index.evaluate` refuses queries edited after training. ``evaluations`` starts
empty; `record_evaluation` adds a split's two files when `labs.retrieval.index.evaluate` has
written them, and the contract (with its new digest) replacing the old one is what makes the
evaluation count: an edited ``val_metrics.json`` no longer matches, and a split is evaluated once. The digest catches
accidents and careless edits; it is not a signature against someone who recomputes it.

Relations: `labs.retrieval.index.write_index` returns the contract's body with the hashes of
what it wrote; the trainer adds the hashes of its own files and calls `seal_run` last, inside
the run folder it is still building; `labs.retrieval.index.load_index` verifies the contract
before loading the model.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path, PurePosixPath

from labs.retrieval import machine
from labs.retrieval.data import FILES
from labs.retrieval.files import file_sha256, write_json
from labs.retrieval.instruction import QUERY_TEMPLATE, query_prompt

__all__ = ["CONTRACT", "FORMAT", "INDEX_FILES", "MORE_INDEX_FILES", "RUN_FILES", "EVALUATION_FILES", "evaluation_files",
           "contract_digest", "seal_run", "record_evaluation", "verify_contract"]

CONTRACT = "index_contract.json"
FORMAT = 3  # 3: evaluation files are listed with their hashes (field 'evaluations')
INDEX_FILES = ("corpus_embeddings.npy", "corpus_ids.json")
#: Index files a run may list besides: the texts BM25 ranks, the fields --where filters on (both
#: written by every run since they were added) and, with --chunk, the windows' vectors and documents.
MORE_INDEX_FILES = ("corpus_texts.json", "corpus_fields.json", "chunk_embeddings.npy", "chunk_docs.json")
RUN_FILES = ("metrics.json", "validation_rankings.json")  # hashed by seal_run, the trainer's last step
EVALUATION_FILES = tuple(f"{split}_{kind}.json" for split in ("val", "test") for kind in ("metrics", "rankings"))


def evaluation_files(split: str) -> tuple[str, str]:
    """The two files `labs.retrieval.index.evaluate` writes for ``split``: (metrics, rankings)."""
    return f"{split}_metrics.json", f"{split}_rankings.json"


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _read_json(path: Path, what: str):
    """Parse a JSON file; ValueError naming the file for a missing, unreadable or malformed one (NaN refused)."""
    if not path.is_file():
        raise ValueError(f"{what} is missing from {str(path.parent)!r}")
    try:
        return json.loads(path.read_text(encoding="utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError as err:
        raise ValueError(f"{what}: byte offset {err.start} is not valid UTF-8") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{what}: malformed JSON ({err.msg} at line {err.lineno}, column {err.colno})") from None
    except OSError as err:
        raise ValueError(f"{what}: cannot read it ({err.strerror})") from None
    except (ValueError, RecursionError) as err:
        raise ValueError(f"{what}: malformed JSON ({err})") from None


def contract_digest(contract: dict) -> str:
    """SHA-256 of the contract's canonical JSON (sorted keys, no spaces), ``contract_sha256`` left out."""
    body = {k: v for k, v in contract.items() if k != "contract_sha256"}
    text = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def seal_run(run: str | Path, contract: dict, data_sha256: dict[str, str], run_files: dict[str, str]) -> dict:
    """Write the finished contract into ``run``: the trainer's last step.

    ``contract`` is the body `labs.retrieval.index.write_index` returned; ``data_sha256`` the
    hashes of the three data files as training read them; ``run_files`` the hashes of
    metrics.json and validation_rankings.json as the trainer wrote them. Adds those,
    ``complete: true`` and the digest of the body (``contract_sha256``); returns the contract.
    """
    if set(data_sha256) != set(FILES) or set(run_files) != set(RUN_FILES):
        raise ValueError(f"seal_run needs the hashes of {', '.join(FILES)} and of {', '.join(RUN_FILES)}")
    if data_sha256["corpus.jsonl"] != contract["corpus_sha256"]:
        raise ValueError("the corpus.jsonl read for training is not the one indexed (field 'corpus_sha256')")
    sealed = {**contract, "run_files": dict(run_files), "data_sha256": dict(data_sha256), "evaluations": {},
              "complete": True}
    sealed["contract_sha256"] = contract_digest(sealed)
    write_json(Path(run) / CONTRACT, sealed)
    return sealed


def record_evaluation(contract: dict, written: dict[str, str]) -> dict:
    """The verified ``contract`` with one split's evaluation files (name -> SHA-256 as written)
    added to ``evaluations`` and its digest renewed; the caller writes it in place of the old one."""
    recorded = {**contract, "evaluations": {**contract["evaluations"], **written}}
    recorded["contract_sha256"] = contract_digest(recorded)
    return recorded


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
           "run_files": dict, "data_sha256": dict, "evaluations": dict, "contract_sha256": str}


def _check_fields(contract: dict) -> None:
    """Every field present, of its type and range; each failure names the field."""
    if contract.get("format") != FORMAT:  # first: an older run lacks newer fields
        raise ValueError(f"{CONTRACT} field 'format' is {contract.get('format')!r}, this code reads format {FORMAT}; "
                         "train the run again with this version")
    for field, kind in _FIELDS.items():
        if field not in contract:
            raise ValueError(f"{CONTRACT} has no field {field!r}")
        value = contract[field]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ValueError(f"{CONTRACT} field {field!r} must be {kind.__name__}, got {type(value).__name__}")
    for field in ("dimensions", "max_length", "corpus_size"):
        if contract[field] < 1:
            raise ValueError(f"{CONTRACT} field {field!r} must be an integer >= 1, got {contract[field]}")
    if contract["padding_side"] not in ("left", "right"):
        raise ValueError(f"{CONTRACT} field 'padding_side' must be 'left' or 'right', got {contract['padding_side']!r}")
    if set(contract["data_sha256"]) != set(FILES):
        raise ValueError(f"{CONTRACT} field 'data_sha256' must list exactly {', '.join(FILES)}")
    if set(contract["run_files"]) != set(RUN_FILES):
        raise ValueError(f"{CONTRACT} field 'run_files' must list exactly {', '.join(RUN_FILES)}")
    unknown = next((k for k in contract["evaluations"] if k not in EVALUATION_FILES), None)
    if unknown is not None:
        raise ValueError(f"{CONTRACT} field 'evaluations' lists {unknown!r}; only {', '.join(EVALUATION_FILES)} "
                         "may be listed")
    for split in ("val", "test"):
        if len(set(evaluation_files(split)) & set(contract["evaluations"])) == 1:
            raise ValueError(f"{CONTRACT} field 'evaluations' lists only one of "
                             f"{' and '.join(evaluation_files(split))}")
    for field in ("files", "run_files", "data_sha256", "evaluations"):
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
        if name not in INDEX_FILES + MORE_INDEX_FILES and not name.startswith(prefix):
            raise ValueError(f"{CONTRACT} field 'files' lists {name!r}, which is neither an index file nor in "
                             f"the model folder {contract['model_dir']!r}")
    if ("chunk_embeddings.npy" in contract["files"]) != ("chunk_docs.json" in contract["files"]):
        raise ValueError(f"{CONTRACT} field 'files' lists only one of chunk_embeddings.npy and chunk_docs.json")
    for name in INDEX_FILES + (prefix + "modules.json",):
        if name not in contract["files"]:
            raise ValueError(f"{CONTRACT} field 'files' does not list {name}")


def _saved_settings(run: Path, model_dir: Path) -> tuple[str, int | None]:
    """(query prompt, max sequence length or None) as saved in a sentence-transformers folder's config files."""
    where = model_dir.relative_to(run).as_posix()
    config = model_dir / "config_sentence_transformers.json"
    saved = _read_json(config, f"{where}/{config.name}") if config.is_file() else {}
    prompts = saved.get("prompts") if isinstance(saved, dict) else None
    prompt = prompts.get("query", "") if isinstance(prompts, dict) else ""
    modules = _read_json(model_dir / "modules.json", f"{where}/modules.json")
    paths = [m.get("path", "") for m in (modules if isinstance(modules, list) else [])
             if isinstance(m, dict) and str(m.get("type", "")).endswith("Transformer")]
    if not paths or not isinstance(paths[0], str):
        return prompt, None
    folder = _inside(model_dir, paths[0], f"{where}/modules.json path") if paths[0] else model_dir
    for name, key in (("sentence_bert_config.json", "max_seq_length"), ("tokenizer_config.json", "model_max_length")):
        config = _read_json(folder / name, f"{where}/{name}") if (folder / name).is_file() else {}
        value = config.get(key) if isinstance(config, dict) else None
        if isinstance(value, int) and not isinstance(value, bool):
            return prompt, value
    return prompt, None


def _check_against_model(run: Path, model_dir: Path, contract: dict) -> None:
    """The contract's instruction, templates and max_length agree with the saved model's configuration."""
    where = model_dir.relative_to(run).as_posix()
    prompt, max_length = _saved_settings(run, model_dir)
    want = query_prompt(contract["instruction"])
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


def verify_contract(run: str | Path, *, replacing: tuple[str, ...] = ()) -> dict:
    """Read the contract and check it; raise ValueError naming the file (and field) of the first problem.

    Checks, in order: the run is sealed (``complete``); every field has its type and range;
    ``model_dir`` stays inside the run; every listed file (evaluate's included) exists with its
    SHA-256; no other file is in the run and no symbolic link; instruction, templates and
    max_length agree with the saved model; the body matches ``contract_sha256``. ``replacing``
    names evaluation files that may be present unlisted because the caller is about to replace
    them (the leftovers of an evaluation that was killed before it was recorded).
    """
    run = machine.folder(run, "run folder")
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
    listed = {**contract["files"], **contract["run_files"], **contract["evaluations"]}
    for name, digest in listed.items():
        file = _inside(run, name, f"'files' entry {name!r}")
        if not file.is_file():
            raise ValueError(f"{name} is listed in {CONTRACT} but missing from {str(run)!r}")
        if file_sha256(file) != digest:
            if name in RUN_FILES:
                raise ValueError(f"{name} does not match its SHA-256 in {CONTRACT} (field 'run_files'): it "
                                 "changed after training")
            if name in EVALUATION_FILES:
                raise ValueError(f"{name} does not match its SHA-256 in {CONTRACT} (field 'evaluations'): it "
                                 "changed after evaluate wrote it; the run's evaluation can no longer be trusted")
            raise ValueError(f"{name} does not match its SHA-256 in {CONTRACT}: the model or index changed "
                             "after training; rebuild the index instead of mixing them")
    _refuse_unknown_files(run, set(listed) | set(replacing), contract["model_dir"])
    _check_against_model(run, model_dir, contract)  # the model's config files are known-good by now
    if contract_digest(contract) != contract["contract_sha256"]:
        raise ValueError(f"{CONTRACT} does not match its own digest (field 'contract_sha256'): the contract was "
                         "edited after training; restore it or train again")
    return contract


def _unlistable(err: OSError):
    raise ValueError(f"cannot list {err.filename!r} in the run folder: {err.strerror}")


def _refuse_unknown_files(run: Path, listed: set[str], model_dir: str) -> None:
    allowed = listed | {CONTRACT}
    for folder, dirs, files in os.walk(run, onerror=_unlistable):
        for name in sorted(dirs) + sorted(files):
            path = Path(folder, name)
            rel = path.relative_to(run).as_posix()
            if path.is_symlink():
                raise ValueError(f"{rel} in {str(run)!r} is a symbolic link: a run folder holds plain files only")
            if name in files and rel not in allowed:
                if rel in EVALUATION_FILES:
                    split = rel.partition("_")[0]
                    raise ValueError(f"{rel} is in the run folder but not listed in {CONTRACT} (field 'evaluations'): "
                                     "an evaluation stopped before it was recorded, or a file put there by hand; "
                                     f"run evaluate --split {split} again to replace it, or remove it")
                if rel.startswith(model_dir + "/"):
                    raise ValueError(f"{rel} is in the model folder but not in {CONTRACT}: refusing an unknown file")
                raise ValueError(f"{rel} is in the run folder but not listed in {CONTRACT}: refusing an unknown "
                                 "file (only evaluate adds files to a finished run)")

"""The course's command line: ``python -m labs COMMAND --help``.

Commands, in the order of a project:

  make-data  write the help-desk fixture (corpus.jsonl, queries.jsonl, train_pairs.jsonl),
             or with --from-docs a data set from installed libraries' docstrings
  baseline   TF-IDF and BM25 on the validation split (test only when asked)
  train      fine-tune an encoder, select on validation, write a run folder with an index contract
  search     query a run's index (hashes checked first)
  evaluate   score a run on one split, once; writes {split}_metrics.json

Every command either completes or leaves things as they were: output is built aside and moved
into place whole, a second writer of the same output is refused, and nothing is overwritten.
Every error is one line naming the file and line or the flag and its allowed range; exit
status 2 for bad input, 1 for a failed run, 128 + the signal's number when stopped by Ctrl-C
(130), SIGTERM (143), SIGHUP (129) or another stop signal; --debug or LABS_DEBUG=1 shows the traceback.

The parser imports no torch (``train``'s flags are `labs.retrieval.config.TrainConfig`'s fields,
read by `add_fields`): --help, --version and a refused flag print at once; a command imports what
it needs when it runs.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import errno
import json
import os
import re
import signal
import sys
import threading
import traceback
import typing
from pathlib import Path

from labs import checks
from labs.retrieval import files, machine
from labs.retrieval.config import flag_of

__all__ = ["build_parser", "add_fields", "fields_of", "main"]

DESCRIPTION = "\n\n".join(__doc__.split("\n\n")[1:4])
BAD_INPUT = (ValueError, FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError,
             UnicodeError)


class Interrupted(BaseException):
    """A stop signal (SIGINT, SIGTERM, SIGHUP, ...) asked the command to stop; unwinds like Ctrl-C."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _stop(signum, frame) -> None:
    """The handler of SIGINT, SIGTERM and SIGHUP while a command runs.

    The first signal raises `Interrupted`, which unwinds the command: every ``finally`` removes
    what it made. Where an exception cannot safely unwind (while Python is importing a module,
    which may be a C++ extension's initialisation) and for a second signal (the first is already
    unwinding, or was swallowed), what this process made is removed here and it exits at once.
    Once the output is complete and in place (`labs.retrieval.files.COMMITTED`), signals are ignored."""
    if files.COMMITTED or _STATE["reported"] or _STATE["finished"] or _STATE["exiting"]:
        return
    if files.held(signum):  # inside a step that must not be cut in half: raised again at its end
        return
    if _STATE["stopping"] or _importing(frame):
        _exit_now(signum)
    _STATE["stopping"] = True
    raise Interrupted(signum)


def _importing(frame) -> bool:
    """Whether ``frame`` runs inside an import (raising there can abort a C++ extension's start)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _exit_now(signum: int) -> None:
    """Remove what this process made, say so in one line, exit 128 + the signal's number."""
    _STATE["exiting"] = True  # a further signal does not interrupt the last clean-up
    files.remove_leftovers()
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    line = f"interrupted by {signal.Signals(signum).name}{_left_as_it_was(_STATE['args'])}\n"
    with contextlib.suppress(OSError):
        if _speaks(128 + signum):
            os.write(2, line.encode("utf-8", "backslashreplace"))
    os._exit(128 + signum)


#: The command now running: its arguments, whether a signal is stopping it / was reported, and
#: whether it has finished (``python -m labs`` keeps the handler while Python shuts down).
_STATE: dict = {"args": None, "stopping": False, "reported": False, "finished": False, "exiting": False}


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (exit 2)."""

    def error(self, message: str):
        self.exit(2, f"{_shown(self.prog)}: error: {_shown(message)} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m labs`` with its five commands (it only parses: the commands check)."""
    import labs
    from labs.retrieval.config import TrainConfig

    fmt = argparse.ArgumentDefaultsHelpFormatter
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show the full traceback of an error (also LABS_DEBUG=1)")
    p = _Parser(prog="python -m labs", description="Fine-tune and evaluate an embedding model for retrieval on "
                "your own query/document data.\n\n" + DESCRIPTION, parents=[common],
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"%(prog)s {labs.__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)

    def command(name: str, help: str, description: str):
        return sub.add_parser(name, help=help, description=description, formatter_class=fmt, parents=[common])

    s = command("make-data", "write the help-desk fixture", "Write the help-desk wiring fixture: 60 articles for "
                "10 fictional products, 3 questions each, products split 6/2/2 into train/val/test. Training and "
                "validation questions share three templates per kind; the test products' questions come from "
                "three other templates, worded apart, so the test is read once on wordings no choice saw. Your "
                "own data uses the same three files.")
    s.add_argument("--out", required=True, help="new (or empty) folder for the three JSONL files")
    s.add_argument("--from-docs", action="store_true",
                   help="instead of the fixture, build a data set from the docstrings of installed libraries "
                   "(summary line -> the paragraphs after it; split by library; see labs.retrieval.docs_corpus)")
    s.add_argument("--splits", metavar="LIB=SPLIT,...",
                   help="with --from-docs: each library's split (train, val or test), e.g. "
                   "scipy=train,torch=train,numpy=val,sklearn=test (the default)")
    s.add_argument("--max-per-library", type=int, metavar="N",
                   help="with --from-docs: keep the first N pairs of each library (>= 2; default all)")

    s = command("baseline", "TF-IDF and BM25 baselines", "Rank the whole corpus with TF-IDF (unigrams + bigrams) "
                "and BM25 and print Recall, MRR and nDCG at 1, 5 and 10.")
    s.add_argument("--data", required=True, help="folder with corpus.jsonl, queries.jsonl, train_pairs.jsonl")
    s.add_argument("--split", default="val", choices=["val", "test"],
                   help="queries to score; keep 'test' for the one final comparison")
    s.add_argument("--out", help="also write the metrics as JSON to this new file (missing folders are made)")
    s.add_argument("--model", help="also rank with this encoder untouched ('minilm' or a saved model folder) and "
                   "with BM25 and it fused (RRF, k=60), with paired intervals%(default).0s")

    s = command("train", "fine-tune and index", "Fine-tune with MultipleNegativesRankingLoss through "
                "sentence-transformers' trainer, keep the checkpoint with the best validation MRR@5 (the "
                "untouched model, epoch 0, included), index the corpus and write a run folder, all at once "
                "or not at all. Test queries are not read. Runs unchanged under torchrun (DDP).")
    add_fields(s, TrainConfig)
    s.add_argument("--processes", type=int, default=1, metavar="N", help="train in N processes on this machine "
                   "(DDP, gloo on CPU), started here by torch's launcher as torchrun --nproc_per_node N would, with "
                   "one-line errors and nothing left in the temporary folder")

    s = command("search", "query a run's index", "Check the run's SHA-256 contract, encode the query with the "
                "saved instruction, print the top documents and their cosine (or BM25, or both fused). With "
                "--where, only documents whose fields pass are ranked; with --queries FILE --out FILE, every "
                "query of a JSONL file is ranked and the results written as JSONL, whole or not at all.")
    s.add_argument("run", help="run folder written by train")
    s.add_argument("query", nargs="?", help="the question, without any instruction (it is added once, here)"
                   "%(default).0s")
    s.add_argument("--k", type=int, default=5, help="how many documents to print")
    s.add_argument("--device", default="cpu", help="where to encode the query: cpu, cuda or cuda:N")
    s.add_argument("--where", action="append", default=[], metavar="KEY=VALUE",
                   help="rank only documents whose field KEY is VALUE (a list field: contains it; a number field "
                   "also takes <, <=, >, >=); repeat for AND%(default).0s")
    s.add_argument("--queries", metavar="FILE.jsonl", help="instead of QUERY: one JSON object per line, with 'id', "
                   "'text' and optionally 'where' (a list of KEY=VALUE)%(default).0s")
    s.add_argument("--out", metavar="FILE.jsonl", help="with --queries: the new file for the results (one line per "
                   "query: id, the top k doc ids and scores, the filter applied)%(default).0s")
    s.add_argument("--batch-size", type=int, default=32, help="with --queries: queries per encoding batch")
    _ranking_flags(s)

    s = command("evaluate", "score a run on one split, once", "Check the contract and the corpus hash, score one "
                "split and write {split}_metrics.json and {split}_rankings.json into the run (never overwritten).")
    s.add_argument("run", help="run folder written by train")
    s.add_argument("--data", required=True, help="the data folder the run was trained on")
    s.add_argument("--split", default="val", choices=["val", "test"], help="'test' once, at the very end")
    s.add_argument("--device", default="cpu", help="where to encode queries: cpu, cuda or cuda:N")
    s.add_argument("--batch-size", type=int, default=32, help="queries per encoding batch")
    _ranking_flags(s)
    return p


#: The choices of the ranking flags (`labs.retrieval.hybrid` and `labs.retrieval.index` hold the same
#: tuples; a test keeps them equal, so that the parser need not import numpy).
RANKERS, FUSIONS, WINDOWS = ("dense", "bm25", "hybrid"), ("rrf", "weighted"), ("auto", "whole", "max", "mean")


def _ranking_flags(s: argparse.ArgumentParser) -> None:
    """--ranker, --fusion, --rrf-k, --weight and --windows (search and evaluate)."""
    s.add_argument("--ranker", default="dense", choices=RANKERS, help="dense: the model's cosine; bm25: keywords; "
                   "hybrid: both fused (evaluate scores all three and saves this one's rankings)")
    s.add_argument("--fusion", choices=FUSIONS, help="how hybrid fuses: rrf, reciprocal rank fusion (default), or "
                   "weighted, a weighted sum of scores min-max normalised per query%(default).0s")
    s.add_argument("--rrf-k", type=int, help="with --fusion rrf: k in 1 / (k + rank) (default: 60)%(default).0s")
    s.add_argument("--weight", type=float, help="with --fusion weighted: the dense score's share, 0 to 1 "
                   "(default: 0.5)%(default).0s")
    s.add_argument("--windows", default="auto", choices=WINDOWS, help="for a run indexed with --chunk: score a "
                   "document by its best window (max), their mean, or its one whole vector (whole); auto: max if "
                   "the run has windows, else whole")


def _ranking(args, hybrid_only: bool):
    """The `labs.retrieval.index.Ranking` of the flags; refuses fusion flags that would change nothing."""
    if args.fusion == "weighted" and args.rrf_k is not None:
        raise ValueError("--rrf-k applies to --fusion rrf, not weighted")
    if args.weight is not None and args.fusion != "weighted":
        raise ValueError("--weight applies to --fusion weighted; add --fusion weighted")
    if hybrid_only and args.ranker != "hybrid" and (args.fusion, args.rrf_k) != (None, None):
        raise ValueError(f"--fusion and --rrf-k apply to --ranker hybrid, not {args.ranker}")
    from labs.retrieval.index import Ranking

    return Ranking(args.ranker, args.fusion or "rrf", 60 if args.rrf_k is None else args.rrf_k,
                   0.5 if args.weight is None else args.weight, args.windows)


def add_fields(parser: argparse.ArgumentParser, config) -> None:
    """One flag per field of the dataclass ``config``, as Hugging Face's ``HfArgumentParser`` reads
    one: the flag from the name (``batch_size`` -> ``--batch-size``), the type and default from the
    field, help and choices from its metadata; a bool is a switch, a field without a default is
    required, ``"none": WORD`` stands for None, ``"flag": False`` has no flag."""
    hints = typing.get_type_hints(config)
    for f in dataclasses.fields(config):
        meta = f.metadata
        if not meta.get("flag", True):
            continue
        kind = next((t for t in typing.get_args(hints[f.name]) if t is not type(None)), hints[f.name])
        kwargs = {"help": meta["help"]}
        if f.default is dataclasses.MISSING:
            kwargs["required"] = True
        elif kind is bool:
            kwargs["action"] = "store_true"
        else:
            kwargs.update(type=kind, default=meta.get("none", f.default))
        if "choices" in meta:
            kwargs["choices"] = ([meta["none"]] if "none" in meta else []) + list(meta["choices"])
        parser.add_argument(flag_of(f.name), **kwargs)


def fields_of(args: argparse.Namespace, config):
    """``config`` (a dataclass) made from the parsed flags that `add_fields` added."""
    values = {}
    for f in dataclasses.fields(config):
        if f.metadata.get("flag", True):
            value = getattr(args, f.name)
            values[f.name] = None if "none" in f.metadata and value == f.metadata["none"] else value
    return config(**values)


def _table(rows: dict[str, dict[str, float]]) -> str:
    keys = list(next(iter(rows.values())))
    lines = ["system  " + "  ".join(f"{k:>9}" for k in keys)]
    lines += [f"{name:<7} " + "  ".join(f"{m[k]:9.3f}" for k in keys) for name, m in rows.items()]
    return "\n".join(lines)


def _parse_splits(text: str | None) -> dict[str, str] | None:
    """``"scipy=train,numpy=val"`` -> {"scipy": "train", "numpy": "val"}; None stays None."""
    if text is None:
        return None
    splits = {}
    for item in text.split(","):
        library, sep, split = (part.strip() for part in item.partition("="))
        if not sep or not library or not split:
            raise ValueError(f"--splits takes LIB=SPLIT pairs separated by commas, got {item.strip()!r}")
        if library in splits:
            raise ValueError(f"--splits names {library!r} twice")
        if split not in ("train", "val", "test"):
            raise ValueError(f"--splits gives {library!r} the split {split!r}; a split is train, val or test")
        splits[library] = split
    return splits


def cmd_make_data(args) -> int:
    if not args.from_docs and (args.splits is not None or args.max_per_library is not None):
        raise ValueError("--splits and --max-per-library only apply with --from-docs")
    if args.from_docs:
        from labs.retrieval.docs_corpus import build_docs_dataset

        meta = build_docs_dataset(args.out, splits=_parse_splits(args.splits), max_per_library=args.max_per_library,
                                  what="--out")
        print(f"wrote corpus.jsonl, queries.jsonl, train_pairs.jsonl, metadata.json to {_shown(args.out)}")
        print("documents: " + json.dumps(meta["counts"]))
        print("versions:  " + json.dumps(meta["versions"]))
        _print_truncation(args.out)
        return 0
    from labs.retrieval.data import write_dataset
    from labs.retrieval.helpdesk import make_helpdesk

    folder = write_dataset(make_helpdesk(), args.out, "--out")
    print(f"wrote corpus.jsonl, queries.jsonl, train_pairs.jsonl to {_shown(folder)}")
    _print_truncation(folder)
    return 0


def _print_truncation(folder) -> None:
    """What train's defaults (the packaged MiniLM, --max-length 128) would cut of the data just written."""
    from transformers import AutoTokenizer

    from labs.retrieval.chunking import truncation, truncation_line
    from labs.retrieval.config import TrainConfig
    from labs.retrieval.data import load_dataset
    from labs.retrieval.models import minilm_path

    data = load_dataset(folder)
    limit = TrainConfig.__dataclass_fields__["max_length"].default
    tokenizer = AutoTokenizer.from_pretrained(minilm_path())
    print(f"length limit of train's defaults (minilm, --max-length {limit}):")
    print("  " + truncation_line("documents", truncation(tokenizer, [d["text"] for d in data.corpus], limit)))
    print("  " + truncation_line("queries", truncation(tokenizer, [q["text"] for q in data.queries], limit)))


def cmd_baseline(args) -> int:
    from labs.retrieval.data import load_dataset
    from labs.retrieval.metrics import baseline_rankings, retrieval_metrics

    out = machine.new_path(args.out, "--out", folder=False) if args.out else None
    # The output's lock first, as every writer takes it: a second writer of --out is refused at once.
    with files.output_lock(out, "--out") if out is not None else contextlib.nullcontext():
        if out is not None:
            machine.new_path(out, "--out", folder=False)  # again, now that no other writer can race us
        data = load_dataset(args.data)
        queries = data.split_queries(args.split)
        rows = {m: retrieval_metrics(baseline_rankings(m, data.corpus, queries), data.qrels(args.split))
                for m in ("tfidf", "bm25")}
        print(f"{args.split}: {len(queries)} queries against {len(data.corpus)} documents")
        if args.model is not None:
            rows, differences = _with_model(args.model, data, args.split, rows)
            print(_systems_table(rows))
            print(_differences(differences))
        else:
            print(_table(rows))
        if out is not None:
            files.remove_stale(Path(os.path.abspath(out)).parent, f".{out.name}.tmp-")  # left by a killed baseline
            with files.signals_held():  # written and recorded as complete together
                files.write_json(out, {"split": args.split, **rows})
                files.COMMITTED.append(out)
    return 0


def _with_model(model_name: str, data, split: str, rows: dict) -> tuple[dict, dict]:
    """baseline --model: the lexical rows, then the untouched encoder (dense) and BM25 + it (hybrid,
    RRF k=60), on the same queries; with the paired intervals of their MRR@10."""
    from labs.retrieval.config import TrainConfig
    from labs.retrieval.hybrid import rrf
    from labs.retrieval.index import KS, encode_queries, encode_texts
    from labs.retrieval.instruction import instruction_of
    from labs.retrieval.intervals import paired_interval, per_query
    from labs.retrieval.metrics import (bm25_scores, rank_documents,
                                        retrieval_metrics)
    from labs.retrieval.models import load_encoder

    if model_name not in ("minilm",) and not Path(model_name).is_dir():
        raise ValueError(f"--model must be 'minilm' or an existing model folder, got {model_name!r}")
    model, _, _ = load_encoder(model_name, "cpu", TrainConfig.__dataclass_fields__["max_length"].default)
    queries = data.split_queries(split)
    qids, texts = [q["query_id"] for q in queries], [q["text"] for q in queries]
    doc_ids, docs = [d["doc_id"] for d in data.corpus], [d["text"] for d in data.corpus]
    qrels = data.qrels(split)
    dense = encode_queries(model, texts, instruction_of(model)) @ encode_texts(model, docs).T
    lexical = bm25_scores(docs, texts)
    rankings = {"bm25": rank_documents(lexical, doc_ids, qids, 10), "dense": rank_documents(dense, doc_ids, qids, 10),
                "hybrid": rank_documents(rrf(dense, lexical, doc_ids), doc_ids, qids, 10)}
    rows = {**rows, **{name: retrieval_metrics(r, qrels, KS) for name, r in rankings.items() if name != "bm25"}}
    values = {name: per_query(r, qrels, "mrr", 10) for name, r in rankings.items()}
    differences = {f"{a} - {b}": dict(zip(("mrr@10", "low", "high"), paired_interval(values[a], values[b])))
                   for a, b in (("hybrid", "dense"), ("hybrid", "bm25"), ("dense", "bm25"))}
    return rows, differences


def _systems_table(rows: dict[str, dict[str, float]]) -> str:
    """The metrics table with a name column wide enough for ``hybrid/max``."""
    keys = list(next(iter(rows.values())))
    width = max(7, *(len(name) for name in rows))
    lines = [f"{'system':<{width}} " + "  ".join(f"{k:>9}" for k in keys)]
    lines += [f"{name:<{width}} " + "  ".join(f"{m[k]:9.3f}" for k in keys) for name, m in rows.items()]
    return "\n".join(lines)


def _differences(differences: dict[str, dict]) -> str:
    """Paired differences of MRR@10, one line each, with their 95% bootstrap interval."""
    lines = ["paired differences in MRR@10 (95% bootstrap interval over queries):"]
    lines += [f"  {name:<22} {d['mrr@10']:+.3f}  ({d['low']:+.3f} to {d['high']:+.3f})"
              for name, d in differences.items()]
    return "\n".join(lines)


def cmd_train(args) -> int:
    from labs.retrieval.config import TrainConfig

    config = fields_of(args, TrainConfig)  # every flag checked before torch is imported
    if validate.integer("--processes", args.processes, 1) > 1:
        if os.environ.get("TORCHELASTIC_RUN_ID"):
            raise ValueError("--processes starts its own processes; under torchrun leave it out")
        return _launch(args, TrainConfig)
    with files.output_lock(config.out, "--out", share=True), _compile_caches_inside():  # a second writer is refused at once
        from labs.retrieval.training import train

        report = train(config)
    if report is None:  # under torchrun only process 0 writes the run folder and prints
        return 0
    for row in report["history"]:
        loss = "   -  " if row["train_loss"] is None else f"{row['train_loss']:.3f}"
        print(f"epoch {row['epoch']} (step {row['steps']}): loss {loss}  val MRR@5 {row['mrr@5']:.3f}  "
              f"Recall@5 {row['recall@5']:.3f}")
    print(f"{report['processes']} process(es), batches of up to {report['global_batch']} pairs, {report['steps']} "
          f"steps, {'no autocast' if report['precision'] == 'fp32' else report['precision'] + ' autocast'}, "
          "float32 weights")
    if report.get("truncation"):
        from labs.retrieval.chunking import truncation_line

        print(truncation_line("documents", report["truncation"]))
    print(f"selected epoch {report['selected_epoch']}; run folder {_shown(args.out)}")
    return 0


def _launch(args, config) -> int:
    """``train --processes N``: torch's launcher (what ``torchrun --standalone --nproc_per_node N -m
    labs train ...`` runs), started from here so that the launch ends as one command does: a refusal
    is the one line of the first process (not once per process and then the launcher's traceback),
    the exit status is the processes' (2, 1, 128 + a signal's number), and the launcher's log folder
    (``torchelastic_*``) lives in this command's scratch folder, removed at the end."""
    import logging

    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import parse_args, run

    argv = [*(["--debug"] if _debug(args) else [])]
    for f in dataclasses.fields(config):
        value = getattr(args, f.name, None)
        if f.metadata.get("flag", True) and value not in (None, False):
            argv += [flag(f.name)] if value is True else [flag(f.name), str(value)]
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # torchrun's default for its processes; set, it prints no banner
    logging.getLogger("torch.distributed").setLevel(logging.CRITICAL)  # the processes' own lines say what failed
    with files.temporary_folder("labs-launch-") as scratch:
        launch = parse_args(["--standalone", "--nproc-per-node", str(args.processes), "--log-dir", str(scratch),
                             "--module", "labs", "train", *argv])
        os.environ[_LAUNCHED] = "1"  # its processes leave the line of a stop signal to this one
        try:
            run(launch)
        except ChildFailedError as err:
            code = err.get_first_failure()[1].exitcode
            return code if code > 0 else 128 - code  # -15: ended by SIGTERM
        except SignalException as err:
            raise Interrupted(err.sigval) from None
        finally:
            os.environ.pop(_LAUNCHED, None)
    return 0


#: Set for the processes that ``train --processes N`` starts.
_LAUNCHED = "LABS_LAUNCHED"


def _speaks(code: int) -> bool:
    """Whether this process says its one line of ending with ``code``. Alone, always. In a launch of
    several processes (torchrun): a refusal (2) or a stop signal (128 + n) only from the machine's
    first process (all of them read the same flags and files: one line, not one per process), a
    stop signal not at all when ``train --processes`` launched them (the launching command says it);
    a failed run (1) from every process (each may fail its own way)."""
    if not os.environ.get("TORCHELASTIC_RUN_ID"):
        return True
    if code >= 128 and os.environ.get(_LAUNCHED):
        return False
    return code == 1 or os.environ.get("LOCAL_RANK", "0") in ("", "0")


#: Where torch keeps its compile caches unless told: folders in the system's temporary folder,
#: left there after the process ends (``torchinductor_USER``).
_COMPILE_CACHES = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")


@contextlib.contextmanager
def _compile_caches_inside():
    """torch's compile caches in a folder of this command's own, removed when it ends (a cache folder
    the user chose, by setting its variable, is kept as it is). The folder is only named here: torch
    makes it if it compiles, so a run killed before that leaves nothing behind."""
    import shutil
    import tempfile
    import uuid

    chosen = [name for name in _COMPILE_CACHES if name not in os.environ]
    if not chosen:
        yield
        return
    scratch = Path(tempfile.gettempdir()) / f"labs-caches-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    for name in chosen:
        os.environ[name] = str(scratch / name.lower())
    try:
        yield
    finally:
        for name in chosen:
            os.environ.pop(name, None)
        shutil.rmtree(scratch, ignore_errors=True)


def cmd_search(args) -> int:
    if args.queries is not None:  # the flags' combination first: refused before NumPy is imported
        if args.query is not None:
            raise ValueError("give either QUERY or --queries FILE, not both")
        if args.out is None:
            raise ValueError("--queries needs --out FILE.jsonl for the results")
    elif args.out is not None:
        raise ValueError("--out applies to --queries FILE; one QUERY prints its results")
    elif args.query is None:
        raise ValueError("give a QUERY, or --queries FILE.jsonl --out FILE.jsonl")
    ranking = _ranking(args, hybrid_only=True)
    checks.integer(args.k, "--k", 1)  # named as the flag, before the run is read
    machine.device(args.device, "--device")
    if args.queries is not None:
        from labs.retrieval.query_file import search_file

        done = search_file(args.run, args.queries, args.out, k=args.k, device=args.device, where=args.where,
                           ranking=ranking, batch_size=args.batch_size)
        _done()  # written whole: a signal now changes nothing
        print(f"wrote {done['queries']} result lines to {_shown(args.out)}")
        return 0
    from labs.retrieval.index import search

    hits = search(args.run, args.query, args.k, args.device, where=args.where, ranking=ranking)
    _done()  # the result exists: a signal while it is printed changes nothing
    if not hits:
        print(f"no document passes --where {' '.join(map(_shown, args.where))}")
    for rank, (doc_id, score) in enumerate(hits, start=1):
        print(f"{rank:>2}. {score:.3f}  {_shown(doc_id)}")
    return 0


def _done() -> None:
    """The command's work is done (its result exists, its files are written): Ctrl-C, SIGTERM and the
    other stop signals are ignored from here on, so the exit status says the work was done."""
    for signum in files.stop_signals():
        signal.signal(signum, signal.SIG_IGN)


def cmd_evaluate(args) -> int:
    from labs.retrieval.chunking import truncation_line
    from labs.retrieval.index import evaluate_all

    checks.integer(args.batch_size, "--batch-size", 1)  # named as the flag, before the run is read
    machine.device(args.device, "--device")
    report = evaluate_all(args.run, args.data, args.split, args.device, args.batch_size,
                          _ranking(args, hybrid_only=False))
    _done()  # scored and recorded: a signal while the result is printed changes nothing
    print(_systems_table(report["systems"]))
    print(_differences(report["differences"]))
    print(f"saved: the rankings of {report['ranking']} ({args.split}_rankings.json)")
    for name in ("documents", "queries"):
        print(truncation_line(name, report["truncation"][name]))
    return 0


COMMANDS = {"make-data": cmd_make_data, "baseline": cmd_baseline, "train": cmd_train, "search": cmd_search,
            "evaluate": cmd_evaluate}


def _shown(text) -> str:
    """Text from the user's data or paths as one printable line: control characters escaped."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape", "backslashreplace").decode("ascii")
                   for c in text)


def _name(filename) -> str:
    return os.fsdecode(filename) if isinstance(filename, (str, bytes)) else str(filename)


def _one_line(err: BaseException) -> str:
    if isinstance(err, OSError) and err.strerror and err.filename is not None:
        text = f"{_name(err.filename)}: {err.strerror}"
        if err.filename2 is not None:
            text += f" (and {_name(err.filename2)})"
    else:
        text = str(err)
        if isinstance(err, OSError) and err.filename and str(err.filename) not in text:
            text = f"{err.filename}: {text}"
        return _shown(re.sub(r"\s*[\r\n]\s*", " ", text).strip() or type(err).__name__)  # one line
    return _shown(text)


def main(argv: list[str] | None = None) -> int:
    """Run one command. Bad input or usage: one line on stderr, exit 2; a failed run: exit 1;
    stopped by a signal: one line, exit 128 + its number. With --debug (or LABS_DEBUG=1) the
    traceback follows the line. Whatever way it ends, nothing this command made is left half."""
    files.COMMITTED.clear()
    _STATE.update(args=None, stopping=False, reported=False, finished=False, exiting=False)
    before = files.leftovers()  # a caller's own unfinished output (a test, a notebook) is not ours
    main_thread = threading.current_thread() is threading.main_thread()  # only it may set handlers
    previous: dict = {}
    args = None
    failure: BaseException | None = None
    try:
        for sig in _SIGNALS if main_thread else ():  # inside the try: a signal from now on is reported
            previous[sig] = signal.signal(sig, _stop)
        args = build_parser().parse_args(argv)
        _STATE["args"] = args
        if getattr(args, "model", None) != _hub_model():  # only the hub id may download; all else stays offline
            from labs.retrieval.models import offline

            offline()
        code = COMMANDS[args.command](args)
        if sys.stdout is not None:  # None: closed by the caller (``>&-``), nothing to flush
            sys.stdout.flush()  # here, so that a reader gone away (``| head -1``) is seen below, not at exit
        return code
    except (Interrupted, KeyboardInterrupt) as err:
        failure = err
        _STATE["stopping"] = True  # a second signal from here on exits at once
        name = str(err) if isinstance(err, Interrupted) else "SIGINT"
        code = 128 + (err.signum if isinstance(err, Interrupted) else signal.SIGINT)
        files.remove_leftovers(keep=before)
        _STATE["reported"] = True
        if _speaks(code):
            _say(f"interrupted by {name}{_left_as_it_was(args)}")
    except BrokenPipeError as err:  # the reader of our output went away (``| head -1``): stop quietly
        failure, code = err, 128 + getattr(signal, "SIGPIPE", 13)
        with contextlib.suppress(OSError, AttributeError, ValueError):  # later flushes go nowhere, quietly
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except BAD_INPUT as err:
        failure, code = err, 2
        if _speaks(code):
            _say(f"error: {_one_line(err)}")
    except OSError as err:
        failure = err
        if err.errno in _BAD_PATH:  # a path that cannot be used: bad input
            code = 2
            if _speaks(code):
                _say(f"error: {_one_line(err)}")
        else:  # a failed read or write (a full disk, a file size limit): named, nothing left half
            code = 1
            _say(f"error: {_one_line(err)}; nothing was left half-written, run it again when this is fixed")
    except Exception as err:  # noqa: BLE001 - a failure of the run, reported in one line
        failure, code = err, 1
        command = getattr(args, "command", "")
        _say(f"error: the {command} run failed: {type(err).__name__}: {_one_line(err)}"
             f"{'' if _debug(args) else ' (--debug shows the traceback)'}")
    finally:
        files.remove_leftovers(keep=before)  # anything an unwinding step could not remove
        _STATE["finished"] = True
        if argv is not None:  # called from Python (a test, a notebook): its own handlers come back
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        # As the program (argv from the command line), the handler stays while Python shuts down: a
        # signal then finds the command finished and changes nothing, not even the exit status.
    if _debug(args):
        traceback.print_exception(failure)
    return code


#: errno values of a path that cannot be used as given (too long, a loop of links, ...): exit 2.
_BAD_PATH = {errno.ENAMETOOLONG, errno.ELOOP, errno.ENOTDIR, errno.EISDIR, errno.ENOENT, errno.EACCES,
             errno.EPERM, errno.EROFS, errno.EEXIST}


def _say(line: str) -> None:
    """One line on stderr (a closed stderr is not a second error)."""
    with contextlib.suppress(OSError, ValueError):
        print(line, file=sys.stderr, flush=True)


_SIGNALS = tuple(files.stop_signals())


def _hub_model() -> str:
    from labs.retrieval.qwen3 import QWEN3_ID

    return QWEN3_ID


def _debug(args) -> bool:
    return bool(getattr(args, "debug", False)) or os.environ.get("LABS_DEBUG", "") not in ("", "0")


def _left_as_it_was(args) -> str:
    out = getattr(args, "out", None)
    return f"; nothing was written to {_shown(out)}" if out and args.command in ("make-data", "train", "baseline") \
        else "; nothing was changed"

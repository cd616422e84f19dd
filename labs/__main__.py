"""The course's command line: ``python -m labs COMMAND --help``.

Commands, in the order of a project:

  make-data  write the help-desk fixture (corpus.jsonl, queries.jsonl, train_pairs.jsonl)
  baseline   TF-IDF and BM25 on the validation split (test only when asked)
  train      fine-tune an encoder, select on validation, write a run folder with an index contract
  search     query a run's index (hashes checked first)
  evaluate   score a run on one split, once; writes {split}_metrics.json

Every command refuses to overwrite files. Errors in the data name file and line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from labs.qwen3 import QWEN3_ID

DESCRIPTION = "\n\n".join(__doc__.split("\n\n")[1:4])


def _parser() -> argparse.ArgumentParser:
    fmt = argparse.ArgumentDefaultsHelpFormatter
    p = argparse.ArgumentParser(prog="python -m labs", description="Fine-tune and evaluate an embedding model "
                                "for retrieval on your own query/document data.\n\n" + DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("make-data", help="write the help-desk fixture", formatter_class=fmt,
                       description="Write the help-desk wiring fixture: 60 articles for 10 fictional products, "
                       "3 questions each, products split 6/2/2 into train/val/test. Your own data uses the same "
                       "three files.")
    s.add_argument("--out", required=True, help="new (or empty) folder for the three JSONL files")

    s = sub.add_parser("baseline", help="TF-IDF and BM25 baselines", formatter_class=fmt,
                       description="Rank the whole corpus with TF-IDF (unigrams + bigrams) and BM25 and print "
                       "Recall, MRR and nDCG at 1, 5 and 10.")
    s.add_argument("--data", required=True, help="folder with corpus.jsonl, queries.jsonl, train_pairs.jsonl")
    s.add_argument("--split", default="val", choices=["val", "test"],
                   help="queries to score; keep 'test' for the one final comparison")
    s.add_argument("--out", help="also write the metrics as JSON to this new file")

    s = sub.add_parser("train", help="fine-tune and index", formatter_class=fmt,
                       description="Fine-tune with MultipleNegativesRankingLoss, keep the checkpoint with the "
                       "best validation MRR@5 (the untouched model, epoch 0, included), index the corpus and "
                       "write a run folder. Test queries are not read.")
    s.add_argument("--data", required=True, help="data folder (see make-data)")
    s.add_argument("--out", required=True, help="new run folder; refused if it already has files")
    s.add_argument("--model", default="minilm",
                   help=f"'minilm' (packaged all-MiniLM-L6-v2), '{QWEN3_ID}' (needs the hub), or a local "
                   "folder (a saved sentence-transformers model or a raw Qwen3 checkpoint)")
    s.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="where to train and encode")
    s.add_argument("--epochs", type=int, default=3, help="passes over the distinct positives; 0 only indexes "
                   "the untouched model")
    s.add_argument("--batch-size", type=int, default=16, help="pairs per step (>= 2); each query's negatives "
                   "are the other documents of its batch")
    s.add_argument("--lr", type=float, default=2e-5, help="AdamW learning rate (no scheduler)")
    s.add_argument("--scale", type=float, default=20.0, help="similarity scale = 1 / temperature")
    s.add_argument("--max-length", type=int, default=128, help="tokens per text, instruction included")
    s.add_argument("--seed", type=int, default=0, help="seed for sampling batches and torch")
    s.add_argument("--hard-negatives", action="store_true",
                   help="add one TF-IDF-mined hard negative per pair (training queries and documents only, "
                   "verified not relevant)")
    s.add_argument("--instruction", default=None,
                   help="task text for 'Instruct: {task}\\nQuery:{query}'; default: the model's own "
                   "(Qwen3: a help-desk task; MiniLM: none). Pass '' for none")
    s.add_argument("--max-steps", type=int, default=None, help="stop after this many updates (smoke runs)")
    s.add_argument("--eval-batch-size", type=int, default=32, help="texts per encoding batch")

    s = sub.add_parser("search", help="query a run's index", formatter_class=fmt,
                       description="Check the run's SHA-256 contract, encode the query with the saved "
                       "instruction, print the top documents and their cosine.")
    s.add_argument("run", help="run folder written by train")
    s.add_argument("query", help="the question, without any instruction (it is added once, here)")
    s.add_argument("--k", type=int, default=5, help="how many documents to print")
    s.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="where to encode the query")

    s = sub.add_parser("evaluate", help="score a run on one split, once", formatter_class=fmt,
                       description="Check the contract and the corpus hash, score one split and write "
                       "{split}_metrics.json and {split}_rankings.json into the run (never overwritten).")
    s.add_argument("run", help="run folder written by train")
    s.add_argument("--data", required=True, help="the data folder the run was trained on")
    s.add_argument("--split", default="val", choices=["val", "test"], help="'test' once, at the very end")
    s.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="where to encode queries")
    s.add_argument("--batch-size", type=int, default=32, help="queries per encoding batch")
    return p


def _table(rows: dict[str, dict[str, float]]) -> str:
    keys = list(next(iter(rows.values())))
    lines = ["system  " + "  ".join(f"{k:>9}" for k in keys)]
    lines += [f"{name:<7} " + "  ".join(f"{m[k]:9.3f}" for k in keys) for name, m in rows.items()]
    return "\n".join(lines)


def cmd_make_data(args) -> int:
    from labs.helpdesk import make_helpdesk, write_dataset

    folder = write_dataset(make_helpdesk(), args.out)
    print(f"wrote corpus.jsonl, queries.jsonl, train_pairs.jsonl to {folder}")
    return 0


def cmd_baseline(args) -> int:
    from labs.helpdesk import load_dataset
    from labs.metrics import baseline_rankings, retrieval_metrics

    if args.out and Path(args.out).exists():
        raise ValueError(f"{args.out!r} exists; nothing was overwritten")
    data = load_dataset(args.data)
    queries = data.split_queries(args.split)
    rows = {m: retrieval_metrics(baseline_rankings(m, data.corpus, queries), data.qrels(args.split))
            for m in ("tfidf", "bm25")}
    print(f"{args.split}: {len(queries)} queries against {len(data.corpus)} documents")
    print(_table(rows))
    if args.out:
        Path(args.out).write_text(json.dumps({"split": args.split, **rows}, indent=1) + "\n", encoding="utf-8")
    return 0


def cmd_train(args) -> int:
    from labs.finetune import TrainConfig, train

    config = TrainConfig(data=args.data, out=args.out, model=args.model, device=args.device, epochs=args.epochs,
                         batch_size=args.batch_size, lr=args.lr, scale=args.scale, max_length=args.max_length,
                         seed=args.seed, hard_negatives=args.hard_negatives, instruction=args.instruction,
                         max_steps=args.max_steps, eval_batch_size=args.eval_batch_size)
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:  # started by torchrun or accelerate launch: PyTorch DDP
        from labs.distributed import train_distributed

        report = train_distributed(config)
        if report is None:  # only rank 0 writes the run folder and prints
            return 0
    else:
        report = train(config)
    for row in report["history"]:
        loss = "   -  " if row["train_loss"] is None else f"{row['train_loss']:.3f}"
        print(f"epoch {row['epoch']}: loss {loss}  val MRR@5 {row['mrr@5']:.3f}  Recall@5 {row['recall@5']:.3f}")
    print(f"selected epoch {report['selected_epoch']}; run folder {args.out}")
    return 0


def cmd_search(args) -> int:
    from labs.index import search

    for rank, (doc_id, score) in enumerate(search(args.run, args.query, args.k, args.device), start=1):
        print(f"{rank:>2}. {score:.3f}  {doc_id}")
    return 0


def cmd_evaluate(args) -> int:
    from labs.index import evaluate

    metrics = evaluate(args.run, args.data, args.split, args.device, args.batch_size)
    print(_table({args.split: metrics}))
    return 0


COMMANDS = {"make-data": cmd_make_data, "baseline": cmd_baseline, "train": cmd_train, "search": cmd_search,
            "evaluate": cmd_evaluate}


def main(argv: list[str] | None = None) -> int:
    """Run one command; bad input prints ``error: ...`` to stderr and returns 2."""
    args = _parser().parse_args(argv)
    if getattr(args, "model", None) != QWEN3_ID:  # only the hub id may download; everything else stays offline
        for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
            os.environ.setdefault(name, "1")
    try:
        return COMMANDS[args.command](args)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

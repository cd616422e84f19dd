"""The real-data experiment's results, as the lessons quote them.

``benchmarks/docs_experiment.py`` writes ``labs/classroom/experiment/docs_experiment.json``
into the package, which ships it, so a notebook finds it wherever the course is installed
(`results_path`). `load_results` reads and checks it; the helpers below
return exactly the numbers a lesson prints or glues, so no lesson digs in the file's layout.

The experiment in one paragraph: two starting points (``minilm``, the packaged
all-MiniLM-L6-v2, strong; ``static``, token vectors averaged, a start far from done that stays
below the BM25 baseline before and after training) are fine-tuned on docstring pairs of 13
libraries under four conditions that draw their batches from the same shuffled order of the
same pairs and differ in the documents each query is shown (``inbatch``; ``inbatch_2x``, the
2x batch: two batches a step, so twice the pairs, which matches the mined conditions'
candidates per query only, not their compute or pairs; ``hn_top1``, one naively mined negative
per pair; ``hn_window``, one negative from a rank window with a positive-aware filter), five
seeds each, checkpoint chosen on validation. ``untouched`` is the start with no training. They
are tested on scikit-learn and networkx over three sets of test queries (`SUBSETS`):
``overall``, all of them; ``twins``, the near-twin subset, whose best-ranked wrong document is
a near-twin of the answer by name (easier than the full test for every system;
`exam_difficulty`); ``hard``, the look-alike exam, the test queries the untouched MiniLM ranks
a wrong document first on (its own mistakes choose them, so its score there is pushed down by
the choice; every trained arm is scored on it with paired intervals).

The same run writes ``docs_ranks.json`` beside it: per test query, the rank of its answer under
the untouched systems (MiniLM, static, BM25, TF-IDF) and every trained run. `load_ranks` reads
it; `query_ranks`, `trained_ranks`, `hard_exam_positions`, `twin_positions` and
`untouched_exams` read it.

==========================  =======================================================
function                    returns
==========================  =======================================================
`score`                     one condition's test metric: mean, 95% interval, seeds
`difference`                a paired difference (a - b): mean, interval, verdict
`false_negatives`           the hand audit of one mining setting: rate and interval
`audit_examples`            audited rows (query, answer, mined document, label, reason)
`curves`                    validation learning curves of one condition (per seed)
`loss_curves`               training-loss curves of one condition (per seed)
`controls`                  what each condition holds equal: pairs, candidates, texts a step
`exam_difficulty`           every system on a stored subset beside the full test
`load_ranks`                the per-query ranks of every system and run (docs_ranks.json)
`query_ranks`               one untouched system's rank of each test query's answer
`trained_ranks`             one trained run's rank of each test query's answer
`hard_exam_positions`       the test queries the untouched MiniLM ranks a wrong document first on
`twin_positions`            the stored near-twin subset, as positions in the ranks' query order
`untouched_exams`           each untouched system's MRR@10 on all, the hard exam, the near-twins
`chosen_validation`         validation score of the checkpoint each seed kept
`comparisons`               the paired differences the file records for one start
`design`                    the data, splits, sizes and schedule of the run
`mining_stats`              how the mined negatives score against the answers
`run_cost`                  wall and CPU minutes of the run, and the machine's load
`glue_values`               every number above under a flat name, for ``glue``
`results_summary`           a printable summary, at most 80 columns wide
==========================  =======================================================

Names: starts `STARTS`, conditions `CONDITIONS` (``untouched`` first), the trained mining
settings `MINING_SETTINGS` and the audited ones `AUDITED_SETTINGS` (adds ``far_window``, ranks
11-50, mined and audited but not trained), subsets `SUBSETS` (``overall``, ``twins``,
``hard``), metrics `METRICS`.
"""

from __future__ import annotations

import importlib.resources
import json
from collections.abc import Mapping
from pathlib import Path

__all__ = ["STARTS", "CONDITIONS", "MINING_SETTINGS", "AUDITED_SETTINGS", "SUBSETS", "METRICS", "AUDIT_LABELS", "results_path",
           "load_results", "score", "difference", "false_negatives", "audit_examples", "curves",
           "chosen_validation", "comparisons", "design", "mining_stats", "run_cost", "glue_values", "results_summary",
           "BASELINES", "SYSTEMS", "loss_curves", "controls", "exam_difficulty", "ranks_path", "load_ranks",
           "query_ranks", "trained_ranks", "hard_exam_positions", "twin_positions", "untouched_exams"]

STARTS = ("minilm", "static")
CONDITIONS = ("untouched", "inbatch", "inbatch_2x", "hn_top1", "hn_window")
MINING_SETTINGS = ("hn_top1", "hn_window")
AUDITED_SETTINGS = ("hn_top1", "hn_window", "far_window")
SUBSETS = ("overall", "twins", "hard")
METRICS = ("mrr@10", "recall@1", "recall@10", "ndcg@10")
BASELINES = ("tfidf", "bm25")
SYSTEMS = ("minilm", "static", "bm25", "tfidf")  # the untouched systems of the ranks file
RANKS_SCHEMA = 2
_RANKS_KEYS = ("schema", "test_query_ids", "ranks", "trained", "check", "versions", "code", "command")
AUDIT_LABELS = ("wrong answer", "also right", "unclear")
SCHEMA = 3
_KEYS = ("schema", "data", "twins", "hard", "mining", "baselines", "starts", "settings", "versions", "code",
         "run_time_s", "cpu_time_s")
_REGENERATE = "regenerate it with: nice -n 10 python benchmarks/docs_experiment.py"


def results_path() -> Path:
    """Where the results file is: in the package's ``experiment`` folder, which ships it (the same
    folder in a checkout or an editable install)."""
    return Path(str(importlib.resources.files("labs.classroom.experiment") / "docs_experiment.json"))


def load_results(path: str | Path | None = None) -> dict:
    """The experiment's results as a dict; ValueError naming the file if it is missing, of another
    schema, or incomplete."""
    return load_record("results", results_path() if path is None else Path(path), "docs experiment", SCHEMA, _KEYS,
                 _REGENERATE)


def load_record(noun: str, path: Path, of: str, schema: int, keys: tuple[str, ...], again: str) -> dict:
    """A results file as a dict; ValueError naming it (and how to make it ``again``) if it is missing,
    of another schema, or lacks one of ``keys``."""
    if not path.is_file():
        raise ValueError(f"{noun} file {str(path)!r} not found: {again}")
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("schema") != schema:
        raise ValueError(f"{path.name}: not schema {schema} of the {of}; {again}")
    missing = [k for k in keys if k not in data]
    if missing:
        raise ValueError(f"{path.name}: missing keys {missing}; {again}")
    return data


def _choice(name: str, value, allowed) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {tuple(allowed)}, got {value!r}")


def _cell(block: Mapping | None, subset: str, metric: str, what: str) -> dict:
    _choice("subset", subset, SUBSETS)
    _choice("metric", metric, METRICS)
    if block is None or block.get(subset) is None:
        raise ValueError(f"{what} has no {subset!r} result (a subset may be empty in a quick run)")
    return block[subset][metric]


def _verdict(lo: float, hi: float) -> str:
    return "above 0" if lo > 0 else "below 0" if hi < 0 else "includes 0"


def score(results: Mapping, start: str, condition: str, subset: str = "overall", metric: str = "mrr@10") -> dict:
    """One condition's test ``metric`` over ``subset``: {mean, lo, hi, seed_sd, per_seed, seeds}.

    ``condition`` is one of `CONDITIONS` or a lexical baseline (``"tfidf"``, ``"bm25"``, which
    ignore ``start``). ``lo``/``hi`` bound the 95% bootstrap interval over queries and seeds."""
    if condition in results["baselines"]:
        block, seeds = results["baselines"][condition], []
    else:
        _choice("start", start, STARTS)
        _choice("condition", condition, CONDITIONS + tuple(results["baselines"]))
        one = results["starts"][start]
        if condition == "untouched":
            block, seeds = one["untouched"]["test"], []
        else:
            block, seeds = one["conditions"][condition]["test"], one["conditions"][condition]["seeds"]
    cell = _cell(block, subset, metric, f"{start} {condition}")
    return {"mean": cell["mean"], "lo": cell["ci95"][0], "hi": cell["ci95"][1], "seed_sd": cell["seed_sd"],
            "per_seed": cell["per_seed"], "seeds": seeds}


def difference(results: Mapping, start: str, a: str, b: str, subset: str = "overall",
               metric: str = "mrr@10") -> dict:
    """The paired test difference ``a - b`` (same queries, same seed pairs): {mean, lo, hi, verdict,
    per_seed}; ``verdict`` is "above 0", "below 0" or "includes 0" (for the 95% interval)."""
    _choice("start", start, STARTS)
    diffs = results["starts"][start]["differences"]
    key = f"{a} - {b}"
    if key not in diffs:
        raise ValueError(f"no difference {key!r} is recorded; recorded: {sorted(diffs)}")
    cell = _cell(diffs[key], subset, metric, f"{start} {key}")
    lo, hi = cell["ci95"]
    return {"mean": cell["mean"], "lo": lo, "hi": hi, "verdict": _verdict(lo, hi), "per_seed": cell["per_seed"]}


def false_negatives(results: Mapping, setting: str) -> dict:
    """The hand audit of one mining setting (`AUDITED_SETTINGS`): {rate, lo, hi, audited,
    also_right, wrong_answer, unclear, rate_if_unclear_right}. ``rate`` is the share labelled "also
    right" (a false negative), ``lo``/``hi`` its 95% Wilson interval; None where nothing matched."""
    _choice("setting", setting, AUDITED_SETTINGS)
    row = results["mining"]["audit"]["settings"][setting]
    interval = row["false_negative_ci95"] or [None, None]
    return {"rate": row["false_negative_rate"], "lo": interval[0], "hi": interval[1],
            "audited": row["audited"], "also_right": row["also right"], "wrong_answer": row["wrong answer"],
            "unclear": row["unclear"], "rate_if_unclear_right": row["false_negative_rate_if_unclear_right"]}


def audit_examples(results: Mapping, setting: str, label: str | None = None, n: int | None = None) -> list[dict]:
    """Audited rows of one mining setting (optionally only one `AUDIT_LABELS` label, the first
    ``n``): each {query, answer, negative, negative_id, rank, answer_score, negative_score, label,
    reason}, in the audit's order."""
    _choice("setting", setting, AUDITED_SETTINGS)
    if label is not None:
        _choice("label", label, AUDIT_LABELS)
    rows = [r for r in results["mining"]["audit"]["rows"] if r["setting"] == setting
            and (label is None or r["label"] == label)]
    return rows if n is None else rows[:n]


def curves(results: Mapping, start: str, condition: str, metric: str = "mrr@10") -> dict:
    """Validation learning curves of one trained condition: {steps, values (one list per seed),
    chosen_step (per seed)}; step 0 is the untouched start."""
    _choice("start", start, STARTS)
    _choice("condition", condition, CONDITIONS[1:])
    _choice("metric", metric, ("mrr@10", "recall@1"))
    block = results["starts"][start]["conditions"][condition]
    runs = list(block["curves"].values())
    return {"steps": [p["step"] for p in runs[0]], "values": [[p[metric] for p in run] for run in runs],
            "chosen_step": list(block["chosen_step"])}


def chosen_validation(results: Mapping, start: str, condition: str) -> dict:
    """Validation MRR@10 of the checkpoint each seed kept (the one tested): {mean, per_seed, steps}.
    For ``untouched`` it is the start's own score, one value at step 0."""
    _choice("start", start, STARTS)
    _choice("condition", condition, CONDITIONS)
    one = results["starts"][start]
    if condition == "untouched":
        value = one["untouched"]["val"]["mrr@10"]
        return {"mean": value, "per_seed": [value], "steps": [0]}
    block = one["conditions"][condition]
    values = list(block["chosen_val_mrr@10"])
    return {"mean": round(sum(values) / len(values), 4), "per_seed": values, "steps": list(block["chosen_step"])}


def comparisons(results: Mapping, start: str) -> list[tuple[str, str]]:
    """The paired differences the file records for one start, as ``(a, b)`` for ``a - b``, in the
    file's order (each one is read with `difference`)."""
    _choice("start", start, STARTS)
    return [tuple(key.split(" - ")) for key in results["starts"][start]["differences"]]


def design(results: Mapping) -> dict:
    """The run's design as the file records it: {libraries (split -> library names), train_pairs,
    val_queries, test_queries, twins_n, rival_ranked_first (near-twin queries whose twin the
    untouched MiniLM ranks above the answer), hard_n (the look-alike exam's queries), seeds, batch,
    steps and eval_every (per start)}."""
    data, settings = results["data"], results["settings"]
    libraries: dict[str, list[str]] = {"train": [], "val": [], "test": []}
    for library, split in data["splits"].items():
        libraries.setdefault(split, []).append(library)
    return {"libraries": libraries, "train_pairs": data["train_pairs"], "val_queries": data["val_queries"],
            "test_queries": data["test_queries"], "twins_n": results["twins"]["n"],
            "rival_ranked_first": results["twins"]["rival_ranked_first"], "hard_n": results["hard"]["n"],
            "seeds": len(settings["seeds"]),
            "batch": settings["batch"],
            "steps": {start: results["starts"][start]["settings"]["steps"] for start in STARTS},
            "eval_every": {start: results["starts"][start]["settings"]["eval_every"] for start in STARTS}}


def mining_stats(results: Mapping, setting: str) -> dict:
    """How one mining setting's negatives score, under the untouched MiniLM: negatives, mean answer and
    negative scores, how many negatives score above the answer or above 95% of it, the median rank."""
    _choice("setting", setting, AUDITED_SETTINGS)
    return dict(results["mining"]["settings"][setting])


def run_cost(results: Mapping) -> dict:
    """{wall_min, cpu_min, cpus, device, load_start, load_end, note} of the run that made the file."""
    machine = results["machine"]
    return {"wall_min": round(results["run_time_s"] / 60, 1), "cpu_min": round(results["cpu_time_s"] / 60, 1),
            "cpus": machine["cpus"], "device": machine["device"], "load_start": machine["load_average_start"],
            "load_end": machine["load_average_end"], "note": machine.get("note", "")}


def loss_curves(results: Mapping, start: str, condition: str) -> dict:
    """Training-loss curves of one trained condition: {steps, values (one list per seed)}. Each value is
    the mean loss over the steps since the previous validation point (step 0 has none: left out)."""
    _choice("start", start, STARTS)
    _choice("condition", condition, CONDITIONS[1:])
    runs = list(results["starts"][start]["conditions"][condition]["curves"].values())
    return {"steps": [p["step"] for p in runs[0][1:]], "values": [[p["train_loss"] for p in run[1:]] for run in runs]}


_MATCHES = {"inbatch": "the baseline: the pairs, order and steps every arm shares",
            "inbatch_2x": "the mined arms' candidates per query (not their pairs or texts a step)",
            "hn_top1": "in-batch's pairs, order and steps, with one more candidate per pair",
            "hn_window": "in-batch's pairs, order and steps, with one more candidate per pair"}


def controls(results: Mapping, start: str) -> dict[str, dict]:
    """What each trained condition of one start holds equal, from the design the file records:
    condition -> {pairs_per_step, candidates_per_query, texts_per_step (queries and documents a step
    encodes: a query and its answer per pair, plus the mined document per pair), positive_pairs_per_run
    (pairs a step x steps), matches (one line)}. A document named twice in a batch is encoded once, so
    the mined arms' texts a step are an upper bound (``mean_distinct_candidates`` has the measured)."""
    _choice("start", start, STARTS)
    one = results["starts"][start]
    steps = one["settings"]["steps"]
    out = {}
    for condition, block in one["conditions"].items():
        pairs = block["batch_pairs"]
        mined = pairs if block["negatives"] else 0
        out[condition] = {"pairs_per_step": pairs, "candidates_per_query": block["candidates_per_query"],
                          "texts_per_step": 2 * pairs + mined, "positive_pairs_per_run": pairs * steps,
                          "matches": _MATCHES.get(condition, "")}
    return out


def exam_difficulty(results: Mapping, subset: str = "twins", metric: str = "mrr@10") -> list[dict]:
    """Every system's test ``metric`` on a stored ``subset`` beside its score over all test queries: a list
    of {system, start, condition, overall, subset, drop (overall - subset)} for the lexical baselines, then
    each start untouched and under every trained condition (means over seeds), in that order. A negative
    ``drop`` means the subset is easier than the full test."""
    _choice("subset", subset, SUBSETS[1:])
    rows = [(method, None, method) for method in results["baselines"]]
    rows += [(f"{start} {condition}", start, condition) for start in STARTS for condition in CONDITIONS]
    out = []
    for system, start, condition in rows:
        full = score(results, start or STARTS[0], condition, "overall", metric)["mean"]
        part = score(results, start or STARTS[0], condition, subset, metric)["mean"]
        out.append({"system": system, "start": start, "condition": condition, "overall": full, "subset": part,
                    "drop": round(full - part, 4)})
    return out


def ranks_path() -> Path:
    """Where the per-query ranks file is (beside the results file, shipped or in the checkout)."""
    return results_path().with_name("docs_ranks.json")


def load_ranks(path: str | Path | None = None) -> dict:
    """The per-query ranks of every system and trained run as a dict; ValueError naming the file if it
    is missing, of another schema, incomplete, or its lists do not line up with its queries."""
    path = ranks_path() if path is None else Path(path)
    ranks = load_record("ranks", path, "docs ranks", RANKS_SCHEMA, _RANKS_KEYS, _REGENERATE)
    n = len(ranks["test_query_ids"])
    rows = {f"ranks[{system!r}]": ranks["ranks"].get(system) for system in SYSTEMS}
    for start, conditions in ranks["trained"].items():
        for condition, seeds in conditions.items():
            rows.update({f"trained[{start!r}][{condition!r}][{seed!r}]": row for seed, row in seeds.items()})
    for name, row in rows.items():
        if not isinstance(row, list) or len(row) != n or not all(isinstance(r, int) and r >= 1 for r in row):
            raise ValueError(f"{path.name}: {name} must be {n} ranks (whole numbers from 1); {_REGENERATE}")
    return ranks


def query_ranks(ranks: Mapping, system: str) -> list[int]:
    """Per test query (in ``ranks["test_query_ids"]`` order), the 1-based rank of its one answer under
    one untouched `SYSTEMS` system. Each query has one answer, so its MRR@10 is 1 / rank (0 past 10)."""
    _choice("system", system, SYSTEMS)
    return list(ranks["ranks"][system])


def trained_ranks(ranks: Mapping, start: str, condition: str, seed: int) -> list[int]:
    """Per test query (in ``ranks["test_query_ids"]`` order), the 1-based rank of its one answer under
    one trained run: ``start``, ``condition`` (a trained one of `CONDITIONS`) and training ``seed``."""
    _choice("start", start, STARTS)
    _choice("condition", condition, CONDITIONS[1:])
    runs = ranks["trained"][start][condition]
    _choice("seed", str(seed), tuple(runs))
    return list(runs[str(seed)])


def hard_exam_positions(ranks: Mapping) -> list[int]:
    """The harder look-alike exam: positions of the test queries on which the untouched MiniLM ranks some
    wrong document above the answer (its rank is above 1)."""
    return [i for i, r in enumerate(query_ranks(ranks, "minilm")) if r > 1]


def twin_positions(results: Mapping, ranks: Mapping) -> list[int]:
    """The results file's stored ``twins`` subset (the near-twin rule), as positions in the ranks
    file's query order."""
    chosen = set(results["twins"]["query_ids"])
    return [i for i, q in enumerate(ranks["test_query_ids"]) if q in chosen]


def _mrr10(rows) -> float:
    return round(sum(1 / r for r in rows if r <= 10) / len(rows), 4) if rows else float("nan")


def untouched_exams(results: Mapping, ranks: Mapping) -> list[dict]:
    """Each untouched system's MRR@10 from the ranks: {system, overall, hard (the harder exam), twins
    (the stored near-twin subset)}, for TF-IDF, BM25, the static start and MiniLM, in that order."""
    hard, twins = hard_exam_positions(ranks), twin_positions(results, ranks)
    out = []
    for system in ("tfidf", "bm25", "static", "minilm"):
        row = query_ranks(ranks, system)
        out.append({"system": system, "overall": _mrr10(row), "hard": _mrr10([row[i] for i in hard]),
                    "twins": _mrr10([row[i] for i in twins])})
    return out


def _key(text: str) -> str:
    return text.replace("@", "").replace(" ", "_").replace("-", "_")


def glue_values(results: Mapping, ranks: Mapping | None = None) -> dict[str, float | int | str]:
    """Every number the lessons quote, under a flat name (prefix ``docs_``), for ``glue``.

    Scores: ``docs_{start}_{condition}_{subset}_{metric}`` with ``_lo`` / ``_hi`` (metric without
    "@", e.g. ``docs_minilm_hn_window_hard_mrr10``); baselines ``docs_bm25_overall_mrr10``.
    Differences: ``docs_{start}_{a}_vs_{b}_{subset}_{metric}`` with ``_lo``, ``_hi`` and
    ``_verdict``. Audit: ``docs_fn_{setting}`` (rate), ``_lo``, ``_hi``, ``_n``, ``_also_right``,
    ``_unclear``. Mining: ``docs_mined_{setting}_above_answer``, ``_above_95``, ``_median_rank``.
    Audit counts: ``docs_fn_{setting}_wrong`` and ``docs_fn_{setting}_if_unclear`` (the rate if every
    "unclear" counts as right). Mining scores: ``docs_mined_{setting}_answer_score``,
    ``_negative_score``. Validation of the kept checkpoints: ``docs_{start}_{condition}_val_mrr10``.
    Sizes and cost: ``docs_train_pairs``, ``docs_val_queries``, ``docs_test_queries``,
    ``docs_twins_n``, ``docs_twins_rival_first``, ``docs_hard_n``, ``docs_seeds``, ``docs_{start}_steps``,
    ``docs_{start}_eval_every``, ``docs_{start}_batch``, ``docs_run_minutes``, ``docs_cpu_minutes``.

    Subsets: ``twins`` (the near-twin subset) and ``hard`` (the look-alike exam). Controls
    (`controls`): ``docs_{start}_{condition}_pairs``, ``_candidates``, ``_texts`` (a step), and
    ``_last_kept`` (seeds whose kept checkpoint is the last step). Mining:
    ``docs_mined_{setting}_fallbacks`` (pairs with nothing passing in the ranks, given one from below
    them) and ``_in_window``. ``ranks`` (`load_ranks`) is accepted for callers that have it; every
    number here comes from the results file (the ranks file holds the same runs, query by query)."""
    out: dict[str, float | int | str] = {}
    for metric in ("mrr@10", "recall@1"):
        for subset in SUBSETS:
            for method in results["baselines"]:
                if results["baselines"][method].get(subset):
                    cell = score(results, STARTS[0], method, subset, metric)
                    out[f"docs_{method}_{subset}_{_key(metric)}"] = cell["mean"]
            for start in STARTS:
                for condition in CONDITIONS:
                    try:
                        cell = score(results, start, condition, subset, metric)
                    except ValueError:
                        continue
                    name = f"docs_{start}_{condition}_{subset}_{_key(metric)}"
                    out[name], out[f"{name}_lo"], out[f"{name}_hi"] = cell["mean"], cell["lo"], cell["hi"]
                for key in results["starts"][start]["differences"]:
                    a, b = key.split(" - ")
                    try:
                        cell = difference(results, start, a, b, subset, metric)
                    except ValueError:
                        continue
                    name = f"docs_{start}_{a}_vs_{b}_{subset}_{_key(metric)}"
                    out[name], out[f"{name}_lo"], out[f"{name}_hi"] = cell["mean"], cell["lo"], cell["hi"]
                    out[f"{name}_verdict"] = cell["verdict"]
    for setting in AUDITED_SETTINGS:
        fn = false_negatives(results, setting)
        out[f"docs_fn_{setting}"], out[f"docs_fn_{setting}_lo"], out[f"docs_fn_{setting}_hi"] = (
            fn["rate"], fn["lo"], fn["hi"])
        out[f"docs_fn_{setting}_n"], out[f"docs_fn_{setting}_also_right"] = fn["audited"], fn["also_right"]
        out[f"docs_fn_{setting}_unclear"] = fn["unclear"]
        out[f"docs_fn_{setting}_wrong"] = fn["wrong_answer"]
        out[f"docs_fn_{setting}_if_unclear"] = fn["rate_if_unclear_right"]
        stats = mining_stats(results, setting)
        out[f"docs_mined_{setting}_above_answer"] = stats["negative_above_answer"]
        out[f"docs_mined_{setting}_above_95"] = stats["negative_above_95pct_of_answer"]
        out[f"docs_mined_{setting}_median_rank"] = stats["median_rank"]
        out[f"docs_mined_{setting}_answer_score"] = stats["mean_answer_score"]
        out[f"docs_mined_{setting}_negative_score"] = stats["mean_negative_score"]
    data, settings = results["data"], results["settings"]
    out.update({"docs_train_pairs": data["train_pairs"], "docs_val_queries": data["val_queries"],
                "docs_test_queries": data["test_queries"], "docs_twins_n": results["twins"]["n"],
                "docs_twins_rival_first": results["twins"]["rival_ranked_first"],
                "docs_hard_n": results["hard"]["n"],
                "docs_seeds": len(settings["seeds"]),
                "docs_run_minutes": round(results["run_time_s"] / 60),
                "docs_cpu_minutes": round(results["cpu_time_s"] / 60)})
    for start in STARTS:
        out[f"docs_{start}_steps"] = results["starts"][start]["settings"]["steps"]
        out[f"docs_{start}_batch"] = results["starts"][start]["settings"]["batch"]
        out[f"docs_{start}_eval_every"] = results["starts"][start]["settings"]["eval_every"]
        for condition in CONDITIONS:
            out[f"docs_{start}_{condition}_val_mrr10"] = chosen_validation(results, start, condition)["mean"]
        last = results["starts"][start]["settings"]["steps"]
        for condition, block in controls(results, start).items():
            out[f"docs_{start}_{condition}_pairs"] = block["pairs_per_step"]
            out[f"docs_{start}_{condition}_candidates"] = block["candidates_per_query"]
            out[f"docs_{start}_{condition}_texts"] = block["texts_per_step"]
            out[f"docs_{start}_{condition}_last_kept"] = sum(
                step == last for step in results["starts"][start]["conditions"][condition]["chosen_step"])
    for setting in AUDITED_SETTINGS:
        stats = mining_stats(results, setting)
        out[f"docs_mined_{setting}_fallbacks"] = stats["fallbacks_below_window"]
        out[f"docs_mined_{setting}_in_window"] = stats["negatives"] - stats["fallbacks_below_window"]
    return out


def _interval(cell: Mapping, signed: bool = False) -> str:
    f = "+.3f" if signed else ".3f"
    return f"{cell['mean']:{f}} [{cell['lo']:{f}}, {cell['hi']:{f}}]"


def results_summary(results: Mapping) -> str:
    """A printable summary, at most 80 columns: MRR@10 of every condition (all test queries and the
    look-alike exam) with 95% intervals, the paired differences with verdicts, the audit's
    false-negative rates, and what the run cost. (The near-twin subset's numbers are in the file.)"""
    data, hard = results["data"], results["hard"]
    shown = ("overall", "hard")
    lines = [f"test: {data['test_queries']} queries, {hard['n']} of them in the look-alike exam",
             "(the queries the untouched MiniLM ranks a wrong document first on);",
             f"{len(results['settings']['seeds'])} seeds per trained condition; 95% intervals over "
             "queries and seeds", "", "hand audit of mined negatives (false negative = also right):"]
    for setting in AUDITED_SETTINGS:
        fn = false_negatives(results, setting)
        rate = (f"{fn['rate']:.2f} [{fn['lo']:.2f}, {fn['hi']:.2f}]" if fn["rate"] is not None
                else "not audited")
        lines.append(f"  {setting:<11} also right {fn['also_right']:>2}/{fn['audited']:<3} unclear "
                     f"{fn['unclear']:>2}   rate {rate}")
    bases = "  ".join(f"{m} {score(results, STARTS[0], m)['mean']:.3f}" for m in results["baselines"])
    lines += [f"lexical baselines, MRR@10 overall: {bases}", ""]
    for start in STARTS:
        lines.append(f"{start + ': MRR@10':<24}{'all test queries':>25}{'look-alike exam':>25}")
        for condition in CONDITIONS:
            parts = []
            for subset in shown:
                try:
                    parts.append(_interval(score(results, start, condition, subset)))
                except ValueError:
                    parts.append("-")
            lines.append(f"  {condition:<22}{parts[0]:>24} {parts[1]:>24}")
        for key in results["starts"][start]["differences"]:
            a, b = key.split(" - ")
            parts = []
            for subset in shown:
                try:
                    cell = difference(results, start, a, b, subset)
                    parts.append(_interval(cell, signed=True) + ("*" if cell["verdict"] != "includes 0" else " "))
                except ValueError:
                    parts.append("- ")
            lines.append(f"  {key:<22}{parts[0]:>25}{parts[1]:>25}")
        lines.append("")
    cost = run_cost(results)
    lines += ["* the 95% interval excludes 0",
              f"run: {cost['wall_min']:.0f} min wall, {cost['cpu_min']:.0f} min CPU on {cost['cpus']} "
              f"cores ({cost['device']}), load average {cost['load_start'][0]:.1f} at start"]
    return "\n".join(lines)

"""The look-alike experiment's results, as lesson 5 quotes them.

``benchmarks/lookalike_experiment.py`` trains, on the real all-MiniLM-L6-v2, a query-side adapter
(`labs.lessons.adapter`) and the whole model (lesson 7's recipe), each with in-batch negatives
only (``inbatch``) and with each pair's look-alike as an extra negative (``lookalike``), over
several seeds, and tests them on held-out topics of `labs.lessons.lookalikes`. Its results live in
the package, ``labs/classroom/experiment/lookalike_experiment.json``, beside the docs experiment's
(the benchmark is run with ``--out`` there). `load_lookalike` reads and checks it;
`lookalike_table` and `lookalike_glue` return exactly the numbers the lesson prints and glues.

==========================  =======================================================
function                    returns
==========================  =======================================================
`lookalike_path`            where the results file is (shipped, or in the checkout)
`load_lookalike`            the results as a dict (ValueError naming the file if wrong)
`lookalike_table`           one row per trained thing and arm: accuracy, interval, seeds
`lookalike_glue`            every number the lesson quotes, under a flat name
==========================  =======================================================
"""

from __future__ import annotations

import importlib.resources
from collections.abc import Mapping
from pathlib import Path

from labs.classroom.results import load_record

__all__ = ["PARTS", "ARMS", "lookalike_path", "load_lookalike", "lookalike_table", "lookalike_glue"]

PARTS = ("adapter", "minilm")
ARMS = ("inbatch", "lookalike")
SCHEMA = 1
_KEYS = ("schema", "data", "untouched", "adapter", "minilm", "versions", "code", "run_time_s")
_FILE = "lookalike_experiment.json"
_REGENERATE = ("regenerate it with: nice -n 10 python benchmarks/lookalike_experiment.py "
               "--out labs/classroom/experiment/lookalike_experiment.json")


def lookalike_path() -> Path:
    """The results file shipped in the package (labs/classroom/experiment/)."""
    return Path(str(importlib.resources.files("labs.classroom.experiment") / _FILE))


def load_lookalike(path: str | Path | None = None) -> dict:
    """The look-alike experiment's results; ValueError naming the file if missing, of another schema or
    incomplete."""
    return load_record("results", lookalike_path() if path is None else Path(path), "look-alike experiment", SCHEMA,
                 _KEYS, _REGENERATE)


def lookalike_table(results: Mapping) -> list[dict]:
    """Rows (untouched first, then each part's two arms): name, held-out accuracy (steps above the
    look-alike) with its 95% interval, the seeds, and the password question's margin and rank."""
    u = results["untouched"]
    rows = [{"part": "untouched", "arm": "-", "mean": u["pair"], "lo": u["pair"], "hi": u["pair"], "seeds": 0,
             "password_margin": [u["password_margin"]], "password_rank": [u["password_rank"]]}]
    for part in PARTS:
        for arm in ARMS:
            a = results[part]["arms"][arm]
            rows.append({"part": part, "arm": arm, "mean": a["pair"]["mean"], "lo": a["pair"]["ci95"][0],
                         "hi": a["pair"]["ci95"][1], "seeds": len(a["pair"]["per_seed"]),
                         "password_margin": a["password_margin"], "password_rank": a["password_rank"]})
    return rows


def lookalike_glue(results: Mapping) -> dict[str, float | int | str]:
    """Every number the lesson quotes, under ``la_*`` names: the set's sizes, the untouched model's
    failure share, each part and arm's accuracy, interval, seeds and paired gain over the untouched
    model, the paired differences between arms with their verdicts, and the password question's
    margins and ranks (mean margin, worst rank, seeds on which its steps come first)."""
    u, data = results["untouched"], results["data"]
    out: dict[str, float | int | str] = {
        "la_topics_train": data["topics"]["train"], "la_topics_held_out": data["topics"]["test"],
        "la_held_out_questions": data["held_out_questions"], "la_pool": data["pool_articles"],
        "la_untouched_fails": u["look_alike_wins"], "la_untouched_pair": u["pair"],
        "la_untouched_password_margin": u["password_margin"], "la_untouched_password_rank": u["password_rank"],
        "la_mined_is_look_alike": data["mined"]["first_mined_is_look_alike"],
    }
    for part in PARTS:
        block = results[part]
        for arm in ARMS:
            a, key = block["arms"][arm], f"la_{part}_{arm}"
            out[f"{key}_pair"], (out[f"{key}_pair_lo"], out[f"{key}_pair_hi"]) = a["pair"]["mean"], a["pair"]["ci95"]
            out[f"{key}_pool"] = a["pool"]["mean"]
            out[f"{key}_seeds"] = len(a["pair"]["per_seed"])
            margins = a["password_margin"]
            out[f"{key}_password_margin"] = round(sum(margins) / len(margins), 4)
            out[f"{key}_password_margin_min"], out[f"{key}_password_margin_max"] = min(margins), max(margins)
            out[f"{key}_password_rank_worst"] = max(a["password_rank"])
            out[f"{key}_password_first"] = sum(r == 1 for r in a["password_rank"])
            gain = a["gain_over_untouched"]["pair"]
            out[f"{key}_gain"], out[f"{key}_gain_verdict"] = gain["mean"], gain["verdict"]
        d = block["difference"]["pair"]
        out[f"la_{part}_diff"], (out[f"la_{part}_diff_lo"], out[f"la_{part}_diff_hi"]) = d["mean"], d["ci95"]
        out[f"la_{part}_diff_verdict"] = d["verdict"]
    out["la_adapter_steps"] = results["adapter"]["settings"]["steps"]
    out["la_adapter_lr"] = results["adapter"]["settings"]["lr"]
    out["la_adapter_tau"] = results["adapter"]["settings"]["tau"]
    out["la_minilm_selected_untouched"] = sum(r["selected_epoch"] == 0 for arm in ARMS
                                              for r in results["minilm"]["runs"][arm])
    return out

"""The real-data experiment's results, as the lessons quote them.

``benchmarks/docs_experiment.py`` writes ``benchmarks/results/docs_experiment.json``; the
package ships that file (as ``labs.classroom.experiment``), so a notebook finds it wherever the
course is installed (`results_path`). `load_results` reads it; `results_summary` prints it.
"""

from __future__ import annotations

import importlib.resources
import json
from collections.abc import Mapping
from pathlib import Path

__all__ = ["results_path", "METRICS", "load_results", "results_summary"]


def results_path() -> Path:
    """Where the results file is: shipped in the installed package, or in the checkout the package
    runs from (an editable install)."""
    try:
        shipped = importlib.resources.files("labs.classroom.experiment") / "docs_experiment.json"
        if shipped.is_file():
            return Path(str(shipped))
    except ModuleNotFoundError:
        pass
    return Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "docs_experiment.json"




METRICS = ("recall@1", "recall@10", "mrr@10", "ndcg@10")


def load_results(path: str | Path | None = None) -> dict:
    """The experiment's results as a dict; ValueError naming the file if it is missing or incomplete.

    Keys: ``test`` (condition -> metric -> {mean, ci95, seed_sd, per_seed}), ``differences``
    (paired, e.g. ``"mnrl_hn - mnrl"``), ``curves`` (validation per step), ``mining``,
    ``data``, ``settings``, ``versions``, ``code``, ``run_time_s``, ``command``.
    """
    path = results_path() if path is None else Path(path)
    if not path.is_file():
        raise ValueError(f"results file {str(path)!r} not found: run python benchmarks/docs_experiment.py")
    results = json.loads(path.read_text(encoding="utf-8"))
    missing = [k for k in ("test", "differences", "curves", "settings", "versions", "code") if k not in results]
    if missing:
        raise ValueError(f"{path.name}: missing keys {missing}; regenerate it with python benchmarks/docs_experiment.py")
    return results


def results_summary(results: Mapping) -> str:
    """A printable summary (80 columns): test means with 95% bootstrap CIs, seed spread, paired gains."""
    data, settings = results["data"], results["settings"]
    lines = [f"test: {data['test_queries']} queries from {', '.join(data['test_libraries'])}, each against "
             f"the {data['test_documents']} test documents",
             f"trained: {len(settings['seeds'])} seeds x {settings['steps']} steps of {settings['batch_size']} "
             f"pairs; CIs: bootstrap over queries", "",
             f"{'condition':<12}" + "".join(f"{m:>10}" for m in METRICS)]
    for name, row in results["test"].items():
        lines.append(f"{name:<12}" + "".join(f"{row[m]['mean']:>10.3f}" for m in METRICS))
    lines += ["", f"{'mrr@10':<12}{'mean':>8}{'95% CI':>17}{'seed sd':>9}  per seed"]
    for name, row in results["test"].items():
        cell = row["mrr@10"]
        seeds = " ".join(f"{v:.3f}" for v in cell["per_seed"]) if len(cell["per_seed"]) > 1 else "-"
        sd = f"{cell['seed_sd']:.3f}" if cell["seed_sd"] is not None else "-"
        lines.append(f"{name:<12}{cell['mean']:>8.3f}   [{cell['ci95'][0]:.3f}, {cell['ci95'][1]:.3f}]{sd:>9}  {seeds}")
    lines += ["", f"{'paired gain':<26}" + "".join(f"{m:>13}" for m in ("recall@1", "mrr@10"))]
    for name, row in results["differences"].items():
        lines.append(f"{name:<26}" + "".join(
            f"{row[m]['mean']:>+7.3f} {'*' if row[m]['ci95'][0] > 0 or row[m]['ci95'][1] < 0 else ' ':<5}"
            for m in ("recall@1", "mrr@10")))
    lines.append("* its 95% CI excludes 0")
    return "\n".join(lines)

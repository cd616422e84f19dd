"""The two-process training check, shared by tests/retrieval/test_scaling.py (this environment's torch)
and the Colab twin (Colab's torch): one comparison, two torches.

`launch` runs ``torchrun --standalone --nproc_per_node 2`` (gloo, CPU) on this file: each process runs
`labs.retrieval.distributed.ddp_step` on `PER_RANK` pairs, then ``python -m labs train`` in the same
process group, as a user's ``torchrun -m labs train``. `reference` and `one_process_train` do the same
in one process on all ``2 x PER_RANK`` pairs; `step_differences` and `train_differences` list where
the two depart (empty: they agree).

    python -m tools.platforms.ddp_probe FOLDER    # the whole check in FOLDER; exit status 1 on a difference
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PER_RANK, WORLD, SCALE, LR = 4, 2, 20.0, 0.5
TRAIN = ["--epochs", "1", "--max-steps", "2"]  # two steps: one from the same weights, one after an update


def launch(model: Path, data: Path, folder: Path, timeout: float = 400) -> dict:
    """The one torchrun launch: 2 CPU processes (gloo) run `ddp_step`, then ``train``; its outcome."""
    probe, run = folder / "probe", folder / "run"
    probe.mkdir(parents=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(WORLD),
           str(Path(__file__).resolve()), str(model), str(PER_RANK), str(probe), str(SCALE), str(data), str(run)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    return {"probe": probe, "run": run, "returncode": done.returncode, "stdout": done.stdout,
            "stderr": done.stderr}


def ranks(probe: Path) -> list[dict]:
    import torch

    return [torch.load(probe / f"rank{r}.pt") for r in range(WORLD)]


def reference(model: Path, lr: float = LR) -> dict:
    """The DDP step in one process: loss, gradients, rows and parameters after SGD on all pairs."""
    import torch
    from sentence_transformers import SentenceTransformer

    from labs.lessons.infonce import info_nce_rows
    from labs.retrieval.loss import make_loss
    from labs.retrieval.scaling import features_of, loss_and_grads, scale_pairs

    rows = scale_pairs(PER_RANK * WORLD)
    columns = [[q for q, _ in rows], [d for _, d in rows]]
    st = SentenceTransformer(str(model), device="cpu", local_files_only=True).eval()
    loss, grads = loss_and_grads(st, make_loss(st, "mnrl", scale=SCALE), features_of(st, columns))
    params = torch.cat([p.detach().reshape(-1) for p in st.parameters()])
    with torch.no_grad():
        q, d = (st(f)["sentence_embedding"].double() for f in features_of(st, columns))
    return {"loss": loss, "grads": grads, "params_after": params - lr * grads,
            "rows": info_nce_rows((q @ d.T).numpy(), 1 / SCALE)}


def _close(a: float, b: float, rel: float) -> bool:
    return abs(a - b) <= rel * abs(b)


def step_differences(ranks: list[dict], ref: dict) -> list[str]:
    """Where the two ranks' DDP step departs from the one-process step (empty: it does not)."""
    import numpy as np

    out = []
    if [r["world"] for r in ranks] != [WORLD] * WORLD:
        return [f"the ranks saw worlds {[r['world'] for r in ranks]}, not {WORLD}"]
    # the global loss (mean over ranks) is the single-process loss on all 2 x B pairs
    if not _close(ranks[0]["global_loss"], ref["loss"], 1e-5):
        out.append(f"global loss {ranks[0]['global_loss']:.6f}, one process {ref['loss']:.6f}")
    # each rank's loss is its own rows of the one 8-way exam
    for r in ranks:
        mine = ref["rows"][r["rank"] * PER_RANK:(r["rank"] + 1) * PER_RANK].mean()
        if not _close(r["gathered_loss"], mine, 1e-4):
            out.append(f"rank {r['rank']}: loss {r['gathered_loss']:.6f}, its rows in one process {mine:.6f}")
    # without gathering, each rank sits a 4-way exam: a different loss (the comparison can fail)
    if abs(np.mean([r["local_loss"] for r in ranks]) - ref["loss"]) <= 0.05:
        out.append("the ungathered loss equals the gathered one: the comparison tells nothing apart")
    # after DDP's all-reduce both ranks hold the single-process gradient, and take the same step
    top = float(ref["grads"].abs().max())
    if top <= 1e-3:
        out.append(f"the one-process gradient is almost zero (largest {top:.1e}): nothing to compare")
    if not bool((ranks[0]["grads"] == ranks[1]["grads"]).all()):
        out.append("the two ranks hold different gradients after the all-reduce")
    for name, key in (("plain", "grads"), ("cached (chunks of 2)", "cached_grads")):
        gap = float((ranks[0][key] - ref["grads"]).abs().max())
        if gap >= 1e-5 * top:
            out.append(f"{name} gradients {gap:.1e} from one process's (largest entry {top:.1e})")
    gap = float((ranks[0]["params"] - ref["params_after"]).abs().max())
    if gap >= 1e-6:
        out.append(f"parameters after the step {gap:.1e} from one process's")
    if not bool((ranks[0]["params"] == ranks[1]["params"]).all()):
        out.append("the two ranks hold different parameters after the step")
    for r in ranks:
        if not _close(r["cached_loss"], r["gathered_loss"], 1e-5):
            out.append(f"rank {r['rank']}: cached loss {r['cached_loss']:.6f}, plain {r['gathered_loss']:.6f}")
    return out


def one_process_train(model: Path, data: Path, out: Path) -> dict:
    """``python -m labs train`` in this process on the launch's pairs: one batch of 2 x B pairs a step."""
    import contextlib

    from labs.retrieval.cli import main

    with contextlib.redirect_stdout(sys.stderr):  # its report is not the check's output
        code = main(["train", "--data", str(data), "--out", str(out), "--model", str(model),
                     "--batch-size", str(WORLD * PER_RANK), *TRAIN])
    if code:
        raise RuntimeError(f"the one-process train exited {code}")
    return json.loads((out / "metrics.json").read_text())


def train_differences(two: dict, one: dict) -> list[str]:
    """Where the two-process ``train`` (its metrics.json) departs from the one-process run: the same
    pairs in the same order, the logged loss the mean over processes. Step 1 starts from the same
    weights (within 1e-5); later steps within 1e-3, since AdamW's first update divides each gradient
    entry by its own size, and an entry near zero that the all-reduce rounds otherwise moves a whole step."""
    out = []
    if two["processes"] != WORLD or one["processes"] != 1:
        out.append(f"processes {two['processes']} and {one['processes']}, not {WORLD} and 1")
    if not two["gather_across_devices"]:
        out.append("the two-process run did not gather negatives across processes")
    for key in ("global_batch", "steps"):
        if two[key] != one[key]:
            out.append(f"{key}: {two[key]} in two processes, {one[key]} in one")
    if len(two["losses"]) != len(one["losses"]) or not two["losses"]:
        return out + [f"losses {two['losses']} in two processes, {one['losses']} in one"]
    for step, (a, b) in enumerate(zip(two["losses"], one["losses"]), start=1):
        if not _close(a, b, 1e-5 if step == 1 else 1e-3):
            out.append(f"step {step}: loss {a:.6f} in two processes, {b:.6f} in one")
    return out


def check(folder: Path) -> list[str]:
    """The whole check in ``folder`` (new): a tiny BERT, the help-desk data, the launch, both comparisons."""
    from labs.retrieval.data import write_dataset
    from labs.retrieval.helpdesk import make_helpdesk
    from labs.retrieval.scaling import write_tiny_bert

    model = write_tiny_bert(folder / "tiny", seed=0)
    data = write_dataset(make_helpdesk(), folder / "data")
    launched = launch(model, data, folder)
    if launched["returncode"]:
        errors = [line for line in launched["stderr"].splitlines() if "Error" in line]
        return [f"torchrun exited {launched['returncode']}: " + (errors[0] if errors else launched["stderr"][-500:])]
    two = json.loads((launched["run"] / "metrics.json").read_text())
    one = one_process_train(model, data, folder / "one")
    print(f"train losses {two['losses']} in {WORLD} processes, {one['losses']} in one")
    return step_differences(ranks(launched["probe"]), reference(model)) + [
        f"train: {p}" for p in train_differences(two, one)]


def _probe(argv: list[str]) -> int:
    """Under torchrun: `ddp_step`, then ``train`` in the same process group."""
    import torch.distributed as dist

    from labs.retrieval.cli import main
    from labs.retrieval.distributed import ddp_step

    model, per_rank, probe_out, scale, data, run_out = argv[:6]
    dist.init_process_group("gloo")
    ddp_step(model, int(per_rank), probe_out, scale=float(scale), keep_group=True)
    return main(["train", "--data", data, "--out", run_out, "--model", model, "--batch-size", per_rank, *TRAIN])


if __name__ == "__main__":
    if "RANK" in os.environ:  # started by torchrun
        sys.exit(_probe(sys.argv[1:]))
    import torch

    found = check(Path(sys.argv[1]))
    print("\n".join(f"two processes on torch {torch.__version__}: {p}" for p in found) or "two processes agree with one")
    sys.exit(1 if found else 0)

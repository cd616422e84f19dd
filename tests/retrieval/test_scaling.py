"""Scaling: GradCache equals plain MNRL, accumulation is not a bigger batch, and 2 CPU processes
with gathered negatives equal one process holding the whole global batch.

The suite's one multi-process launch, ``torchrun --standalone --nproc_per_node 2`` (gloo backend,
``tools/platforms/ddp_probe.py``), runs one DDP step and then the ``train`` command on a tiny random BERT
built from a config (MiniLM's tokenizer, no download).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

import dataclasses

from labs.retrieval.config import TrainConfig
from labs.retrieval.training import train
from labs.retrieval.index import search
from labs.lessons.infonce import info_nce_rows, info_nce_torch
from labs.lessons.accumulation import accumulation_vs_true_batch
from labs.retrieval.scaling import (
    compare_cached, features_of, loss_and_grads, measure_step, scale_pairs, write_tiny_bert,
)
from labs.retrieval.loss import make_loss
from tools.platforms import ddp_probe

ROOT = Path(__file__).resolve().parents[2]
PER_RANK, WORLD, SCALE = ddp_probe.PER_RANK, ddp_probe.WORLD, ddp_probe.SCALE


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """One torch thread here: on a shared 2-core machine two threads spin against each other (10x slower)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tiny(tiny_bert) -> Path:
    return tiny_bert


def columns(n: int) -> list[list[str]]:
    rows = scale_pairs(n)
    return [[q for q, _ in rows], [d for _, d in rows]]


# ---- the pairs ------------------------------------------------------------------------------

def test_scale_pairs_are_distinct_and_reproducible():
    rows = scale_pairs(576)
    assert len({d for _, d in rows}) == 576 and len({q for q, _ in rows}) == 576
    assert scale_pairs(64) == scale_pairs(64) == rows[:64]
    assert scale_pairs(64, seed=1) != scale_pairs(64)


@pytest.mark.parametrize("n", [1, 577, 2.0, True])
def test_scale_pairs_bad_n(n):
    with pytest.raises(ValueError, match="n must be"):
        scale_pairs(n)


# ---- GradCache ------------------------------------------------------------------------------

def test_cached_loss_and_gradients_equal_plain_on_minilm(minilm):
    out = compare_cached(minilm, columns(10), mini_batch_size=4)  # chunks of 4, 4, 2
    assert out["loss_mnrl"] == pytest.approx(out["loss_cached"], rel=1e-5)
    assert out["max_abs_grad"] > 1e-3  # a real gradient, not zeros
    assert out["max_grad_gap"] < 1e-5 * out["max_abs_grad"] + 1e-8


def test_cached_equals_plain_for_several_chunk_sizes(tiny):
    model = SentenceTransformer(str(tiny), device="cpu", local_files_only=True)
    for mini in (1, 3, 12):
        out = compare_cached(model, columns(12), mini_batch_size=mini)
        assert out["loss_mnrl"] == pytest.approx(out["loss_cached"], rel=1e-5)
        assert out["max_grad_gap"] < 1e-5 * out["max_abs_grad"]


def test_a_different_batch_gives_a_different_gradient(tiny):
    """The comparison can fail: the same check on two different batches does not pass."""
    model = SentenceTransformer(str(tiny), device="cpu", local_files_only=True).eval()
    loss = make_loss(model, "mnrl")
    a = loss_and_grads(model, loss, features_of(model, columns(8)))
    b = loss_and_grads(model, loss, features_of(model, [c[::-1][:8] for c in columns(12)]))
    assert abs(a[0] - b[0]) > 1e-4 and (a[1] - b[1]).abs().max() > 1e-4


def test_bad_scaling_settings(tiny):
    model = SentenceTransformer(str(tiny), device="cpu", local_files_only=True)
    with pytest.raises(ValueError, match="columns"):
        features_of(model, [["only queries", "no documents"]])
    with pytest.raises(ValueError, match="columns"):
        features_of(model, [["a", "b"], ["c"]])
    with pytest.raises(ValueError, match="not empty"):
        write_tiny_bert(tiny)
    with pytest.raises(ValueError, match="kind"):
        measure_step("triplet")


# ---- accumulation vs a true batch -----------------------------------------------------------

def test_accumulation_is_four_small_exams_not_one_big_one():
    g = torch.Generator().manual_seed(0)
    q, d = torch.randn(64, 8, generator=g), torch.randn(64, 8, generator=g)
    d = d + 2 * q  # positives somewhat aligned, like a half-trained model
    out = accumulation_vs_true_batch(q, d, micro=16, scale=SCALE)
    qn, dn = torch.nn.functional.normalize(q.double(), dim=-1), torch.nn.functional.normalize(d.double(), dim=-1)
    blocks = [float(info_nce_torch(qn[i:i + 16], dn[i:i + 16], 1 / SCALE)) for i in range(0, 64, 16)]
    assert out["micro_losses"] == pytest.approx(blocks)
    assert out["accumulated_loss"] == pytest.approx(np.mean(blocks))
    # the true batch is sentence-transformers' MNRL on all 64 pairs
    mnrl = MultipleNegativesRankingLoss(torch.nn.Identity(), scale=SCALE)
    assert out["true_loss"] == pytest.approx(float(mnrl.compute_loss_from_embeddings([qn, dn], None)), rel=1e-9)
    assert out["true_loss"] > out["accumulated_loss"]
    assert out["rows_higher_in_true_batch"] == 64  # each row's softmax only gains terms
    assert (out["candidates_micro"], out["candidates_true"]) == (16, 64)
    assert out["chance_micro"] == pytest.approx(math.log(16)) and out["chance_true"] == pytest.approx(math.log(64))
    S = (qn @ dn.T).numpy()
    np.fill_diagonal(S, -np.inf)
    elsewhere = sum(int(S[i].argmax()) // 16 != i // 16 for i in range(64))
    assert out["hardest_negative_elsewhere"] == elsewhere
    assert out["true_rows_mean"] == pytest.approx(info_nce_rows((qn @ dn.T).numpy(), 1 / SCALE).mean())


def test_accumulation_bad_input():
    q = torch.zeros(64, 4)
    for micro in (5, 64, 1, True):
        with pytest.raises(ValueError, match="micro"):
            accumulation_vs_true_batch(q, q, micro=micro)
    with pytest.raises(ValueError, match="same shape"):
        accumulation_vs_true_batch(q, q[:32])
    with pytest.raises(ValueError, match="same shape"):
        accumulation_vs_true_batch(q.numpy(), q.numpy())


# ---- the memory measurement sees torch ------------------------------------------------------

PEAK_PROBE = """
import json, torch
from labs.retrieval.device import peak_rss_mib, reset_peak, status_kib
assert reset_peak()
before = status_kib("VmHWM")
x = torch.ones(64 * 2**20 // 4)  # 64 MiB, touched
during, probe = status_kib("VmHWM"), peak_rss_mib()
del x
print(json.dumps({"before": before, "during": during, "probe": probe, "reset": reset_peak(),
                  "after": status_kib("VmHWM")}))
"""


@pytest.mark.e2e  # a fresh process
@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="Linux /proc needed")
def test_peak_resident_memory_sees_a_torch_allocation_after_a_reset():
    """In a fresh process: a long-lived one may hand torch memory that is already resident."""
    from labs.retrieval.device import reset_peak

    if not reset_peak():
        pytest.skip("clear_refs not writable here")
    done = subprocess.run([sys.executable, "-c", PEAK_PROBE], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    r = json.loads(done.stdout)
    assert r["during"] - r["before"] > 60 * 1024
    assert r["probe"] == [pytest.approx(r["during"] / 1024, abs=1), "VmHWM"]
    assert r["reset"] and r["after"] - r["before"] < 32 * 1024


# ---- across processes -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def launch(tiny, data_dir, tmp_path_factory) -> dict:
    """The suite's one torchrun launch: 2 CPU processes (gloo) run `ddp_step`, then ``train``."""
    launched = ddp_probe.launch(tiny, data_dir, tmp_path_factory.mktemp("ddp"))
    assert launched["returncode"] == 0, launched["stderr"][-3000:]
    return launched


@pytest.mark.e2e
def test_two_processes_with_gathered_negatives_equal_one_process(tiny, launch):
    """torchrun, 2 CPU processes (gloo), B = 4 each: the one-process loss and gradients on all 8 pairs
    (the comparison the Colab twin makes on Colab's torch)."""
    ranks, ref = ddp_probe.ranks(launch["probe"]), ddp_probe.reference(tiny)
    assert ddp_probe.step_differences(ranks, ref) == []
    # the comparison can fail: against another batch's step, every number departs
    other = {**ref, "loss": ref["loss"] + 0.1, "grads": -ref["grads"], "rows": ref["rows"][::-1] + 0.1,
             "params_after": ref["params_after"] + 1e-3}
    assert len(ddp_probe.step_differences(ranks, other)) >= 5


@pytest.mark.e2e
def test_the_train_command_under_torchrun_trains_as_one_process(tiny, data_dir, launch, tmp_path):
    """The two-process ``train`` logs the losses of one process holding the whole global batch."""
    two = json.loads((launch["run"] / "metrics.json").read_text())
    one = ddp_probe.one_process_train(tiny, data_dir, tmp_path / "one")
    assert ddp_probe.train_differences(two, one) == []
    assert ddp_probe.train_differences(two, {**one, "losses": [x + 1e-3 for x in one["losses"]]})


def test_trainer_entry_writes_a_searchable_run_in_one_process(tiny, data_dir, tmp_path):
    config = TrainConfig(data=str(data_dir), out=str(tmp_path / "run"), model=str(tiny), epochs=1, batch_size=8,
                         max_steps=2)
    report = train(dataclasses.replace(config, loss="cached", mini_batch_size=3))
    assert report["steps"] == 2 and report["processes"] == 1 and report["global_batch"] == 8
    assert report["selected_epoch"] in (0, 1) and len(report["history"]) == 2
    assert len(search(tmp_path / "run", "How do I pause my Aster subscription?", k=3)) == 3
    with pytest.raises(ValueError, match="not empty"):
        dataclasses.replace(config)
    with pytest.raises(ValueError, match="holds every candidate negative"):  # one batch holds all 36 articles
        train(TrainConfig(data=str(data_dir), out=str(tmp_path / "r3"), model=str(tiny), batch_size=40,
                                      hard_negatives=True))
    assert not (tmp_path / "r3").exists() and not list(tmp_path.glob(".r3*"))  # nothing half-written left


@pytest.mark.e2e  # it reads the torchrun launch: unmarked, make unit launched torchrun a second time
def test_the_train_command_runs_unchanged_under_torchrun(launch):
    """`torchrun --nproc_per_node 2 -m labs train ...`: DDP on gloo, a searchable run folder from rank 0."""
    assert launch["stdout"].count("selected epoch") == 1  # only rank 0 reports
    metrics = json.loads((launch["run"] / "metrics.json").read_text())
    assert metrics["processes"] == WORLD and metrics["global_batch"] == WORLD * 4 and metrics["steps"] == 2
    assert metrics["gather_across_devices"] is True and [h["epoch"] for h in metrics["history"]] == [0, 1]
    assert len(search(launch["run"], "How do I pause my Aster subscription?", k=3)) == 3

"""Started by tests/retrieval/test_scaling.py under ``torchrun --nproc_per_node 2`` (gloo, CPU): the whole
suite's one multi-process launch. First `labs.retrieval.distributed.ddp_step` (loss and gradients of one
DDP step with gathered negatives, saved per rank), then ``python -m labs train`` in the same
process group, exactly as a user's ``torchrun -m labs train`` runs it.

    torchrun --standalone --nproc_per_node 2 tests/retrieval/ddp_probe.py MODEL PER_RANK PROBE_OUT SCALE DATA RUN_OUT
"""

import sys

import torch.distributed as dist

from labs.retrieval.cli import main
from labs.retrieval.distributed import ddp_step

if __name__ == "__main__":
    model, per_rank, probe_out, scale, data, run_out = sys.argv[1:7]
    dist.init_process_group("gloo")
    ddp_step(model, int(per_rank), probe_out, scale=float(scale), keep_group=True)
    sys.exit(main(["train", "--data", data, "--out", run_out, "--model", model, "--epochs", "1",
                   "--batch-size", "4", "--max-steps", "2"]))

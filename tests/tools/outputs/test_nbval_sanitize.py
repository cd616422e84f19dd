"""The nbval sanitizer (tools/outputs/nbval_sanitize.cfg) hides timings and addresses, and nothing else."""

from __future__ import annotations

import pytest

from tools.outputs.spread import sanitize


@pytest.mark.parametrize("shown, expected", [
    ("one step took 2.5 s", "one step took TIME"),
    ("encode: 340 ms per batch", "encode: TIME per batch"),
    ("executed in 12.0 seconds", "executed in TIME"),
    ("1 second", "TIME"),
    ("done in 0.25s, then 3.0ms", "done in TIME, then TIME"),
    ("<Figure at 0x7f3a2b1c>", "<Figure at 0xADDR>"),
    (" 45%|#####     | 9/20", " PROGRESS"),
    *[(text, text) for text in (  # left alone
        "unseen 3s were read as: 3x 'one'", "the 3s and 8s score 0%", "in 12 steps, 300 samples",
        "loss 2.45, share 0.95", "tau = 0.05 seeds 0..9", "Qwen3-Embedding-0.6B at 128 tokens", "scale s = 20")],
])
def test_timings_and_addresses_are_hidden_and_nothing_else(shown, expected):
    assert sanitize(shown) == expected

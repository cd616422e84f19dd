"""Progress of a long job: quiet bars under TQDM_DISABLE, and named stages a test can hook."""

from __future__ import annotations

import os

__all__ = ["show_progress", "progress", "stage"]


def show_progress() -> bool:
    """Progress bars on, unless TQDM_DISABLE is set (CI and nbval set it)."""
    return os.environ.get("TQDM_DISABLE", "").lower() not in ("1", "true", "yes")


def progress(items, desc: str):
    """``items`` wrapped in a tqdm bar (hidden under TQDM_DISABLE)."""
    from tqdm.auto import tqdm

    return tqdm(items, desc=desc, disable=not show_progress(), leave=False)


def stage(name: str) -> None:
    """Mark a named stage of a long job (``python -m labs train`` marks each); logged at debug level.

    Tests replace it to interrupt a run at a chosen stage.
    """
    import logging

    logging.getLogger("labs").debug("stage: %s", name)

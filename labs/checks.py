"""Answer checks for every exercise in the course, in one place.

Each check takes the reader's answer and prints "Right: ..." or a hint that
says how the answer is wrong, never the answer itself; it returns True or
False. The checks live beside the code of their topic; this module gathers
them so a reader (or a test) can find all of them:

>>> from labs.checks import EXERCISES
>>> sorted(EXERCISES)  # doctest: +NORMALIZE_WHITESPACE
['01_pooling', '02_infonce', '03_temperature', '04_hard_negatives', '05_finetuning', '06_clip',
 '07_beyond_one_vector']
"""

from __future__ import annotations

from collections.abc import Callable

from labs.clip import check_steps_to_90, check_uniform_table_loss
from labs.clip_digits import check_false_negative_floor
from labs.duplicates import check_duplicate_floor, check_twin_push
from labs.finetune_checks import check_chance_loss, check_first_jump, check_kept_epoch
from labs.hard_negatives_checks import check_best_in_batch
from labs.infonce import check_best_cell
from labs.margin_toy import check_pull, check_push
from labs.pooling import check_padding_safe_mode, check_unmasked_mean
from labs.rerank import (
    check_cross_encoder_reason,
    check_rerank_ceiling,
    check_short_vector_bytes,
    check_smallest_shortlist,
)
from labs.temperature import check_scale_for_tau, check_share_threshold, check_sharper_tau

EXERCISES: dict[str, list[Callable[..., bool]]] = {
    "01_pooling": [check_unmasked_mean, check_padding_safe_mode],
    "02_infonce": [check_best_cell, check_duplicate_floor, check_twin_push],
    "03_temperature": [check_sharper_tau, check_share_threshold, check_scale_for_tau],
    "04_hard_negatives": [check_pull, check_push, check_best_in_batch],
    "05_finetuning": [check_kept_epoch, check_first_jump, check_chance_loss],
    "06_clip": [check_uniform_table_loss, check_steps_to_90, check_false_negative_floor],
    "07_beyond_one_vector": [
        check_short_vector_bytes,
        check_cross_encoder_reason,
        check_smallest_shortlist,
        check_rerank_ceiling,
    ],
}

__all__ = ["EXERCISES"] + sorted({check.__name__ for checks in EXERCISES.values() for check in checks})

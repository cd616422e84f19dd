"""The name-first spelling of four `labs.checks` words, kept for two modules whose bytes cannot change.

In plain terms: ``labs/retrieval/metrics.py`` and ``labs/retrieval/docs_corpus.py`` made the
real-data experiment's committed results, and those results record the SHA-256 of both files
(``benchmarks/docs_experiment.py``, ``CODE_FILES``). They call ``validate.ids(name, value)`` and
its like, the order the tool once used, so these four names stay here for them, each one
`labs.checks`' word with its arguments in that order (the same refusals, word for word). Nothing
else imports this module (tests/test_checks.py holds that): every other check in the tool is
``checks.WORD(value, name)``, and the machine side is `labs.retrieval.machine`.
"""

from __future__ import annotations

from labs import checks

__all__: list[str] = []  # not for new code: see the module's docstring


def integer(name: str, value, minimum: int = 0, maximum: int | None = None) -> int:
    return checks.integer(value, name, minimum, maximum)


def ids(name: str, values) -> list[str]:
    return checks.ids(values, name)


def scores(name: str, value, ndim: int = 2):
    return checks.table(value, name, train_with=None, ndim=ndim)


def texts(name: str, values) -> list[str]:
    return checks.texts(values, name, "a list of texts")

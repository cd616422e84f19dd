"""labs: the small, tested package behind the course's notebooks, in three wings on one floor.

- `labs.checks`: the ground floor, one vocabulary of argument checks (numbers, tables, texts,
  temperatures, unit rows) that both wings below check with. It imports nothing of `labs`.
- `labs.lessons`: the lessons' code, one module per idea (pooling, InfoNCE, temperature, the
  hard-negative bi-encoder, mining, CLIP, rerank). It imports `labs.checks` and no other wing.
- `labs.retrieval`: the retrieval tool behind ``python -m labs``: data, model, batches, training,
  metrics, the index and its contract, the command line. It imports `labs.checks` and no lesson.
- `labs.classroom`: the course furniture: ``setup()``, sliders that also work in the static
  book, every exercise's answer check, the real-data experiment's results.

Import each name from the module that defines it, for example
``from labs.lessons.infonce import info_nce``. Benchmarks live outside the package, in
``benchmarks/``.
"""

__version__ = "0.1.0"

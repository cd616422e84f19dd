"""The real-data experiment's results, shipped with the package (data only, no code).

``docs_experiment.json``: every arm's test scores with 95% intervals, the paired differences, the
mining and its hand audit, versions and hashes. ``docs_ranks.json``: per test query, the rank of
its answer under every system and every trained run. Both are written here by
``benchmarks/docs_experiment.py``; `labs.classroom.results` reads them for the lessons.
"""

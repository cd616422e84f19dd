"""The retrieval tool behind ``python -m labs``: fine-tune an embedding model on your own
query/document data, choose it on validation, index, search and evaluate.

Data flows one way: `data` (the three JSONL files) -> `models` (the encoder) -> `batches`
-> `training` (the loss, the optimizer, the one training path) -> `metrics` -> `index` and
`contract` (the run folder) -> `cli`. Nothing here imports a lesson or the course furniture.
"""

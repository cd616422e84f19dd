"""labs: the small, tested helpers behind the course notebooks.

One module per topic, each readable in one sitting. By lesson:

1. Pooling: `labs.pooling` (the packaged all-MiniLM-L6-v2 loader; mean, CLS and last-token pooling;
   the lesson's 80-article search set, `help_articles` and `help_questions`).
2. InfoNCE by hand: `labs.infonce` (the loss, its symmetric form, the positive's softmax share,
   the masked form), `labs.duplicates` (an exact copy of the right card against a distinct twin).
3. Temperature: `labs.temperature` (the gradient on the positive; training at several temperatures).
4. Hard negatives: `labs.margin_toy` (pull and push in 2-D), `labs.hard_negatives` (the
   bag-of-words bi-encoder with hand-derived gradients; its slider exercise in
   `labs.hard_negatives_checks`), `labs.mining` (BM25 and embedding mining).
5. Fine-tuning: `labs.helpdesk` (fixture and JSONL checks), `labs.metrics` (Recall@k, MRR@k,
   nDCG@k, TF-IDF and BM25), `labs.qwen3` (the Qwen3-Embedding assembly), `labs.gpu`
   (determinism, precision), `labs.encoder` (load with float32 weights, loss, optimizer, one
   step by hand, save), `labs.finetune` (batches and the one training path, with selection;
   its exercise checks in `labs.finetune_checks`), `labs.index` (encoding and search),
   `labs.contract` (the index contract). Scaling out:
   `labs.scaling` (GradCache, accumulation) and `labs.distributed` (DDP).
6. CLIP: `labs.clip` (the toy), `labs.clip_digits` (digits with a frozen text tower) and
   `labs.clip_batches` (batch samplers, the false-negative floor).
7. Beyond one vector: `labs.rerank` (the cross-encoder trained here, shortlist, rerank,
   retrieve-then-rerank, the helmet and rule data).

`labs.checks` gathers every exercise's answer check. The command line is `labs.cli`
(``python -m labs``); `labs.plumbing` holds what every command shares (offline set-up, output
folders, argument checks, memory probes, progress). Benchmarks live outside the package:
``python benchmarks/<name>.py`` (see the README).
Import what you need from the module itself, for example ``from labs.infonce import info_nce``.
"""

__version__ = "0.1.0"

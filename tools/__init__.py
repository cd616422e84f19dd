"""The course's machinery (not part of the `labs` package), in four parts (tools/README.md):
run from the repository root as ``python -m tools.PART.NAME``."""

"""The book's build tooling (not part of the `labs` package): run from the repository root as
``python -m tools.NAME``."""

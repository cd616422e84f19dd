"""The lessons' code: what a notebook imports to show an idea, one module per idea.

Pure functions on numpy arrays and torch tensors, each checked against its library
equivalent in the tests. Nothing here imports the retrieval tool (`labs.retrieval`) or
the course furniture (`labs.classroom`); a function that needs a model takes it as an
argument.
"""

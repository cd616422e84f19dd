"""labs: the small, tested helpers behind the course notebooks.

One module per topic, each readable in one sitting:

- `labs.infonce`: the InfoNCE loss, its symmetric (CLIP) form, the positive's softmax share.
- `labs.temperature`: a tiny retriever trained at several temperatures.

Later topics add their own modules. Import what you need from the module itself,
for example ``from labs.infonce import info_nce``.
"""

__version__ = "0.1.0"

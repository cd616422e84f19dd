"""The help-desk retrieval fixture: sixty short articles for ten made-up products.

In plain words: six article kinds per product, three differently worded questions per
article, and the products split 6/2/2 into train, validation and test. It is a *wiring
fixture*: every product shares the same templates, so it shows that the code runs end to
end and lets a reader see learning happen; it is not a benchmark. Product names come in
look-alike pairs (Aster/Astra, Iris/Irix, ...) and the article kinds come in look-alike
pairs (changing vs resetting a password, cancelling vs pausing a plan, exporting vs
importing data), so no baseline is perfect on every metric.

`make_helpdesk` builds it in memory in the format of `labs.retrieval.data`;
`labs.retrieval.data.write_dataset` writes it as the three JSONL files.
"""

from __future__ import annotations

from labs.retrieval.data import RetrievalData

__all__ = ["PRODUCTS", "KINDS", "make_helpdesk"]


# Ten products in look-alike pairs; the first six train, then two validate, two test.
PRODUCTS = ("Aster", "Astra", "Nova", "Novo", "Lumen", "Lumo", "Iris", "Irix", "Orbit", "Orbis")


PRODUCT_SPLIT = dict(zip(PRODUCTS, ["train"] * 6 + ["val"] * 2 + ["test"] * 2))


# kind -> (title, menu, action, three question templates). {p} is the product name.
KINDS: dict[str, tuple[str, str, str, tuple[str, str, str]]] = {
    "password": (
        "change the password", "Security", "Change password",
        ("How do I change the password in {p}?",
         "In {p}, I want a new secret for signing in.",
         "{p}: swap my login phrase for a fresh one"),
    ),
    "reset": (
        "reset a forgotten password", "Security", "Send reset link",
        ("I forgot my {p} password, how do I get back in?",
         "{p} locked me out and I cannot remember my login phrase.",
         "In {p}, recover access without knowing my current secret"),
    ),
    "cancel": (
        "cancel a subscription", "Billing", "Cancel renewal",
        ("How do I cancel my subscription to {p}?",
         "In {p}, I need to stop future renewals.",
         "{p}: end my plan for good"),
    ),
    "pause": (
        "pause a subscription", "Billing", "Pause plan",
        ("How do I pause my {p} subscription?",
         "In {p}, I want a break from paying for a month or two.",
         "{p}: put my plan on hold but keep my account"),
    ),
    "export": (
        "export your data", "Data", "Download archive",
        ("How do I export my data from {p}?",
         "In {p}, I want a copy of everything I stored.",
         "{p}: take my files with me to another tool"),
    ),
    "import": (
        "import data from another tool", "Data", "Upload file",
        ("How do I import data into {p}?",
         "In {p}, bring in the files I kept in my old tool.",
         "{p}: move my records over from a spreadsheet"),
    ),
}


# Each product names its settings area differently, so articles are not identical across products.
_AREAS = ("Account", "Settings", "Profile", "Workspace", "Preferences")


def _slug(name: str) -> str:
    return name.lower().replace(" ", "-")


def make_helpdesk() -> RetrievalData:
    """Build the fixture: 60 articles, 180 queries, 108 training pairs (36 distinct positives)."""
    corpus, queries, pairs = [], [], []
    for n, product in enumerate(PRODUCTS):
        split, area = PRODUCT_SPLIT[product], _AREAS[n % len(_AREAS)]
        for kind, (title, menu, action, templates) in KINDS.items():
            doc_id = f"{_slug(product)}-{kind}"
            text = f"{product}: How to {title}. Open {area} then {menu} and choose {action}."
            corpus.append({"doc_id": doc_id, "text": text, "group": product, "split": split})
            for v, template in enumerate(templates):
                question = template.format(p=product)
                queries.append({"query_id": f"{doc_id}-q{v}", "text": question,
                                "relevant_doc_ids": [doc_id], "split": split})
                if split == "train":
                    pairs.append({"query": question, "positive": text, "doc_id": doc_id, "group": product})
    return RetrievalData(corpus, queries, pairs)

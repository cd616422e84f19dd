"""The help-desk retrieval fixture: sixty short articles for ten made-up products.

In plain words: six article kinds per product, three differently worded questions per
article, and the products split 6/2/2 into train, validation and test. It is a *wiring
fixture*: it shows that the code runs end to end and lets a reader see learning happen; it is
not a benchmark.

The split rule: a product's articles and questions stay in one split, and the test questions
are worded apart. Training and validation questions come from the same three templates per
article kind (`KINDS`), filled in with other products' names, so validation measures how a
model handles new products asked the familiar way. The test questions come from three other
templates per kind (`TEST_QUESTIONS`), used by no training or validation question, so reading
the test once measures something validation did not: new products asked in new words. Product names come in
look-alike pairs (Aster/Astra, Iris/Irix, ...) and the article kinds come in look-alike
pairs (changing vs resetting a password, cancelling vs pausing a plan, exporting vs
importing data), so no baseline is perfect on every metric.

`make_helpdesk` builds it in memory in the format of `labs.retrieval.data`;
`labs.retrieval.data.write_dataset` writes it as the three JSONL files.
"""

from __future__ import annotations

from labs.retrieval.data import RetrievalData

__all__ = ["PRODUCTS", "KINDS", "TEST_QUESTIONS", "make_helpdesk"]


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


# The test products' questions: three more templates per kind, worded apart from the three above
# (other verbs, other sentence shapes), so no test question is a training or validation question
# with another product name. {p} is the product name.
TEST_QUESTIONS: dict[str, tuple[str, str, str]] = {
    "password": ("Where can I pick a different password for my {p} account?",
                 "My {p} password is old; what are the steps to replace it?",
                 "Is there a way to update the credentials I use to log into {p}?"),
    "reset": ("Can't sign in to {p} because the password slipped my mind. Help?",
              "What should I do if I no longer know my {p} password?",
              "Need to regain entry to {p}; the old password is gone from memory."),
    "cancel": ("Please help me terminate my {p} membership so it never charges again.",
               "Which button stops {p} billing me every month, permanently?",
               "I'd like to quit {p} and close out the paid plan entirely."),
    "pause": ("Can I freeze my {p} billing for a while without losing anything?",
              "Is it possible to suspend payments on {p} temporarily?",
              "Going travelling: how can {p} stop charging me until I return?"),
    "export": ("How can I get a backup of all my {p} content onto my computer?",
               "Is there a way to save everything in {p} as a file I can keep?",
               "Before I leave {p}, how do I pull out all my information?"),
    "import": ("Can {p} read in a CSV from the app I used before?",
               "What's the way to load my existing records into {p}?",
               "I'm switching to {p}; how do my old entries get into it?"),
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
            for v, template in enumerate(TEST_QUESTIONS[kind] if split == "test" else templates):
                question = template.format(p=product)
                queries.append({"query_id": f"{doc_id}-q{v}", "text": question,
                                "relevant_doc_ids": [doc_id], "split": split})
                if split == "train":
                    pairs.append({"query": question, "positive": text, "doc_id": doc_id, "group": product})
    return RetrievalData(corpus, queries, pairs)

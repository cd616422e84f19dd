"""A small labelled search set: ten products, eight look-alike help articles each, four question wordings.

`help_articles` gives the 80 articles and their ids; `help_questions` gives (question, article id)
pairs for chosen products and wordings: wording 0 names the product and reuses the article's
words; 1 and 2 use another name for the product and other words; 3 is a wording kept out of every
training run (the lesson beyond one vector tests on it).

`search_articles` is the set a reader searches at the start of lesson 1 (in the kernel and in the
book's page): the 80 articles, three account articles and two rules that differ by one "not".
`SEARCH_EXAMPLES` are its one-click questions, each with the article that answers it: one the
model gets right, and two it gets wrong in the ways the course explains (a look-alike that shares
the question's words, and a negation).

Lessons: ``notebooks/01_pooling.ipynb`` and ``notebooks/10_beyond_one_vector.ipynb``.
"""

from __future__ import annotations

from labs.checks import indices, require, texts

__all__ = ["PRODUCTS", "ARTICLE_KINDS", "EXTRA_ARTICLES", "SEARCH_EXAMPLES", "help_articles", "help_questions",
           "search_articles"]


#: product -> another name for it (used by the harder question wordings)
PRODUCTS: dict[str, str] = {
    "router": "wifi box", "printer": "inkjet", "kettle": "water boiler",
    "thermostat": "heating control", "e-reader": "ebook device",
    "headphones": "headset", "camera": "photo gear",
    "robot vacuum": "cleaning robot", "smartwatch": "fitness watch",
    "scooter": "e-bike",
}


#: article kind -> (article template, four question templates); {p} product, {s} its other name
ARTICLE_KINDS: dict[str, tuple[str, list[str]]] = {
    "reset": (
        "To restore the factory settings of the {p}, hold the reset button for ten seconds "
        "until the light blinks.",
        ["how do I factory reset my {p}", "wipe the {s} back to how it came out of the box",
         "my {s} acts weird, can I start over from scratch",
         "I want the {s} like new again, settings and all"]),
    "update": (
        "The {p} installs new firmware from the settings menu; keep it plugged in while the "
        "update runs.",
        ["how to update the firmware on the {p}", "is there a newer software version for my {s}",
         "get the latest system on the {s}", "does the {s} need a software patch"]),
    "battery": (
        "If the {p} does not charge, try another cable and clean the charging port before "
        "asking for a repair.",
        ["my {p} won't charge", "the {s} stays dead after a night on the cable",
         "power never goes up on my {s}", "plugged the {s} in all night and it is still empty"]),
    "connect": (
        "Pair the {p} with your phone by opening the app and holding the connect button until "
        "it appears.",
        ["how do I pair the {p} with my phone", "link the {s} to the mobile app",
         "my mobile can't see the {s}", "my {s} and my phone won't talk to each other"]),
    "warranty": (
        "The {p} is covered for two years; send the receipt with your claim to get a "
        "replacement.",
        ["what is the warranty on the {p}", "will they swap my broken {s} for free",
         "how long is the {s} guaranteed", "who pays if my {s} breaks in the first year"]),
    "cleaning": (
        "Wipe the {p} with a dry soft cloth; never put it under running water or use solvents.",
        ["how should I clean my {p}", "can I rinse the {s} in the sink",
         "getting dust and grime off the {s}", "best way to get the {s} spotless"]),
    "noise": (
        "A buzzing or clicking {p} usually has a loose part; tighten the back panel screws.",
        ["my {p} makes a strange noise", "the {s} is buzzing loudly",
         "weird rattling sound from the {s}", "the {s} sounds like something came loose"]),
    "return": (
        "You can return an unused {p} within thirty days in its original box for a full refund.",
        ["can I return the {p}", "I want my money back for the {s}",
         "sending the {s} back to the shop", "changed my mind about the {s} I bought last week"]),
}


def help_articles() -> tuple[list[str], list[str]]:
    """The 80 articles and their ids ("product/kind"), products in order, kinds in order."""
    docs, ids = [], []
    for product in PRODUCTS:
        for kind, (article, _) in ARTICLE_KINDS.items():
            docs.append(article.format(p=product))
            ids.append(f"{product}/{kind}")
    return docs, ids


def _products(products, name: str) -> list[str]:
    """A non-empty list of names of `PRODUCTS`."""
    products = texts(products, name)
    require(products, f"{name} must name at least one product; choose from {list(PRODUCTS)}")
    require(set(products) <= set(PRODUCTS), lambda: f"{name}: unknown {[p for p in products if p not in PRODUCTS]}; "
            f"choose from {list(PRODUCTS)}")
    return products


def help_questions(products: list[str], variants: tuple[int, ...] = (1, 2)) -> list[tuple[str, str]]:
    """(question, id of its article) for ``products`` and question ``variants`` (0 to 3).

    Ordered by variant, then product, then article kind.
    """
    products = _products(products, "products")
    variants = indices(variants, "variants", 4, "a non-empty tuple of 0, 1, 2, 3", distinct=False)
    return [(ARTICLE_KINDS[kind][1][v].format(p=p, s=PRODUCTS[p]), f"{p}/{kind}")
            for v in variants for p in products for kind in ARTICLE_KINDS]


#: id -> text of the articles the search set adds to the 80: how to get back in, a password policy
#: that shares the words "password" and "reset" with that question, a lock-out rule, and two rules
#: that differ by one "not".
EXTRA_ARTICLES: dict[str, str] = {
    "account/reset-steps": "Can't sign in? Click 'Forgot password' on the login screen, open the email we "
                           "send you and pick a new one.",
    "account/password-policy": "When is my password reset? Passwords are reset every ninety days; a new one "
                               "needs twelve characters.",
    "account/locked": "After five wrong sign-in attempts, the account is locked for fifteen minutes.",
    "rules/helmet-must": "Riders under 16 must wear a helmet.",
    "rules/helmet-must-not": "Riders under 16 must not wear a helmet.",
}

#: (question, id of the article that answers it): one the packaged MiniLM ranks right, one where
#: the password policy outranks the steps, one where the negated rule outranks the rule.
SEARCH_EXAMPLES: tuple[tuple[str, str], ...] = (
    ("how do I factory reset my router", "router/reset"),
    ("how do I reset my password?", "account/reset-steps"),
    ("Do riders under 16 have to take their helmet off?", "rules/helmet-must"),
)


def search_articles() -> tuple[list[str], list[str]]:
    """The lesson-1 search set: the 80 help articles, then `EXTRA_ARTICLES`, and their ids (85 each)."""
    docs, ids = help_articles()
    return docs + list(EXTRA_ARTICLES.values()), ids + list(EXTRA_ARTICLES)

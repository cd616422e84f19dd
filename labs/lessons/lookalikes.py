"""The look-alike set: "how do I X" questions, the steps that answer them, and a look-alike each.

In plain words: each topic is one task on an account or an order ("change my email address",
"cancel my subscription"). Its questions ask how to do it, in five wordings. Its *steps* article
answers them, in the words of the screen ("open Settings > Profile, press 'Edit contact'")
rather than the question's. Its *look-alike* repeats the question's words and answers another
question: a policy ("When is my subscription cancelled? ..."), a limit ("How often can I ..."),
a schedule ("What time is ...") or a permission ("Who is allowed to ..."). A model that matches
words ranks the look-alike first; a model that knows what "how do I" asks for ranks the steps
first. Lesson 1's own pair ("how do I reset my password?", the reset steps and the password
policy, `labs.lessons.help_articles.EXTRA_ARTICLES`) is one topic here, word for word.

The topics are split whole: `TRAIN` topics are for training, `VALIDATION` topics for choosing a
checkpoint, `HELD_OUT` topics (lesson 1's password topic among them) are never trained on and
make the exam. No question, article or object of a held-out topic appears in another split.

Shapes
------
===============  =================  ====================================================
name             shape              meaning
===============  =================  ====================================================
`Topic`          one task           verb, object, where the steps start, look-alike kind
`questions`      T x 5 strings      every wording of each of T topics
`triples`        n rows             (question, steps, look-alike, topic key)
`exam_pool`      2 T articles       the steps and look-alikes of T topics, with their keys
===============  =================  ====================================================

Relations: the untouched all-MiniLM-L6-v2 (`labs.retrieval.models.load_minilm`) ranks many
held-out look-alikes above their steps; `labs.lessons.adapter` trains a query-side adapter on
the training triples, with and without the look-alike as an extra negative, and
``benchmarks/lookalike_experiment.py`` measures both arms and the whole model's fine-tune
(`retrieval_rows` writes the set in `labs.retrieval.data`'s format). The bag-of-words toy
version of the same question is `labs.lessons.hard_negatives`.

Lesson: ``notebooks/05_hard_negatives.ipynb``.
"""

from __future__ import annotations

from dataclasses import dataclass

from labs.checks import choice, require, texts
from labs.lessons.help_articles import EXTRA_ARTICLES

__all__ = ["Topic", "TOPICS", "KINDS", "QUESTION_TEMPLATES", "TRAIN", "VALIDATION", "HELD_OUT", "PASSWORD",
           "PASSWORD_QUESTION", "SPLITS", "topic", "questions", "steps", "look_alike", "triples", "exam_pool",
           "split_of", "retrieval_rows"]


@dataclass(frozen=True)
class Topic:
    """One task: "how do I {verb} my {obj}?", answered by opening ``where`` and pressing ``button``.

    ``pp`` is the verb's past participle ("cancelled"); ``kind`` picks the look-alike's question.
    """

    key: str
    verb: str
    obj: str
    pp: str
    where: str
    button: str
    kind: str


#: the five wordings of every topic's question; wording 0 of the password topic is lesson 1's question
QUESTION_TEMPLATES: tuple[str, ...] = (
    "how do I {verb} my {obj}?",
    "how can I {verb} my {obj}",
    "I want to {verb} my {obj}, how?",
    "steps to {verb} my {obj}",
    "help me {verb} my {obj}",
)

#: look-alike kind -> its article: the question's words, then an answer to another question
KINDS: dict[str, str] = {
    "policy": "When do I have to {verb} my {obj}? Every {obj} must be {pp} once a year; we remind you a "
              "week before.",
    "limit": "How often can I {verb} my {obj}? You can {verb} your {obj} at most three times a year; after "
             "that a manager must approve it.",
    "schedule": "What time of day can I {verb} my {obj}? We {verb} each {obj} overnight, between 2 and 4 "
                "am, on weekdays only.",
    "permission": "Who is allowed to {verb} my {obj}? Only the account owner or an administrator may "
                  "{verb} a {obj}.",
}

#: the steps article: where to go and what to press, in the screen's words
STEPS_TEMPLATE = "Open {where}, select your {obj} and press '{button}'; a confirmation email follows."

_ROWS = (  # key, verb, object, past participle, where, button, look-alike kind
    ("password", "reset", "password", "reset", "", "", "policy"),  # lesson 1's pair, word for word
    ("email", "change", "email address", "changed", "Settings > Profile", "Edit contact", "limit"),
    ("subscription", "cancel", "subscription", "cancelled", "Billing", "End plan", "policy"),
    ("card", "update", "payment card", "updated", "Billing > Wallet", "Replace", "permission"),
    ("account", "delete", "account", "deleted", "Settings > Privacy", "Close for good", "schedule"),
    ("membership", "renew", "membership", "renewed", "Membership", "Extend", "policy"),
    ("domain", "transfer", "domain", "transferred", "Domains", "Move out", "permission"),
    ("contacts", "export", "contacts", "exported", "People", "Download as CSV", "schedule"),
    ("order", "refund", "order", "refunded", "Orders", "Money back", "limit"),
    ("plan", "upgrade", "plan", "upgraded", "Billing > Plans", "Compare tiers", "permission"),
    ("phone", "verify", "phone number", "verified", "Settings > Security", "Send code", "limit"),
    ("sim", "unlock", "SIM card", "unlocked", "Mobile > Network", "Free the device", "permission"),
    ("workspace", "rename", "workspace", "renamed", "Workspace > General", "Edit title", "limit"),
    ("photos", "back up", "photos", "backed up", "Gallery > Cloud", "Keep a copy", "schedule"),
    ("files", "restore", "deleted files", "restored", "Drive > Bin", "Put back", "policy"),
    ("calendar", "share", "calendar", "shared", "Calendar > Access", "Invite people", "permission"),
    ("delivery", "pause", "delivery", "paused", "Deliveries", "Skip weeks", "limit"),
    ("appointment", "reschedule", "appointment", "rescheduled", "Bookings", "Pick another slot", "policy"),
    ("giftcard", "activate", "gift card", "activated", "Wallet > Gifts", "Enter the code", "schedule"),
    ("invoice", "download", "invoice", "downloaded", "Billing > History", "Save PDF", "permission"),
    ("username", "change", "username", "changed", "Settings > Profile", "Edit handle", "limit"),
    ("pin", "reset", "PIN", "reset", "Cards > Security", "New code", "policy"),
    ("lostcard", "replace", "lost card", "replaced", "Cards", "Report and reorder", "limit"),
    ("savings", "close", "savings account", "closed", "Accounts", "Wind down", "schedule"),
    ("flight", "book", "flight", "booked", "Trips > Search", "Reserve seat", "permission"),
    ("booking", "cancel", "hotel booking", "cancelled", "Trips > Stays", "Call it off", "policy"),
    ("parcel", "return", "parcel", "returned", "Orders > Returns", "Print label", "limit"),
    ("package", "track", "package", "tracked", "Orders > Shipping", "Where is it", "schedule"),
    ("address", "change", "delivery address", "changed", "Settings > Addresses", "Edit location", "policy"),
    ("tax", "update", "tax details", "updated", "Billing > Tax", "Edit company info", "permission"),
    ("books", "renew", "library books", "renewed", "Loans", "Keep longer", "limit"),
    ("newsletter", "stop", "newsletter", "stopped", "Settings > Mail", "No more emails", "schedule"),
    ("twofactor", "enable", "two-factor login", "enabled", "Settings > Security", "Add a second step",
     "permission"),
    ("bank", "link", "bank account", "linked", "Wallet > Banks", "Connect", "policy"),
    ("tracker", "sync", "fitness tracker", "synced", "Devices", "Pair now", "schedule"),
    ("hacked", "recover", "hacked account", "recovered", "the sign-in page", "Get help", "permission"),
    ("warranty", "claim", "warranty", "claimed", "Support > Repairs", "Start a repair", "limit"),
    ("seat", "change", "seat", "changed", "Trips > Seats", "Seat map", "policy"),
    ("trial", "extend", "free trial", "extended", "Billing > Trial", "More days", "limit"),
    ("bill", "split", "bill", "split", "Payments > Groups", "Divide", "permission"),
    ("balance", "top up", "prepaid balance", "topped up", "Wallet", "Add money", "schedule"),
    ("boarding", "print", "boarding pass", "printed", "Trips > Check-in", "Get the PDF", "policy"),
    ("vehicle", "register", "vehicle", "registered", "Garage", "Add a car", "permission"),
    ("debit", "cancel", "direct debit", "cancelled", "Payments > Mandates", "Revoke", "schedule"),
    ("documents", "upload", "documents", "uploaded", "Files > Inbox", "Add from device", "limit"),
    ("electricity", "pay", "electricity bill", "paid", "Utilities > Power", "Settle now", "schedule"),
    ("storage", "increase", "cloud storage", "increased", "Drive > Space", "Get more room", "policy"),
    ("profile", "hide", "profile", "hidden", "Settings > Visibility", "Go private", "permission"),
)
TOPICS: dict[str, Topic] = {row[0]: Topic(*row) for row in _ROWS}

PASSWORD = "password"
PASSWORD_QUESTION = "how do I reset my password?"

#: held-out topics (the exam): lesson 1's password topic and fifteen more, all four kinds
HELD_OUT: tuple[str, ...] = ("password", "card", "contacts", "sim", "files", "giftcard", "pin", "savings",
                             "booking", "package", "books", "bank", "warranty", "bill", "vehicle", "storage")
#: validation topics (choosing a checkpoint of the whole model's fine-tune)
VALIDATION: tuple[str, ...] = ("email", "domain", "photos", "flight", "tracker", "boarding")
#: training topics: all the others
TRAIN: tuple[str, ...] = tuple(k for k in TOPICS if k not in HELD_OUT + VALIDATION)
SPLITS: dict[str, tuple[str, ...]] = {"train": TRAIN, "val": VALIDATION, "test": HELD_OUT}


def topic(key: str) -> Topic:
    """The topic named ``key`` (one of `TOPICS`)."""
    return TOPICS[choice(key, "key", tuple(TOPICS))]


def split_of(key: str) -> str:
    """"train", "val" or "test": the split that holds topic ``key``."""
    key = topic(key).key
    return next(name for name, keys in SPLITS.items() if key in keys)


def questions(key: str) -> list[str]:
    """The five wordings of topic ``key``'s question, in `QUESTION_TEMPLATES` order."""
    t = topic(key)
    return [q.format(verb=t.verb, obj=t.obj) for q in QUESTION_TEMPLATES]


def steps(key: str) -> str:
    """The article that answers topic ``key``'s questions (lesson 1's reset steps for the password)."""
    t = topic(key)
    if t.key == PASSWORD:
        return EXTRA_ARTICLES["account/reset-steps"]
    return STEPS_TEMPLATE.format(where=t.where, obj=t.obj, button=t.button)


def look_alike(key: str) -> str:
    """Topic ``key``'s look-alike: its question's words, another question's answer (lesson 1's password
    policy for the password)."""
    t = topic(key)
    if t.key == PASSWORD:
        return EXTRA_ARTICLES["account/password-policy"]
    return KINDS[t.kind].format(verb=t.verb, obj=t.obj, pp=t.pp)


def _keys(keys, name: str) -> list[str]:
    keys = texts(keys, name, "a list of topic keys")
    require(keys, f"{name} must name at least one topic")
    unknown = [k for k in keys if k not in TOPICS]
    require(not unknown, lambda: f"{name}: unknown topics {unknown}; choose from TOPICS")
    return keys


def triples(keys=TRAIN) -> list[tuple[str, str, str, str]]:
    """(question, steps, look-alike, topic key) for every wording of every topic in ``keys``.

    Ordered by topic (as given), then wording: row ``5 t + w`` is wording ``w`` of topic ``t``.
    """
    return [(q, steps(k), look_alike(k), k) for k in _keys(keys, "keys") for q in questions(k)]


def exam_pool(keys=HELD_OUT) -> tuple[list[str], list[str]]:
    """The articles a held-out question is ranked among: every topic's steps, then every topic's
    look-alike (2 T texts), and their ids ("key/steps", "key/look-alike")."""
    keys = _keys(keys, "keys")
    docs = [steps(k) for k in keys] + [look_alike(k) for k in keys]
    return docs, [f"{k}/steps" for k in keys] + [f"{k}/look-alike" for k in keys]


def retrieval_rows() -> dict[str, list[dict]]:
    """The set as `labs.retrieval.data`'s three files: corpus (steps and look-alike of every topic,
    grouped by topic, in its topic's split), queries (validation and held-out questions, each with
    its steps as the one relevant document), train_pairs (training questions and their steps)."""
    corpus, queries, pairs = [], [], []
    for key in TOPICS:
        split = split_of(key)
        corpus += [{"doc_id": f"{key}/steps", "text": steps(key), "group": key, "split": split},
                   {"doc_id": f"{key}/look-alike", "text": look_alike(key), "group": key, "split": split}]
        for w, q in enumerate(questions(key)):
            if split == "train":
                pairs.append({"query": q, "positive": steps(key), "doc_id": f"{key}/steps", "group": key})
            else:
                queries.append({"query_id": f"{key}/{w}", "text": q, "relevant_doc_ids": [f"{key}/steps"],
                                "split": split})
    return {"corpus": corpus, "queries": queries, "train_pairs": pairs}

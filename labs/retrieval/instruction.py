"""The query instruction, in one place: how a query is written before it is encoded.

In plain words: instruction-tuned embedding models such as Qwen3-Embedding read a query as
``Instruct: {task}\nQuery:{query}`` (no space after ``Query:``) and a document as it is. The
instruction must be added exactly once: never by the data, never twice, always the same way at
training, indexing and search. Everything about it lives here:

- `QUERY_TEMPLATE`, `DEFAULT_TASK`: the template and Qwen3's default task for the help desk.
- `format_query`: a query with its instruction (refuses one that already has it).
- `has_instruction`: whether a text already starts with ``Instruct:`` (the data refuses those).
- `query_prompt`: the fixed text before every query, as a saved model stores it.
- `instruction_of`: the instruction a model expects (read back from its saved prompt).
"""

from __future__ import annotations

__all__ = ["QUERY_TEMPLATE", "DEFAULT_TASK", "format_query", "has_instruction", "query_prompt",
           "instruction_of"]

QUERY_TEMPLATE = "Instruct: {task}\nQuery:{query}"
DEFAULT_TASK = "Given a support question, retrieve the help article that answers it for the correct product."

_PREFIX, _SUFFIX = QUERY_TEMPLATE.split("{task}")
_SUFFIX = _SUFFIX.removesuffix("{query}")


def has_instruction(text: str) -> bool:
    """True when ``text`` already carries a query instruction (starts with ``Instruct:``; case and
    leading spaces ignored)."""
    return text.lstrip()[:len(_PREFIX) - 1].casefold() == _PREFIX[:-1].casefold()


def format_query(query: str, instruction: str | None) -> str:
    """``Instruct: {instruction}\\nQuery:{query}``, or the query unchanged when there is no instruction.

    Refuses a query that already carries an instruction, so it is never added twice.
    """
    if not isinstance(query, str):
        raise ValueError(f"query must be a string, got {type(query).__name__}")
    if has_instruction(query):
        raise ValueError("query already starts with 'Instruct:': the instruction is added exactly once, here")
    return QUERY_TEMPLATE.format(task=instruction, query=query) if instruction else query


def query_prompt(instruction: str | None) -> str:
    """The text that goes before every query: ``Instruct: {instruction}\\nQuery:``, or '' without one."""
    return format_query("", instruction)


def instruction_of(model) -> str:
    """The instruction a model expects: the task of its saved query prompt; Qwen3's `DEFAULT_TASK`
    for a Qwen3 model saved without one; else '' (MiniLM and other models take none)."""
    prompt = (getattr(model, "prompts", None) or {}).get("query") or ""
    if prompt.startswith(_PREFIX) and prompt.endswith(_SUFFIX):
        return prompt[len(_PREFIX):len(prompt) - len(_SUFFIX)]
    config = getattr(getattr(model[0], "auto_model", None), "config", None)
    return DEFAULT_TASK if getattr(config, "model_type", "") == "qwen3" else ""

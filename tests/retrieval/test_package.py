"""The package's shape, as the command line needs it: no library module imports the command line, no
private name crosses a module, no import cycle, nothing Unix- or Windows-only imported at the top."""

from __future__ import annotations

import ast
from pathlib import Path

LABS = Path(__file__).resolve().parents[2] / "labs"


def _imports(path: Path) -> list[tuple[str, list[str], bool]]:
    """(module, names, inside an ``if __name__ == "__main__"`` block) for every import in a file."""
    tree, found = ast.parse(path.read_text()), []
    guarded = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)
               for n in ast.walk(node)}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.module, [a.name for a in node.names], id(node) in guarded))
        elif isinstance(node, ast.Import):
            found += [(a.name, [], id(node) in guarded) for a in node.names]
    return found


def test_no_library_module_imports_the_command_line_or_private_names():
    for path in sorted(LABS.rglob("*.py")):
        for module, names, guarded in _imports(path):
            if module == "labs.retrieval.cli" and path.name not in ("__main__.py", "cli.py"):
                assert guarded, f"{path.name} imports the command line"
            if module.startswith("labs"):
                assert not [n for n in names if n.startswith("_")], f"{path.name}: private import from {module}"


def test_no_import_cycles_and_nothing_unix_only_at_import():
    graph = {}
    for path in LABS.rglob("*.py"):
        tree = ast.parse(path.read_text())
        top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        for node in top:
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            assert not {"resource", "fcntl", "msvcrt"} & set(names), f"{path.name}: Unix/Windows-only import at top"
        everywhere = [m for m, _, guarded in _imports(path) if m.startswith("labs.") and not guarded]
        name = ".".join(path.relative_to(LABS.parent).with_suffix("").parts).removesuffix(".__init__")
        graph[name] = {m for m in everywhere if m != name}

    def visit(node, trail):
        assert node not in trail, f"import cycle: {' -> '.join([*trail, node])}"
        for nxt in graph.get(node, ()):
            visit(nxt, [*trail, node])

    for name in graph:
        visit(name, [])

"""collscope's layers, checked on the source: an AST walk over the package (nothing imported),
every import counted, those inside functions too (a lazy import is a dependency all the same).

The direction is docs/design.md's: cli -> features -> (runtime, collectives, hw, parsers,
records, stats) -> the small shared modules. Lower layers are ordered too (parsers use only
the collectives' names and units; records, hw and runtime may use parsers). A feature uses
another feature only where docs/api.md's table allows it, and then only names that feature
declares in its ``__all__``. No import cycle, and nothing inside the user's training process
(watch's bootstrap and agent) imports trace or the CLI.

``problems(package, uses)`` lists every violation as one line; ``python tests/layers.py``
prints them for this tree.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

FEATURES = frozenset({"doctor", "bench", "train", "overlap", "monitor", "report", "trace",
                      "links", "model", "tune", "hang", "watch"})
# Lowest first. An area imports its own modules and those of lower layers; areas of one layer
# import each other only in "shared" (small modules of one fact each: errors, units, ...), and
# features only as docs/api.md allows.
LAYERS: list[tuple[str, frozenset[str]]] = [
    ("shared", frozenset({"<top>", "errors", "units", "envvars", "redact", "versions", "sysfs",
                          "testing", "console", "config_flags", "rules"})),
    ("vocabulary", frozenset({"collectives", "stats"})),
    ("parsers", frozenset({"parsers"})),
    ("services", frozenset({"runtime", "hw", "records", "hooks"})),
    ("features", FEATURES),
    ("cli", frozenset({"cli"})),
    ("entry", frozenset({"__main__"})),
]
# What runs inside the user's training processes (watch's bootstrap, then its agent).
IN_JOB = ("collscope.watch.bootstrap.sitecustomize", "collscope.watch")
NOT_IN_JOB = ("collscope.trace", "collscope.cli")


@dataclass
class Import:
    source: str                   # the importing module
    target: str                   # the module imported (a package's __init__ for its names)
    names: list[str] = field(default_factory=list)   # from-import names ([]: `import x`)
    line: int = 0


def module_name(package: Path, path: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def read_imports(package: Path) -> tuple[dict[str, Path], list[Import]]:
    """Every module of the package and every import of one of them by another."""
    modules = {module_name(package, path): path for path in sorted(package.rglob("*.py"))}
    root = package.name
    found: list[Import] = []
    for name, path in modules.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found += [Import(name, alias.name, [], node.lineno) for alias in node.names
                          if alias.name.split(".")[0] == root]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = here.split(".")[: len(here.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                if base.split(".")[0] != root:
                    continue
                submodules = [a.name for a in node.names if f"{base}.{a.name}" in modules]
                names = [a.name for a in node.names if a.name not in submodules]
                found += [Import(name, f"{base}.{sub}", [sub], node.lineno) for sub in submodules]
                if names:
                    found.append(Import(name, base, names, node.lineno))
    return modules, found


def area(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "<top>"


@functools.cache
def declared(package: Path, feature: str) -> frozenset[str] | None:
    """The names in a feature's ``__all__`` (None: it declares none)."""
    path = package / feature / "__init__.py"
    if not path.exists():
        path = package / f"{feature}.py"
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__"
                                                for t in node.targets):
            return frozenset(elt.value for elt in getattr(node.value, "elts", [])
                             if isinstance(elt, ast.Constant) and isinstance(elt.value, str))
    return None


def allowed_uses(api_doc: Path = REPO / "docs" / "api.md") -> dict[str, set[str]]:
    """docs/api.md's table of which feature may import which: ``| `model` | `bench`, `train` |``
    rows under the heading "What features may import"."""
    text = api_doc.read_text(encoding="utf-8")
    section = text.split("## What features may import", 1)[-1].split("\n## ", 1)[0]
    uses: dict[str, set[str]] = {}
    for row in re.finditer(r"^\| `(\w+)` \| ([^|]*)\|", section, re.M):
        uses[row.group(1)] = set(re.findall(r"`(\w+)`", row.group(2)))
    return uses


def _layer(name: str) -> int | None:
    return next((i for i, (_, areas) in enumerate(LAYERS) if name in areas), None)


def _direction(imp: Import, package: Path, uses: dict[str, set[str]]) -> str | None:
    here, there = area(imp.source), area(imp.target)
    if here == there:
        return None
    mine, theirs = _layer(here), _layer(there)
    if mine is None or theirs is None:
        unknown = here if mine is None else there
        return f"{unknown} is in no layer: give it one in tests/layers.py (LAYERS)"
    if theirs > mine:
        return f"imports upward: {LAYERS[mine][0]} {here} -> {LAYERS[theirs][0]} {there}"
    if theirs < mine or LAYERS[mine][0] == "shared":
        return None
    if LAYERS[mine][0] != "features":
        return f"imports sideways: {here} -> {there} ({LAYERS[mine][0]} do not use each other)"
    if there not in uses.get(here, set()):
        return (f"feature {here} imports feature {there}, which docs/api.md does not allow "
                f"({here} may use: {', '.join(sorted(uses.get(here, set()))) or 'none'})")
    public = declared(package, there) or frozenset()
    private = [n for n in imp.names or [imp.target] if n not in public]
    if private:
        return (f"feature {here} imports {', '.join(private)} of {there}, not in "
                f"{there}.__all__")
    return None


def cycles(modules: Iterable[str], edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start in modules:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges.get(node, ()):
                    found.append(frozenset(component))
    return found


def reachable(starts: Iterable[str], edges: dict[str, set[str]]) -> set[str]:
    seen: set[str] = set()
    todo = [s for s in starts]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo += edges.get(module, ())
    return seen


def problems(package: Path = REPO / "collscope",
             uses: dict[str, set[str]] | None = None) -> list[str]:
    """Every layer violation, import cycle and in-job import of the package, one line each."""
    uses = allowed_uses() if uses is None else uses
    modules, imports = read_imports(package)
    said = []
    edges: dict[str, set[str]] = {}
    for imp in imports:
        if imp.target in modules:
            edges.setdefault(imp.source, set()).add(imp.target)
        why = _direction(imp, package, uses)
        if why:
            said.append(f"{modules[imp.source].relative_to(package.parent)}:{imp.line}: {why}")
    found = cycles(modules, edges)
    said += [f"import cycle: {' -> '.join(sorted(c))}" for c in found]
    in_job = reachable([m for m in IN_JOB if m in modules], edges)
    said += [f"{m} is imported inside the user's training process (from watch's bootstrap)"
             for m in sorted(in_job) if m.startswith(NOT_IN_JOB)]
    return said


if __name__ == "__main__":
    lines = problems()
    print("\n".join(lines) or "no layer problem")
    sys.exit(1 if lines else 0)

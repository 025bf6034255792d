"""Intra-project import graph: edges, circles and upward arrows (standard library only).

tests/test_architecture.py states the layer contract with these functions. Every function
returns data and has no side effects (build_graph and external_imports only read the files):

    graph = build_graph(REPO, ["synix_assets", "synix_resources"])
    upward_edges(graph, FLOORS)                 # TYPE_CHECKING imports exempt
    circles(graph)                              # type-only circles exempt
    unassigned(graph, FLOORS)
    reaches_external(REPO, graph, ["synix_assets.engine"], "dagster")

What counts as an import (all of them, wherever they sit in the file):
  * `import a.b.c` / `import a.b.c as x`        -> edge to `a.b.c`
  * `from a.b import c`                          -> edge to `a.b.c` if that is a module, else `a.b`
  * relative imports (`from . import x`, `from ..y import z`), resolved against the package
  * `importlib.import_module("a.b")` / `__import__("a.b")` with a literal string (kind "dynamic")
Each edge records where it sits:
  * scope:  "top" (module body, including class bodies and module-level if/try)
            or "function" (anywhere inside a def / async def / lambda)
  * type_only: True when under `if TYPE_CHECKING:` / `if typing.TYPE_CHECKING:`
               (such an import never runs, so it is left out of circles and of the layer check
               unless asked)
Parent packages (`a/__init__.py`, `a/b/__init__.py`) that Python runs on the way are NOT added
as edges; pass `implicit_parents=True` to `build_graph` to add them.

Floors: a list, lowest first, of module prefixes; a module belongs to the floor of its longest
matching prefix (`a.b` matches `a.b` and `a.b.c`; `a.b$` matches `a.b` only).
"""
from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence


# ----------------------------------------------------------------------------- model
@dataclass(frozen=True, order=True)
class Edge:
    src: str            # importing module (dotted)
    dst: str            # imported module (dotted)
    line: int
    scope: str          # "top" | "function"
    type_only: bool     # under `if TYPE_CHECKING:`
    kind: str = "import"  # "import" | "from" | "dynamic" | "parent"
    function: str = ""  # enclosing defs/classes, dotted ("_Launcher.tags"); "" at module level


@dataclass
class Graph:
    modules: dict[str, Path] = field(default_factory=dict)    # dotted name -> file
    lines: dict[str, int] = field(default_factory=dict)       # dotted name -> line count
    edges: list[Edge] = field(default_factory=list)

    def adjacency(self, *, include_type_only: bool = False,
                  scopes: Iterable[str] = ("top", "function")) -> dict[str, set[str]]:
        scopes = set(scopes)
        adj: dict[str, set[str]] = {m: set() for m in self.modules}
        for e in self.edges:
            if e.type_only and not include_type_only:
                continue
            if e.scope not in scopes:
                continue
            if e.src != e.dst:
                adj[e.src].add(e.dst)
        return adj


# ----------------------------------------------------------------------------- discovery
def discover_modules(root: Path, packages: Sequence[str]) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file under each package directory
    (`pkg/x/__init__.py` is module `pkg.x`). Top-level single-file modules may be listed
    in `packages` too (`foo` -> `root/foo.py`)."""
    found: dict[str, Path] = {}
    for pkg in packages:
        base = root / pkg.replace(".", "/")
        if base.with_suffix(".py").is_file():
            found[pkg] = base.with_suffix(".py")
        if not base.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__pycache__")))
            for fn in sorted(filenames):
                if not fn.endswith(".py"):
                    continue
                path = Path(dirpath) / fn
                rel = path.relative_to(root).with_suffix("")
                parts = list(rel.parts)
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                found[".".join(parts)] = path
    return found


def is_package(module: str, modules: Mapping[str, Path]) -> bool:
    path = modules.get(module)
    return path is not None and path.name == "__init__.py"


# ----------------------------------------------------------------------------- parsing
def _is_type_checking_test(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id == "TYPE_CHECKING"
    if isinstance(node, ast.Attribute):
        return node.attr == "TYPE_CHECKING"
    return False


def _resolve_relative(module: str, is_pkg: bool, level: int, name: str | None) -> str:
    """`from ..x import y` inside `module` -> absolute base (`a.b.x`)."""
    parts = module.split(".")
    package = parts if is_pkg else parts[:-1]
    if level - 1 > len(package):
        raise ValueError(f"relative import beyond top-level package in {module}")
    base = package[: len(package) - (level - 1)]
    if name:
        base = base + name.split(".")
    return ".".join(base)


def _target(name: str, modules: Mapping[str, Path]) -> str | None:
    """The longest prefix of `name` that is a project module, or None if outside."""
    parts = name.split(".")
    while parts:
        cand = ".".join(parts)
        if cand in modules:
            return cand
        parts.pop()
    return None


def raw_imports(source: str) -> list[tuple[str, int, int, str | None, list[str], str, bool, str]]:
    """Every import statement in `source`:
    (kind, line, level, module, names, scope, type_only, where).
    kind "import": module=None, names=[dotted names]; "from": module (may be None for
    `from . import x`), names=[imported names]; "dynamic": module=literal string.
    scope: "function" when any enclosing def/lambda, else "top" (class bodies are "top").
    where: the enclosing defs and classes, dotted ("_Launcher.tags"), "" at module level."""
    tree = ast.parse(source)
    out: list = []

    def visit(node: ast.AST, path: tuple[str, ...], in_fn: bool, type_only: bool) -> None:
        for child in ast.iter_child_nodes(node):
            scope = "function" if in_fn else "top"
            where = ".".join(path)
            if isinstance(child, ast.Import):
                out.append(("import", child.lineno, 0, None,
                            [a.name for a in child.names], scope, type_only, where))
            elif isinstance(child, ast.ImportFrom):
                out.append(("from", child.lineno, child.level or 0, child.module,
                            [a.name for a in child.names], scope, type_only, where))
            elif isinstance(child, ast.Call) and _dynamic_name(child) is not None:
                out.append(("dynamic", child.lineno, 0, _dynamic_name(child), [],
                            scope, type_only, where))
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                # decorators, defaults and annotations run where the def is; the body later
                for part in (*child.decorator_list, child.args, child.returns):
                    if part is not None:
                        visit(ast.Expression(body=part) if isinstance(part, ast.expr) else part,
                              path, in_fn, type_only)
                for stmt in child.body:
                    visit(ast.Module(body=[stmt], type_ignores=[]), path + (child.name,), True,
                          type_only)
            elif isinstance(child, ast.Lambda):
                visit(child, path + ("<lambda>",), True, type_only)
            elif isinstance(child, ast.ClassDef):
                visit(child, path + (child.name,), in_fn, type_only)
            elif isinstance(child, ast.If) and _is_type_checking_test(child.test):
                for stmt in child.body:
                    visit(ast.Module(body=[stmt], type_ignores=[]), path, in_fn, True)
                for stmt in child.orelse:
                    visit(ast.Module(body=[stmt], type_ignores=[]), path, in_fn, type_only)
            else:
                visit(child, path, in_fn, type_only)

    visit(tree, (), False, False)
    return out


def _dynamic_name(call: ast.Call) -> str | None:
    f = call.func
    is_dyn = (isinstance(f, ast.Attribute) and f.attr == "import_module") or (
        isinstance(f, ast.Name) and f.id in ("import_module", "__import__"))
    if is_dyn and call.args and isinstance(call.args[0], ast.Constant) \
            and isinstance(call.args[0].value, str):
        return call.args[0].value
    return None


def module_edges(module: str, source: str, modules: Mapping[str, Path]) -> list[Edge]:
    """Edges from one module to other project modules."""
    edges: list[Edge] = []
    pkg = is_package(module, modules)
    for kind, line, level, mod, names, scope, type_only, fname in raw_imports(source):
        targets: list[str | None] = []
        if kind == "import":
            targets = [_target(n, modules) for n in names]
        elif kind == "dynamic":
            targets = [_target(mod, modules)]
        else:
            base = _resolve_relative(module, pkg, level, mod) if level else (mod or "")
            for n in names:
                full = f"{base}.{n}" if base else n
                if n != "*" and full in modules:
                    targets.append(full)
                else:
                    targets.append(_target(base, modules) if base else None)
        for t in targets:
            if t is not None and t != module:
                edges.append(Edge(module, t, line, scope, type_only, kind, fname))
    return sorted(set(edges))


def build_graph(root: Path | str, packages: Sequence[str], *,
                implicit_parents: bool = False) -> Graph:
    root = Path(root)
    g = Graph()
    g.modules = discover_modules(root, packages)
    for mod, path in g.modules.items():
        text = path.read_text(encoding="utf-8")
        g.lines[mod] = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        g.edges.extend(module_edges(mod, text, g.modules))
    if implicit_parents:
        extra = []
        for e in g.edges:
            parts = e.dst.split(".")
            for i in range(1, len(parts)):
                parent = ".".join(parts[:i])
                if parent in g.modules and parent != e.src:
                    extra.append(Edge(e.src, parent, e.line, e.scope, e.type_only, "parent",
                                      e.function))
        g.edges = sorted(set(g.edges) | set(extra))
    return g


# ----------------------------------------------------------------------------- circles
def strongly_connected(adj: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative. Components sorted, largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    comps: list[list[str]] = []
    counter = 0
    for start in sorted(adj):
        if start in index:
            continue
        work = [(start, iter(sorted(adj.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(adj.get(nxt, ())))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                comps.append(sorted(comp))
    return sorted(comps, key=lambda c: (-len(c), c))


def circles(graph: Graph, *, include_type_only: bool = False,
            scopes: Iterable[str] = ("top", "function")) -> list[list[str]]:
    """Strongly connected components with more than one module (import circles)."""
    adj = graph.adjacency(include_type_only=include_type_only, scopes=scopes)
    return [c for c in strongly_connected(adj) if len(c) > 1]


def closing_edges(graph: Graph, component: Sequence[str]) -> list[Edge]:
    """Function-scope edges inside a component: the imports that close its loops when the
    top-level imports alone form no circle."""
    comp = set(component)
    return [e for e in graph.edges
            if e.src in comp and e.dst in comp and e.scope == "function" and not e.type_only]


# ----------------------------------------------------------------------------- floors
Floors = Sequence[Sequence[str]]   # lowest floor first; each floor: module prefixes


def floor_of(module: str, floors: Floors) -> int | None:
    """Index of the floor whose longest prefix matches `module` (`a.b` matches `a.b` and
    `a.b.c`, not `a.bc`; `a.b$` matches only `a.b` itself, e.g. a package's __init__)."""
    best: tuple[int, int] | None = None   # (prefix length, floor)
    for i, prefixes in enumerate(floors):
        for p in prefixes:
            exact = p.endswith("$")
            p = p.rstrip("$")
            if module == p or (not exact and module.startswith(p + ".")):
                if best is None or len(p) > best[0]:
                    best = (len(p), i)
    return None if best is None else best[1]


def upward_edges(graph: Graph, floors: Floors, *, ignore_type_only: bool = True) -> list[Edge]:
    """Every edge whose target sits on a higher floor than its source."""
    out = []
    for e in graph.edges:
        if ignore_type_only and e.type_only:
            continue
        a, b = floor_of(e.src, floors), floor_of(e.dst, floors)
        if a is not None and b is not None and b > a:
            out.append(e)
    return out


def unassigned(graph: Graph, floors: Floors) -> list[str]:
    return sorted(m for m in graph.modules if floor_of(m, floors) is None)


def external_imports(root: Path | str, graph: Graph,
                     top_name: str | Sequence[str]) -> list[tuple[str, int, str]]:
    """(module, line, scope) for every import of the third-party package `top_name`
    (e.g. "dagster", or several: ("dagster", "dagster_postgres")), top-level or inside a
    function, excluding TYPE_CHECKING-only."""
    tops = (top_name,) if isinstance(top_name, str) else tuple(top_name)
    out = []
    for mod, path in graph.modules.items():
        for kind, line, level, m, names, scope, type_only, _ in raw_imports(
                path.read_text(encoding="utf-8")):
            if type_only or level:
                continue
            dotted = [m] if kind in ("from", "dynamic") else names
            if any(d and (d == t or d.startswith(t + ".")) for d in dotted for t in tops):
                out.append((mod, line, scope))
    return sorted(set(out))


def reachable(adj: Mapping[str, Iterable[str]], start: str) -> set[str]:
    """Every module `start` loads through the given edges (not including itself)."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in adj.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen - {start}


def reaches_external(root: Path | str, graph: Graph, src_prefixes: Sequence[str],
                     top_name: str | Sequence[str]) -> dict[str, list[str]]:
    """For each module under `src_prefixes`: the project modules it loads at import time
    (top-level imports, transitively) that import `top_name` at their own top level; and
    itself if it imports `top_name` anywhere (any scope). {} when none does."""
    sites = external_imports(root, graph, top_name)
    direct_any = {m for m, _, _ in sites}
    direct_top = {m for m, _, scope in sites if scope == "top"}
    adj = graph.adjacency(scopes=("top",))
    out = {}
    for m in graph.modules:
        if not any(m == p or m.startswith(p + ".") for p in src_prefixes):
            continue
        hits = sorted(({m} & direct_any) | (reachable(adj, m) & direct_top))
        if hits:
            out[m] = hits
    return out

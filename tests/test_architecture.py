"""The layer contract (issue 28, PLAN.md §2 and §8): imports point only down the floors, wherever
they sit (an import inside a function defers its cost, never its direction; only `if
TYPE_CHECKING:` imports are exempt), no import circles, every module on a floor, and nothing at or
below the engine loads Dagster.

While the restructuring is under way the contract is a ratchet. KNOWN_UPWARD, KNOWN_CIRCLE_MODULES
and KNOWN_DAGSTER_REACH list what is still wrong today. Anything new fails the test, and so does a
listed entry that no longer exists, so the lists only shrink until they are empty.
"""
from __future__ import annotations

from collections import deque
from functools import cache
from pathlib import Path

from tests.support.imports import (
    Edge,
    raw_imports,
    Graph,
    build_graph,
    circles,
    closing_edges,
    external_imports,
    floor_of,
    reaches_external,
    unassigned,
    upward_edges,
)

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ["synix", "synix_assets", "synix_resources"]
THIS_FILE = "tests/test_architecture.py"

# Lowest first; a module sits on the floor of its longest matching prefix (`pkg$`: exactly pkg).
# Old modules sit on their folder's floor until a step moves them (PLAN.md §2, transitional map).
# `dagster_defs.build` and `pipeline.api` are entry modules (steps 13 and 11): the names every
# project's definitions.py and pipeline.py import, so they stay where they are, but they reach up
# (build passes the application layer's run_build into the compiler, dagster_defs.compile; api
# names python_api.pipeline.Pipeline, whose .branch() opens the Python door) and therefore sit on
# the top floor; the longest prefix wins, so the rest of dagster_defs and pipeline stays below.
# `synix_assets.component` is the Dagster component `dg` loads from its entry point; it calls
# dagster_defs.build and the Python door's project binding, so it sits there too.
FLOORS: list[tuple[str, list[str]]] = [
    ("resources", ["synix_resources", "synix_assets$"]),
    ("definitions of data", ["synix_assets.pipeline", "synix_assets.parsers", "synix_assets.web"]),
    ("project & sources", ["synix_assets.project", "synix_assets.sources"]),
    ("engine", ["synix_assets.engine"]),
    ("Dagster compiler", ["synix_assets.dagster_defs"]),
    ("Dagster-driving operations", ["synix_assets.orchestration", "synix_assets.forget"]),
    ("application", ["synix_assets.app"]),
    ("processes", ["synix_assets.eval", "synix_assets.serve", "synix_assets.live",
                   "synix_assets.scale"]),
    ("doors", ["synix_assets.cli", "synix_assets.python_api"]),
    ("entry points", ["synix", "synix_assets.definitions", "synix_assets.examples",
                      "synix_assets.dagster_defs.build", "synix_assets.pipeline.api",
                      "synix_assets.component"]),
]
FLOOR_PREFIXES = [prefixes for _, prefixes in FLOORS]

# Neither directly nor through another module's top-level imports may these load Dagster
# (dagster itself or one of its integration packages, each of which imports it).
NO_DAGSTER = ["synix_assets.engine", "synix_assets.sources", "synix_assets.project",
              "synix_assets.pipeline", "synix_assets.parsers"]
DAGSTER_PACKAGES = ("dagster", "dagster_celery", "dagster_graphql", "dagster_postgres",
                    "dagster_webserver")

# --- the ratchet: what is still wrong, to be emptied by PLAN.md §9 (step 20) ------------------
# (importing module, imported module) pairs that point up a floor.
KNOWN_UPWARD: frozenset[tuple[str, str]] = frozenset({
})

# The import circles that remain, each as its exact set of modules (type-only edges exempt).
KNOWN_CIRCLE_MODULES: tuple[frozenset[str], ...] = ()

# (module under NO_DAGSTER, module whose import of `dagster` it runs) pairs.
KNOWN_DAGSTER_REACH: frozenset[tuple[str, str]] = frozenset()

# The only modules that may import Dagster's private modules (`dagster._…`): Dagster has no public
# way to create an in-process run with a job origin (dagster_defs/origin.py), and Synix's storage for
# Dagster's SQLite event log subclasses Dagster's own (dagster_defs/event_log.py, issue 34), named in
# dagster.yaml through Dagster's storage plug-in point as dagster-postgres does (the same module holds
# the repository root's storages, which that plug-in point requires to be Dagster storage types).
DAGSTER_INTERNALS = frozenset({"synix_assets.dagster_defs.origin", "synix_assets.dagster_defs.event_log"})

NEW_HINT = (f"An import may point only to its own floor or a lower one (FLOORS in {THIS_FILE}). "
            "Move the code to the floor it belongs on, or pass the dependency in from the "
            "caller above; an import inside a function is no exception.")
RATCHET_HINT = (f"The ratchet lists in {THIS_FILE} only shrink: never add an entry (a step may "
                "re-point a pair only while its source module has not moved yet, PLAN.md §8).")


def _where(root: Path, graph: Graph, e: Edge) -> str:
    place = f"in {e.function}()" if e.function else "at top level"
    return f"{graph.modules[e.src].relative_to(root)}:{e.line} ({place})"


def upward_problems(root: Path, graph: Graph, floors, known: frozenset[tuple[str, str]],
                    floor_names: list[str]) -> list[str]:
    found: dict[tuple[str, str], list[Edge]] = {}
    for e in upward_edges(graph, floors):
        found.setdefault((e.src, e.dst), []).append(e)
    out = []
    for (src, dst), edges in sorted(found.items()):
        if (src, dst) in known:
            continue
        a, b = floor_of(src, floors), floor_of(dst, floors)
        lines = "".join(f"\n    {_where(root, graph, e)}" for e in edges)
        out.append(f"new upward import {src} (floor {a}, {floor_names[a]}) -> {dst} "
                   f"(floor {b}, {floor_names[b]}):{lines}\n  {NEW_HINT} {RATCHET_HINT}")
    for src, dst in sorted(known - set(found)):
        out.append(f"KNOWN_UPWARD lists ({src!r}, {dst!r}) but that upward import is gone: "
                   f"delete the pair from KNOWN_UPWARD in {THIS_FILE}.")
    return out


def circle_problems(root: Path, graph: Graph, known: tuple[frozenset[str], ...]) -> list[str]:
    found = [frozenset(c) for c in circles(graph)]
    out = []
    for c in found:
        if c in known:
            continue
        if any(c < k for k in known):
            continue   # reported below, with the listed circle it came from
        edges = closing_edges(graph, sorted(c)) or [
            e for e in graph.edges if e.src in c and e.dst in c and not e.type_only]
        lines = "".join(f"\n    {_where(root, graph, e)} -> {e.dst}" for e in edges)
        grown = [k for k in known if k < c]
        what = (f"a circle in KNOWN_CIRCLE_MODULES grew by {', '.join(sorted(c - grown[0]))} "
                f"(now {len(c)} modules)" if len(grown) == 1 else
                f"new import circle of {len(c)} modules ({', '.join(sorted(c))})")
        out.append(f"{what}; the imports closing it:{lines}\n  Break it: one of these imports "
                   f"must go (move the shared code down a floor, or pass it in). {RATCHET_HINT}")
    for k in known:
        if k in found or any(k < c for c in found):
            continue
        left = [c for c in found if c < k]
        if left:
            gone = sorted(k - frozenset().union(*left))
            out.append(f"a circle in KNOWN_CIRCLE_MODULES shrank: {', '.join(gone)} no longer "
                       f"in it. Replace its entry in {THIS_FILE} with what remains: "
                       + " and ".join(repr(sorted(c)) for c in left) + ".")
        else:
            out.append(f"KNOWN_CIRCLE_MODULES lists a circle that no longer exists "
                       f"({', '.join(sorted(k))}): delete its entry in {THIS_FILE}.")
    return out


def _import_path(graph: Graph, start: str, goal: str) -> list[Edge]:
    """The shortest chain of top-level imports by which `start` loads `goal`."""
    first: dict[str, Edge] = {}
    by_src: dict[str, list[Edge]] = {}
    for e in graph.edges:
        if e.scope == "top" and not e.type_only:
            by_src.setdefault(e.src, []).append(e)
    todo = deque([start])
    while todo:
        m = todo.popleft()
        for e in by_src.get(m, []):
            if e.dst not in first and e.dst != start:
                first[e.dst] = e
                todo.append(e.dst)
    chain, m = [], goal
    while m != start and m in first:
        chain.append(first[m])
        m = first[m].src
    return chain[::-1]


def _source_line(graph: Graph, module: str, line: int) -> str:
    return graph.modules[module].read_text(encoding="utf-8").splitlines()[line - 1].strip()


def dagster_problems(root: Path, graph: Graph, prefixes: list[str],
                     known: frozenset[tuple[str, str]]) -> list[str]:
    reach = reaches_external(root, graph, prefixes, DAGSTER_PACKAGES)
    found = {(m, via) for m, vias in reach.items() for via in vias}
    sites = external_imports(root, graph, DAGSTER_PACKAGES)
    out = []
    for m, via in sorted(found - known):
        chain = "".join(f"\n    {_where(root, graph, e)} imports {e.dst}"
                        for e in _import_path(graph, m, via)) if via != m else ""
        dagster_lines = "".join(
            f"\n    {graph.modules[s].relative_to(root)}:{line} ({scope}): "
            f"{_source_line(graph, s, line)}"
            for s, line, scope in sites if s == via and (via == m or scope == "top"))
        out.append(f"{m} loads Dagster{'' if via == m else f' through {via}'}:{chain}"
                   f"{dagster_lines}\n  Nothing under {', '.join(prefixes)} may load dagster; move "
                   f"the Dagster part up to synix_assets.dagster_defs or above. {RATCHET_HINT}")
    for m, via in sorted(known - found):
        out.append(f"KNOWN_DAGSTER_REACH lists ({m!r}, {via!r}) but {m} no longer loads Dagster "
                   f"that way: delete the pair from KNOWN_DAGSTER_REACH in {THIS_FILE}.")
    return out


def internals_problems(root: Path, graph: Graph, allowed: frozenset[str]) -> list[str]:
    """Imports of Dagster's private modules outside the allowed modules."""
    out = []
    for mod, path in sorted(graph.modules.items()):
        if mod in allowed:
            continue
        for kind, line, level, m, names, _, type_only, _ in raw_imports(path.read_text(encoding="utf-8")):
            dotted = [m] if kind in ("from", "dynamic") else names
            if not level and any(d and d.startswith("dagster._") for d in dotted):
                out.append(f"{path.relative_to(root)}:{line} imports Dagster's internals "
                           f"({', '.join(d for d in dotted if d)}); only {', '.join(sorted(allowed))} "
                           f"may: use Dagster's public API, or move the code there.")
    return out


def _report(problems: list[str]) -> str:
    return f"{len(problems)} layer contract problem(s):\n\n" + "\n\n".join(problems)


@cache
def _graph() -> Graph:
    return build_graph(REPO, PACKAGES)


def test_imports_point_only_down_the_floors_except_the_listed_pairs():
    problems = upward_problems(REPO, _graph(), FLOOR_PREFIXES, KNOWN_UPWARD,
                               [name for name, _ in FLOORS])
    assert not problems, _report(problems)


def test_no_import_circle_beyond_the_listed_ones():
    problems = circle_problems(REPO, _graph(), KNOWN_CIRCLE_MODULES)
    assert not problems, _report(problems)


def test_every_module_sits_on_a_floor():
    missing = unassigned(_graph(), FLOOR_PREFIXES)
    assert not missing, (f"modules on no floor: {', '.join(missing)}. Add their package's prefix "
                         f"to the floor it belongs on in FLOORS ({THIS_FILE}).")


def test_nothing_at_or_below_the_engine_loads_dagster_beyond_the_listed_modules():
    problems = dagster_problems(REPO, _graph(), NO_DAGSTER, KNOWN_DAGSTER_REACH)
    assert not problems, _report(problems)


def test_only_the_listed_modules_import_dagster_internals():
    problems = internals_problems(REPO, _graph(), DAGSTER_INTERNALS)
    assert not problems, _report(problems)


# --- the contract itself can fail: a small tree in tmp_path ---------------------------------
def _tree(root: Path, files: dict[str, str]) -> Graph:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return build_graph(root, ["synix_assets"])


_PKG = {"synix_assets/__init__.py": "", "synix_assets/engine/__init__.py": "",
        "synix_assets/cli/__init__.py": "", "synix_assets/cli/main.py": "X = 1\n"}


def test_an_upward_import_inside_a_function_fails_naming_its_file_and_line(tmp_path):
    graph = _tree(tmp_path, {**_PKG, "synix_assets/engine/step.py":
                             "def run():\n    from synix_assets.cli.main import X\n    return X\n"})
    names = [name for name, _ in FLOORS]
    problems = upward_problems(tmp_path, graph, FLOOR_PREFIXES, frozenset(), names)
    assert len(problems) == 1
    assert "synix_assets.engine.step (floor 3, engine) -> synix_assets.cli.main (floor 8" \
        in problems[0]
    assert "synix_assets/engine/step.py:2 (in run())" in problems[0]
    known = frozenset({("synix_assets.engine.step", "synix_assets.cli.main")})
    assert upward_problems(tmp_path, graph, FLOOR_PREFIXES, known, names) == []


def test_a_type_checking_import_is_not_an_upward_edge(tmp_path):
    graph = _tree(tmp_path, {**_PKG, "synix_assets/engine/step.py":
                             "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                             "    from synix_assets.cli.main import X\n"})
    assert upward_problems(tmp_path, graph, FLOOR_PREFIXES, frozenset(),
                           [name for name, _ in FLOORS]) == []


def test_a_listed_upward_pair_that_is_gone_fails_so_the_list_only_shrinks(tmp_path):
    graph = _tree(tmp_path, {**_PKG, "synix_assets/engine/step.py": "Y = 2\n"})
    known = frozenset({("synix_assets.engine.step", "synix_assets.cli.main")})
    problems = upward_problems(tmp_path, graph, FLOOR_PREFIXES, known,
                               [name for name, _ in FLOORS])
    assert problems == [
        "KNOWN_UPWARD lists ('synix_assets.engine.step', 'synix_assets.cli.main') but that "
        f"upward import is gone: delete the pair from KNOWN_UPWARD in {THIS_FILE}."]


def test_a_new_circle_fails_naming_the_import_inside_a_function_that_closes_it(tmp_path):
    graph = _tree(tmp_path, {**_PKG,
                             "synix_assets/engine/a.py": "from synix_assets.engine import b\n",
                             "synix_assets/engine/b.py": "def f():\n"
                                                         "    import synix_assets.engine.a\n"})
    problems = circle_problems(tmp_path, graph, ())
    assert len(problems) == 1
    assert "new import circle of 2 modules" in problems[0]
    assert "synix_assets/engine/b.py:2 (in f()) -> synix_assets.engine.a" in problems[0]
    listed = (frozenset({"synix_assets.engine.a", "synix_assets.engine.b"}),)
    assert circle_problems(tmp_path, graph, listed) == []


def test_a_listed_circle_that_shrank_or_broke_fails_until_its_entry_is_updated(tmp_path):
    graph = _tree(tmp_path, {**_PKG,
                             "synix_assets/engine/a.py": "from synix_assets.engine import b\n",
                             "synix_assets/engine/b.py": "from synix_assets.engine import a\n",
                             "synix_assets/engine/c.py": "Z = 3\n"})
    abc = frozenset({"synix_assets.engine.a", "synix_assets.engine.b", "synix_assets.engine.c"})
    [shrank] = circle_problems(tmp_path, graph, (abc,))
    assert shrank.startswith("a circle in KNOWN_CIRCLE_MODULES shrank: synix_assets.engine.c ")
    gone = frozenset({"synix_assets.engine.c", "synix_assets.cli.main"})
    ab = frozenset({"synix_assets.engine.a", "synix_assets.engine.b"})
    [stale] = circle_problems(tmp_path, graph, (ab, gone))
    assert stale.startswith("KNOWN_CIRCLE_MODULES lists a circle that no longer exists")


def test_an_engine_module_loading_dagster_through_a_top_level_import_fails(tmp_path):
    graph = _tree(tmp_path, {**_PKG, "synix_assets/dagster_defs/__init__.py": "",
                             "synix_assets/dagster_defs/jobs.py": "import dagster\n",
                             "synix_assets/engine/a.py":
                                 "from synix_assets.dagster_defs import jobs\n",
                             "synix_assets/engine/b.py": "def f():\n    import dagster\n",
                             "synix_assets/engine/c.py": "def g():\n"
                                                         "    from dagster_postgres import x\n"})
    problems = dagster_problems(tmp_path, graph, ["synix_assets.engine"], frozenset())
    assert len(problems) == 3
    through, direct, integration = problems
    assert through.startswith("synix_assets.engine.a loads Dagster through "
                              "synix_assets.dagster_defs.jobs:")
    assert "synix_assets/engine/a.py:1 (at top level) imports synix_assets.dagster_defs.jobs" \
        in through
    assert "synix_assets/dagster_defs/jobs.py:1 (top): import dagster" in through
    assert "synix_assets/engine/b.py:2 (function): import dagster" in direct
    assert "synix_assets/engine/c.py:2 (function): from dagster_postgres import x" in integration


def test_a_listed_circle_that_grew_fails_naming_the_module_that_joined(tmp_path):
    graph = _tree(tmp_path, {**_PKG,
                             "synix_assets/engine/a.py": "from synix_assets.engine import b\n",
                             "synix_assets/engine/b.py": "from synix_assets.engine import c\n",
                             "synix_assets/engine/c.py": "def f():\n"
                                                         "    import synix_assets.engine.a\n"})
    ab = frozenset({"synix_assets.engine.a", "synix_assets.engine.b"})
    [grew] = circle_problems(tmp_path, graph, (ab,))
    assert grew.startswith("a circle in KNOWN_CIRCLE_MODULES grew by synix_assets.engine.c "
                           "(now 3 modules); the imports closing it:\n"
                           "    synix_assets/engine/c.py:2 (in f()) -> synix_assets.engine.a")


def test_an_import_of_dagster_internals_outside_the_listed_modules_fails_naming_its_line(tmp_path):
    graph = _tree(tmp_path, {**_PKG, "synix_assets/engine/a.py":
                             "def f():\n    from dagster._core.remote_origin import RemoteJobOrigin\n",
                             "synix_assets/engine/b.py": "import dagster\n"})
    [problem] = internals_problems(tmp_path, graph, frozenset())
    assert problem.startswith("synix_assets/engine/a.py:2 imports Dagster's internals "
                              "(dagster._core.remote_origin)")
    assert internals_problems(tmp_path, graph, frozenset({"synix_assets.engine.a"})) == []

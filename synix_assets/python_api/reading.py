"""What the Python door's reads return (§4.6): search hits that drill down (`sources()`,
`leaves()`, `lineage()`), lineage trees and records, each read through the application layer's
query views (app/query.py), the same views `synix search/get/lineage --json` print."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from synix_assets.pipeline.records import Record
from synix_assets.project import ProjectPaths


def record_of(art: dict[str, Any], *, branch: str, lineage: Callable[[str], Lineage] | None = None) -> Record:
    """A Record from an artifact dict (app.query.artifact_dict)."""
    return Record(art["artifact_id"], art["layer"], art.get("group_key", ""), art.get("content", ""),
                  dict(art.get("metadata") or {}), branch=branch,
                  sources=tuple(p["artifact_id"] for p in art.get("parents", [])),
                  materialization_key=art.get("materialization_key", ""), run_id=art.get("run_id"),
                  created_at=art.get("created_at", ""), audit=art.get("audit"),
                  level=art.get("level", 0), _lineage=lineage)


# ---- search ---------------------------------------------------------------------------------


@dataclass
class Hit:
    """One search result (§4.6): `content`, `score`, `step`, `record`, and the drill-down:
    `sources()` (direct parents), `leaves(max_depth=10, max_count=100)` (the source records
    under it), `lineage()` (the whole tree)."""

    data: dict[str, Any]  # the hit as `synix search --json` prints it
    _reader: "Reader" = field(repr=False, compare=False)

    @property
    def id(self) -> str:
        return self.data["artifact_id"]

    @property
    def step(self) -> str:
        return self.data["layer"]

    @property
    def score(self) -> float:
        return self.data["score"]

    @property
    def snippet(self) -> str:
        return self.data["snippet"]

    @property
    def title(self) -> str:
        return self.data.get("title") or ""

    @property
    def record(self) -> Record:
        return self._reader.get(self.id)

    @property
    def content(self) -> str:
        return self.record.content

    @property
    def metadata(self) -> dict[str, Any]:
        return self.record.metadata

    def sources(self) -> list[Record]:
        """The records this hit was built from: one hop up the provenance graph."""
        return self._reader.parents(self.id)

    def leaves(self, max_depth: int = 10, max_count: int = 100) -> list[Record]:
        """The deduplicated source records (no sources of their own) under this hit."""
        return self._reader.leaves(self.id, max_depth=max_depth, max_count=max_count)

    def lineage(self) -> "Lineage":
        return self._reader.lineage(self.id)

    def to_json(self) -> dict[str, Any]:
        return self.data

    def __repr__(self) -> str:
        return f"Hit({self.step}:{self.id[:12]} score={self.score:.3f} {self.title!r})"

    def __str__(self) -> str:
        return f"{self.step} {self.title}: {self.snippet}"  # print(hit) shows what matched


class SearchResults(list[Hit]):
    """The hits, best first, with the mode actually used, its notice (a fallback) and what
    failed to build (`incomplete`)."""

    def __init__(self, view: dict[str, Any], reader: "Reader"):
        super().__init__(Hit(h, reader) for h in view["hits"])
        self.view = view
        self.mode: str = view["mode"]
        self.notice: str | None = view.get("notice")
        self.incomplete: str | None = view.get("incomplete")  # partitions that failed to build
        self.memories: list[dict[str, Any]] | None = view.get("memories")  # with as_of
        # the conversations' own matched passages (an unscoped search): conversation, date,
        # message range and the matched words of each
        self.passages: list[dict[str, Any]] = view.get("passages", [])

    def to_json(self) -> dict[str, Any]:
        from synix_assets.app.query import search_json

        return search_json(self.view)


@dataclass
class Lineage:
    """A provenance tree: `record`, `parents` (Lineage each), `leaves()`, `walk()`."""

    tree: dict[str, Any]
    _reader: "Reader" = field(repr=False, compare=False)

    @property
    def id(self) -> str:
        return self.tree["artifact_id"]

    @property
    def step(self) -> str:
        return self.tree["layer"]

    @property
    def record(self) -> Record:
        return self._reader.get(self.id)

    @property
    def parents(self) -> list["Lineage"]:
        return [Lineage(p, self._reader) for p in self.tree["parents"]]

    def walk(self) -> Iterator[tuple[int, "Lineage"]]:
        """(depth, node), depth first, parents in input order."""
        stack = [(0, self)]
        while stack:
            depth, node = stack.pop()
            yield depth, node
            stack.extend((depth + 1, p) for p in reversed(node.parents))

    def leaves(self) -> list["Lineage"]:
        seen: dict[str, Lineage] = {}
        for _, node in self.walk():
            if not node.tree["parents"]:
                seen.setdefault(node.id, node)
        return list(seen.values())

    def to_json(self) -> dict[str, Any]:
        return self.tree

    def __str__(self) -> str:
        return "\n".join(f"{'  ' * d}{n.step}: {n.tree.get('title') or n.id[:12]}" for d, n in self.walk())


class Reader:
    """Reads records of one branch of a project for the objects above (each call opens the
    store briefly, so nothing holds the project's files between calls)."""

    def __init__(self, paths: ProjectPaths):
        self.paths = paths

    def get(self, ref: str) -> Record:
        from synix_assets.app.query import artifact_view

        return record_of(artifact_view(self.paths, ref), branch=self.paths.branch,
                         lineage=self.lineage)

    def parents(self, ref: str) -> list[Record]:
        from synix_assets.app.query import artifact_view

        return [self.get(p["artifact_id"]) for p in artifact_view(self.paths, ref)["parents"]]

    def leaves(self, ref: str, *, max_depth: int = 10, max_count: int = 100) -> list[Record]:
        from synix_assets.app.query import leaf_ids

        return [self.get(i) for i in leaf_ids(self.paths, ref, max_depth=max_depth, max_count=max_count)]

    def lineage(self, ref: str) -> Lineage:
        from synix_assets.app.query import lineage_view

        return Lineage(lineage_view(self.paths, ref), self)

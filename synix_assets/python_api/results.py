"""What the Python door's actions return: objects with the design's names (§4.4–§4.8, §8.4,
§11.3) over the same dicts `synix … --json` prints (`to_json()`), so Python and the CLI give
one result."""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from synix_assets.pipeline.records import Record
from synix_assets.project import ProjectPaths
from synix_resources.llm.pricing import FREE_PROVIDERS, price_for


class CostWarning(UserWarning):
    """A plan that reprocesses everything on a branch, or costs more than main (§4.8)."""


def record_of(art: dict[str, Any], *, branch: str, lineage: Callable[[str], Lineage] | None = None) -> Record:
    """A Record from an artifact dict (app.query.artifact_dict)."""
    return Record(art["artifact_id"], art["layer"], art.get("group_key", ""), art.get("content", ""),
                  dict(art.get("metadata") or {}), branch=branch,
                  sources=tuple(p["artifact_id"] for p in art.get("parents", [])),
                  materialization_key=art.get("materialization_key", ""), run_id=art.get("run_id"),
                  created_at=art.get("created_at", ""), audit=art.get("audit"),
                  level=art.get("level", 0), _lineage=lineage)


# ---- plan -----------------------------------------------------------------------------------


@dataclass
class Plan:
    """`pipeline.plan()`: what a run would execute and cost. `print(plan)` shows the design's
    table; the figures are attributes (§4.4, §4.8)."""

    report: dict[str, Any]  # `synix plan --json`
    full: bool = False

    @property
    def pipeline(self) -> str:
        return self.report["pipeline"]

    @property
    def branch(self) -> str:
        return self.report["branch"]

    @property
    def steps(self) -> list[str]:
        """Sources, then the steps that have work, in build order (§4.4)."""
        layers = [name for name, est in self.report["layers"].items() if est["stale"] or est["retire"]]
        return [*self.report.get("source_names", []), *layers]

    @property
    def total_input_tokens(self) -> int:
        return int(self.report["tokens_in"])

    @property
    def total_output_tokens(self) -> int:
        return int(self.report["tokens_out"])

    @property
    def estimated_cost(self) -> float:
        return round(float(self.report["cost_usd"]), 2)

    @property
    def cost_by_step(self) -> dict[str, float]:
        return {name: round(est["cost_usd"], 4) for name, est in self.report["layers"].items()
                if est["llm_calls"]}

    @property
    def estimates(self) -> dict[str, float]:
        return {"tokens": self.total_input_tokens + self.total_output_tokens,
                "cost": self.estimated_cost}

    @property
    def nothing_to_do(self) -> bool:
        return bool(self.report["nothing_to_do"])

    def to_json(self) -> dict[str, Any]:
        return self.report

    def warning(self) -> str | None:
        """The branch cost warning (§4.8), or None."""
        compared = self.report.get("compared_to_main")
        if self.branch == "main" or not compared:
            return None
        ratio = compared.get("ratio")
        if not self.full and (ratio is None or ratio <= 1.0):
            return None
        lines = ["⚠️  Warning: full reprocess on branch" if self.full
                 else f"⚠️  Warning: branch '{self.branch}' costs more than main"]
        lines.append(f"Estimated cost: {self._cost_line()}")
        if ratio is not None:
            unit = {"cost_usd": "expensive", "tokens": "tokens", "llm_calls": "LLM calls"}[compared["unit"]]
            what = "expensive than" if unit == "expensive" else f"{unit} than"
            lines.append(f"This is {ratio:g}x more {what} main branch.")
        return "\n".join(lines)

    def _cost_line(self) -> str:
        provider, model = self.report["provider"], self.report["model"]
        if provider in FREE_PROVIDERS:
            return f"${self.estimated_cost:.2f} ({provider}, offline: no model is called)"
        models = sorted({est["model"] for est in self.report["layers"].values() if est["model"]}) or [model]
        prices = ", ".join(f"{m} @ ${price_for(m).input:g}/1M in, ${price_for(m).output:g}/1M out"
                           for m in models)
        return f"${self.estimated_cost:.2f} ({prices})"

    def __str__(self) -> str:
        r = self.report
        lines = [f"Pipeline: {r['pipeline']}", f"Branch: {r['branch']}", ""]
        warning = self.warning()
        if warning:
            lines += [warning, ""]
        lines.append("Steps to execute:" if not self.nothing_to_do else "Nothing to execute: every record is current.")
        width = max([len(n) for n in [*r["layers"], *r.get("source_names", [])]] + [4])
        for name, count in r.get("source_records", {}).items():
            lines.append(f"  {name:<{width}}  →  {count:>6} records (source)")
        for name, est in r["layers"].items():
            if not (est["stale"] or est["retire"]):
                continue
            per = f", ~{_tokens(est['tokens_in'] / est['llm_calls'])} tok/rec" if est["llm_calls"] else ""
            n = est["stale"]
            lines.append(f"  {name:<{width}}  →  {n:>6} record{'s' if n != 1 else ' '} ({est['kind']}{per})")
        lines += ["", f"Estimated tokens: {self.total_input_tokens:,} input / {self.total_output_tokens:,} output",
                  f"Estimated cost: {self._cost_line()}", "",
                  "Run with: pipeline.run()" if self.branch == "main" else "Run with: branch.run()"]
        return "\n".join(lines)

    __repr__ = __str__

    def warn(self) -> "Plan":
        text = self.warning()
        if text:
            warnings.warn(CostWarning(text), stacklevel=3)
        return self


def _tokens(n: float) -> str:
    return f"{n / 1000:.0f}k" if n >= 10_000 else f"{n:,.0f}"


# ---- sync -----------------------------------------------------------------------------------


@dataclass
class SyncReport:
    """`pipeline.sync()`: how the declared pipeline differs from the one last synced or built."""

    report: dict[str, Any]  # `synix sync --json`

    @property
    def changes(self) -> list[dict[str, Any]]:
        return self.report["changes"]

    @property
    def changed_steps(self) -> list[str]:
        return [c["step"] for c in self.changes]

    def to_json(self) -> dict[str, Any]:
        return self.report

    def __str__(self) -> str:
        r = self.report
        if not r["changes"]:
            return f"Pipeline '{r['pipeline']}' — no changes."
        lines = [f"Pipeline '{r['pipeline']}' — changes detected:"]
        width = max(len(c["step"]) for c in r["changes"])
        for c in r["changes"]:
            n = c["records"]
            tail = f" → will reprocess {n} record{'s' if n != 1 else ''}" if n else ""
            lines.append(f"  {c['change'].upper():<8} {c['step']:<{width}} ({c['why']}){tail}")
        lines += ["", f"Estimated cost: ${r['cost_usd']:.2f}", "Run with: pipeline.run()"]
        return "\n".join(lines)

    __repr__ = __str__


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


class SearchResults(list[Hit]):
    """The hits, best first, with the mode actually used and its notice (a fallback)."""

    def __init__(self, view: dict[str, Any], reader: "Reader"):
        super().__init__(Hit(h, reader) for h in view["hits"])
        self.view = view
        self.mode: str = view["mode"]
        self.notice: str | None = view.get("notice")

    def to_json(self) -> dict[str, Any]:
        return self.view


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


# ---- eval, purge ----------------------------------------------------------------------------


class EvalResult:
    """`pipeline.eval(...)`: the memory's figures by name (`session_recall_at_5`,
    `turn_recall_at_10`, `precision_at_5`, …; `figures` has them all as the CLI names them).
    `precision_at_5` is the design's "Top 5 retrieval accuracy" (§9.5): the share of questions
    with an evidence session among the top 5 hits (LoCoMo's hit@5, = `session_recall@5`).
    Results compare by their `headline` figure, that one or synixbench's `found_at_altitude`."""

    HEADLINE = "session_recall@5"

    def __init__(self, result: dict[str, Any], *, mode: str = "hybrid"):
        self.result, self.mode = result, mode
        if "systems" in result:  # locomo, longmemeval: the runner's record
            self.benchmark, self.branch = result["run"]["benchmark"], result["run"]["branch"]
            self.figures: dict[str, Any] = dict(result["systems"]["memory"][mode])
            self.baselines: dict[str, dict[str, Any]] = {
                s: m[mode] for s, m in result["systems"].items() if s != "memory" and mode in m}
        else:  # synixbench's report
            self.benchmark, self.branch = "synixbench", result["branch"]
            self.figures, self.baselines = {"questions": result["questions"], **result["scores"]}, {}
        self.headline = self.HEADLINE if self.HEADLINE in self.figures else "found_at_altitude"

    @property
    def precision_at_5(self) -> float | None:
        if self.HEADLINE not in self.figures:
            raise AttributeError("precision_at_5")  # then __getattr__ names the figures there are
        return self.figures[self.HEADLINE]

    def __getattr__(self, name: str) -> Any:
        figures = self.__dict__.get("figures", {})
        for key in (name, name.replace("_at_", "@")):  # found_at_altitude; session_recall@5
            if key in figures:
                return figures[key]
        raise AttributeError(f"no figure {name!r}; figures: {', '.join(sorted(figures))}")

    def _score(self) -> float:
        return self.figures.get(self.headline) or 0.0

    def __gt__(self, other: EvalResult) -> bool:
        return self._score() > other._score()

    def __lt__(self, other: EvalResult) -> bool:
        return self._score() < other._score()

    def to_json(self) -> dict[str, Any]:
        return self.result

    def __repr__(self) -> str:
        return f"EvalResult({self.benchmark} on {self.branch}: {self.headline}={self.figures.get(self.headline)})"


@dataclass
class PurgeResult:
    """`pipeline.purge(id, ...)`: what was (or, with dry_run, would be) deleted (§11.3)."""

    report: dict[str, Any]  # `synix purge --json`

    @property
    def dry_run(self) -> bool:
        return bool(self.report["dry_run"])

    @property
    def conversation_ids(self) -> list[str]:
        return list(self.report["conversation_ids"])

    @property
    def affected_records(self) -> list[str]:
        """Every record deleted with it: the source record and all derived from it."""
        return [a["id"] for a in self.report["artifacts"]]

    def to_json(self) -> dict[str, Any]:
        return self.report

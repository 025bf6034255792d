"""What the Python door's actions return: objects with the design's names (§4.4–§4.8, §8.4,
§11.3) over the same dicts `synix … --json` prints (`to_json()`), so Python and the CLI give
one result."""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

from synix_resources.llm.pricing import FREE_PROVIDERS, TOKENLESS_NOTE, TOKENLESS_PROVIDERS, price_for


class CostWarning(UserWarning):
    """A plan that reprocesses everything on a branch, or costs more than main (§4.8)."""


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
            if compared["unit"] == "cost_usd":
                lines.append(f"This is {ratio:g}x more expensive than main branch.")
            else:  # offline providers cost nothing: compared in tokens or calls
                unit = {"tokens": "tokens", "llm_calls": "LLM calls"}[compared["unit"]]
                lines.append(f"This is {ratio:g}x the {unit} of main branch.")
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
        tokens = f"Estimated tokens: {self.total_input_tokens:,} input / {self.total_output_tokens:,} output"
        if r["provider"] in TOKENLESS_PROVIDERS and self.total_input_tokens:
            tokens += f" (what a model would be sent; {TOKENLESS_NOTE})"
        lines += ["", tokens,
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
        return self.text()

    def text(self, run_with: str = "pipeline.run()") -> str:
        """The design's report (§4.4.1); `synix sync` prints it with run_with="synix run"."""
        r = self.report
        if not r["changes"]:
            return f"Pipeline '{r['pipeline']}' — no changes."
        lines = [f"Pipeline '{r['pipeline']}' — changes detected:"]
        width = max(len(c["step"]) for c in r["changes"])
        for c in r["changes"]:
            n = c["records"]
            tail = f" → will reprocess {n} record{'s' if n != 1 else ''}" if n else ""
            lines.append(f"  {c['change'].upper():<8} {c['step']:<{width}} ({c['why']}){tail}")
        lines += ["", f"Estimated cost: ${r['cost_usd']:.2f}", f"Run with: {run_with}"]
        return "\n".join(lines)

    __repr__ = __str__


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
        elif result.get("benchmark") == "meme":  # accuracy per MEME task type, raw RAG beside
            self.benchmark, self.branch = "meme", result.get("branch")
            self.figures = _accuracy(result["scores"]["memory"])
            self.baselines = {"raw-rag": _accuracy(result["scores"]["raw-rag"])}
        else:  # synixbench's report
            self.benchmark, self.branch = "synixbench", result["branch"]
            self.figures, self.baselines = {"questions": result["questions"], **result["scores"]}, {}
        self.headline = self.HEADLINE if self.HEADLINE in self.figures else \
            "tracking" if self.benchmark == "meme" else "found_at_altitude"

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

    def __repr__(self) -> str:
        what = "would delete" if self.dry_run else "deleted"
        return (f"PurgeResult({what} {len(self.affected_records)} records of "
                f"{len(self.conversation_ids)} conversation(s))")


def _accuracy(rows: dict[str, Any]) -> dict[str, Any]:
    """A MEME score table's accuracy per task type."""
    return {task: row["accuracy"] for task, row in rows.items()}

"""Recorded runs side by side: rows (one per branch/baseline × mode), markdown, HTML with SVG.

A row's `system` is the branch name for the memory a pipeline built, or the baseline's name
(`raw-rag`, `full-context`). A baseline measured in several runs on the same data appears once
(from the newest run): it does not depend on the branch.
"""
from __future__ import annotations

import html
from typing import Iterable

from synix_assets.eval.metrics import KS

BASELINES = ("raw-rag", "full-context", "core-only", "mem0")
# Systems that depend on the pipeline: measured per branch, stamped with its build.
PIPELINE_SYSTEMS = ("memory", "core-only")


def system_label(system: str, branch: str) -> str:
    """How a system is named side by side: a memory by its branch, core-only by its branch too
    (it reads that pipeline's context document), a baseline or another system by its own name."""
    if system == "memory":
        return branch
    return f"core-only ({branch})" if system == "core-only" else system
PALETTE = ("#3366cc", "#dc3912", "#ff9900", "#109618", "#990099", "#0099c6", "#dd4477", "#66aa00")


def newest_data(entries: list[dict]) -> list[dict]:
    """Only the runs on each benchmark's most recently evaluated data file (a tiny smoke file and
    the full benchmark are not one comparison)."""
    newest: dict[tuple, tuple[str, str]] = {}
    for e in entries:
        r = e["run"]
        key = (r["benchmark"], r.get("variant") or "")
        stamp = (r.get("created_at") or "", r["data_hash"])
        if key not in newest or stamp > newest[key]:
            newest[key] = stamp
    return [e for e in entries
            if newest[(e["run"]["benchmark"], e["run"].get("variant") or "")][1] == e["run"]["data_hash"]]


def rows_of(entries: Iterable[dict]) -> list[dict]:
    """One row per (benchmark, data, system, mode), newest run wins."""
    rows: dict[tuple, dict] = {}
    for entry in entries:
        run = entry["run"]
        for system, modes in entry["systems"].items():
            label = system_label(system, run["branch"])
            built = system in PIPELINE_SYSTEMS
            for mode, summary in modes.items():
                key = (run["benchmark"], run.get("variant") or "", run["data_hash"], label, mode)
                rows[key] = {"benchmark": run["benchmark"] + (f"-{run['variant']}" if run.get("variant") else ""),
                             "system": label, "kind": "memory" if system == "memory" else "baseline",
                             "mode": mode, "run_id": run.get("run_id"), "branch": run["branch"],
                             "pipeline_version": run.get("pipeline_version") if built else None,
                             "build_run_ids": run.get("build_run_ids") if built else None,
                             "build_llm_calls": run.get("build_llm_calls") if system == "memory" else None,
                             "build_seconds": run.get("build_seconds") if system == "memory" else None,
                             "incremental_speedup": run.get("incremental_speedup") if system == "memory" else None,
                             "qa_note": run.get("qa_note"), **summary}
    return list(rows.values())


def to_json(entries: list[dict]) -> dict:
    """{benchmark: {system: {mode: metrics}}} plus the runs they came from."""
    out: dict = {"runs": [e["run"] for e in entries], "results": {}}
    for r in rows_of(entries):
        metrics = {k: v for k, v in r.items() if k not in ("benchmark", "system", "mode", "kind")}
        out["results"].setdefault(r["benchmark"], {}).setdefault(r["system"], {})[r["mode"]] = metrics
    return out


def _f(value, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _pct(value) -> str:
    return "–" if value is None else f"{value * 100:.1f} %"


# S@k / T@k is recall_any@k (an evidence session / turn among the first k: what other systems
# publish); "all@k" is strict recall_all@k (every evidence session / turn among them), the
# headline beside it: on multi-evidence questions recall_any overstates what was found.
MAIN_COLUMNS = [("S@1", "session_recall@1"), ("S@5", "session_recall@5"), ("S all@5", "session_recall_all@5"),
                ("S@10", "session_recall@10"), ("T@1", "turn_recall@1"), ("T@5", "turn_recall@5"),
                ("T@10", "turn_recall@10"), ("T all@10", "turn_recall_all@10")]
LME_COLUMNS = [("S all@10", "session_recall_all@10"), ("S ndcg@5", "session_ndcg@5"),
               ("S ndcg@10", "session_ndcg@10"), ("T all@5", "turn_recall_all@5"), ("T ndcg@10", "turn_ndcg@10")]
RECALL_NOTE = ("Recall: S@k / T@k is recall_any@k, an evidence session (S) / turn (T) within the first k read "
               "(what other systems publish); all@k is strict recall_all@k, every evidence session / turn "
               "within the first k. A memory hit counts for the sessions it derives from (provenance). fresh: "
               "the newest evidence session ranked ahead of older ones (questions whose evidence spans dates).")


def table_rows(rows: list[dict]) -> tuple[list[str], list[list[str]]]:
    head = ["benchmark", "system", "mode", "questions", *(c for c, _ in MAIN_COLUMNS), "p50 ms",
            "provenance", "fresh", "QA acc", "$ / q", "build LLM calls", "build s"]
    body = []
    for r in rows:
        body.append([r["benchmark"], r["system"], r["mode"], str(r["questions"]),
                     *(_f(r.get(k)) for _, k in MAIN_COLUMNS), _f(r.get("p50_ms"), 1),
                     _pct(r.get("provenance_complete")), _f(r.get("freshness")), _f(r.get("qa_accuracy")),
                     _f(r.get("usd_per_question"), 4), _f(r.get("build_llm_calls")), _f(r.get("build_seconds"), 1)])
    return head, body


# The design's names (000 §9.5) for what we measure, with the design's targets.
DESIGN_COLUMNS = [("precision@5 (= S@5)", "precision@5", "> 0.80"),
                  ("temporal accuracy", "temporal_accuracy", "> 0.75"),
                  ("memory freshness", "memory_freshness", "> 0.70"),
                  ("provenance completeness", "provenance_completeness", "100 %"),
                  ("incremental speedup", "incremental_speedup", "< 0.1x")]
_BASIS = {"qa_accuracy": "QA", "session_recall@5": "S@5"}


def design_rows(rows: list[dict]) -> tuple[list[str], list[list[str]]]:
    head = ["benchmark", "system", "mode", *(f"{name} [{target}]" for name, _, target in DESIGN_COLUMNS)]
    body = []
    for r in rows:
        temporal = _f(r.get("temporal_accuracy"))
        if r.get("temporal_accuracy_basis"):
            temporal += f" ({_BASIS.get(r['temporal_accuracy_basis'], r['temporal_accuracy_basis'])}, " \
                        f"n={r.get('temporal_questions')})"
        speedup = r.get("incremental_speedup")
        body.append([r["benchmark"], r["system"], r["mode"], _f(r.get("precision@5")), temporal,
                     _f(r.get("memory_freshness")), _pct(r.get("provenance_completeness")),
                     "–" if speedup is None else f"{speedup:.3f}x"])
    return head, body


DESIGN_NOTE = ("Design metrics (000 §9.5), [target]: precision@5 is \"top 5 retrieval accuracy\", our "
               "session recall@5; temporal accuracy is on the temporal category (LoCoMo 2, LongMemEval "
               "temporal-reasoning): QA accuracy when a model answered, else session recall@5; memory "
               "freshness = fresh; incremental speedup = a no-change rebuild's time / the first build's, "
               "measured in the run.")


def stamp_rows(entries: list[dict]) -> tuple[list[str], list[list[str]]]:
    """Which memory every recorded number came from: branch, pipeline version, the Synix
    build run(s) of the scratch projects and their stores."""
    head = ["run", "recorded", "benchmark", "branch", "pipeline version", "builds (Synix run ids)", "stores"]
    body = []
    for e in entries:
        r = e["run"]
        stores = sorted({b.get("store", "") for b in r.get("builds", []) if b.get("store")})
        body.append([str(r.get("run_id", "–")), r.get("created_at") or "–", r["benchmark"], r["branch"],
                     r.get("pipeline_version") or "–", ", ".join(r.get("build_run_ids") or []) or "–",
                     ", ".join(stores) or "–"])
    return head, body


def _md_table(head: list[str], body: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines)


def category_tables(rows: list[dict]) -> list[tuple[str, list[str], list[list[str]]]]:
    out = []
    for bench in dict.fromkeys(r["benchmark"] for r in rows):
        mine = [r for r in rows if r["benchmark"] == bench]
        cats = sorted({c for r in mine for c in r.get("by_category", {})})
        head = ["system", "mode", *(f"{c} S@5 (all) / T@10 (all)" for c in cats)]
        body = []
        for r in mine:
            cells = []
            for c in cats:
                m = r.get("by_category", {}).get(c)
                cells.append("–" if not m else f"{_f(m.get('session_recall@5'))} ({_f(m.get('session_recall_all@5'))})"
                             f" / {_f(m.get('turn_recall@10'))} ({_f(m.get('turn_recall_all@10'))})"
                             + (f" (n={m['questions']})" if r is mine[0] else ""))
            body.append([r["system"], r["mode"], *cells])
        out.append((bench, head, body))
    return out


ATTRIBUTION_NOTE = ("Misses (strict: not every evidence turn among the first 10) by category: for each evidence "
                    "turn not retrieved, the lowest layer it did not survive into (it survives into an artifact "
                    "that derives from its session and holds at least half of its up to 8 rarest words); "
                    "retrieval: it survived into every layer, the search missed it.")


def attribution_rows(rows: list[dict]) -> tuple[list[str], list[list[str]]]:
    """Per memory × mode × category: missed questions, missed evidence turns, and where each was
    lost (layer, lowest first, or retrieval)."""
    memory = [r for r in rows if r.get("attribution") is not None]
    place: dict[str, int] = {}  # a layer's lowest position in any memory's order (episodes first)
    for r in memory:
        for c in [r, *r.get("by_category", {}).values()]:
            a = c.get("attribution") or {}
            for i, layer in enumerate(a.get("layers") or a.get("lost_at", {})):
                if layer != "retrieval":
                    place[layer] = min(place.get(layer, i), i)
    layers = sorted(place, key=lambda layer: (place[layer], layer))
    head = ["benchmark", "system", "mode", "category", "missed q", "missed turns",
            *(f"lost at {l}" for l in layers), "lost at retrieval"]
    body = []
    for r in memory:
        for category, summary in [*sorted(r.get("by_category", {}).items()), ("all", r)]:
            a = summary.get("attribution") or {}
            lost = a.get("lost_at", {})
            body.append([r["benchmark"], r["system"], r["mode"], category, str(a.get("missed_questions", 0)),
                         str(a.get("missed_turns", 0)), *(str(lost.get(l, 0)) for l in layers),
                         str(lost.get("retrieval", 0))])
    return head, body


def markdown(entries: list[dict]) -> str:
    rows = rows_of(entries)
    parts = ["# Synix eval report", ""]
    head, body = table_rows(rows)
    parts += [RECALL_NOTE, "", _md_table(head, body), ""]
    lme = [r for r in rows if r["benchmark"].startswith("longmemeval")]
    if lme:
        parts += ["## LongMemEval metrics (abstention questions excluded)", "",
                  _md_table(["system", "mode", *(c for c, _ in LME_COLUMNS)],
                            [[r["system"], r["mode"], *(_f(r.get(k)) for _, k in LME_COLUMNS)] for r in lme]), ""]
    parts += ["## Design metrics", "", DESIGN_NOTE, "", _md_table(*design_rows(rows)), ""]
    for bench, chead, cbody in category_tables(rows):
        parts += [f"## {bench} by category", "", _md_table(chead, cbody), ""]
    head, body = attribution_rows(rows)
    if body:
        parts += ["## Where the misses were lost", "", ATTRIBUTION_NOTE, "", _md_table(head, body), ""]
    memory = [r for r in rows if r["kind"] == "memory"]
    if memory:
        layers = sorted({l for r in memory for l in r.get("altitude_top1", {})})
        parts += ["## Altitude: the layer of the top hit", "",
                  _md_table(["benchmark", "branch", "mode", *layers],
                            [[r["benchmark"], r["system"], r["mode"],
                              *(str(r.get("altitude_top1", {}).get(l, 0)) for l in layers)] for r in memory]), ""]
    parts += ["## Runs: the memory each number measured", "", _md_table(*stamp_rows(entries)), ""]
    notes = sorted({r["qa_note"] for r in rows if r.get("qa_note")})
    parts += [f"Note: {n}" for n in notes]
    return "\n".join(parts).rstrip() + "\n"


# -- HTML ----------------------------------------------------------------------------------------

def _svg_lines(title: str, series: list[tuple[str, list[float | None]]], xs: list[str]) -> str:
    w, h, left, bottom, top = 520, 260, 44, 30, 26
    plot_w, plot_h = w - left - 150, h - bottom - top
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" role="img" aria-label="{html.escape(title)}">',
             f'<text x="{left}" y="16" font-size="13" font-weight="bold">{html.escape(title)}</text>']
    for i in range(6):
        y = top + plot_h - plot_h * i / 5
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
                     f'<text x="{left - 6}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{i / 5:.1f}</text>')
    step = plot_w / max(1, len(xs) - 1)
    for j, x in enumerate(xs):
        parts.append(f'<text x="{left + j * step:.1f}" y="{h - 10}" font-size="10" text-anchor="middle">{html.escape(x)}</text>')
    for s, (name, ys) in enumerate(series):
        color = PALETTE[s % len(PALETTE)]
        pts = [(left + j * step, top + plot_h - plot_h * y) for j, y in enumerate(ys) if y is not None]
        if pts:
            parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="'
                         + " ".join(f"{x:.1f},{y:.1f}" for x, y in pts) + '"/>')
            parts += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}"/>' for x, y in pts]
        parts.append(f'<rect x="{w - 145}" y="{top + s * 16}" width="10" height="10" fill="{color}"/>'
                     f'<text x="{w - 130}" y="{top + s * 16 + 9}" font-size="11">{html.escape(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _svg_bars(title: str, groups: list[str], series: list[tuple[str, list[float | None]]],
              fmt: str = "{:.2f}", max_value: float | None = None) -> str:
    w, h, left, bottom, top = 640, 280, 44, 44, 26
    plot_w, plot_h = w - left - 160, h - bottom - top
    peak = max_value or max([v for _, vs in series for v in vs if v is not None] or [1.0]) or 1.0
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" role="img" aria-label="{html.escape(title)}">',
             f'<text x="{left}" y="16" font-size="13" font-weight="bold">{html.escape(title)}</text>',
             f'<line x1="{left}" x2="{left + plot_w}" y1="{top + plot_h}" y2="{top + plot_h}" stroke="#888"/>']
    gw = plot_w / max(1, len(groups))
    bw = gw * 0.8 / max(1, len(series))
    for g, group in enumerate(groups):
        parts.append(f'<text x="{left + g * gw + gw / 2:.1f}" y="{h - bottom + 14}" font-size="10" '
                     f'text-anchor="middle">{html.escape(group[:18])}</text>')
        for s, (_, values) in enumerate(series):
            v = values[g] if g < len(values) else None
            if v is None:
                continue
            bh = plot_h * v / peak
            x = left + g * gw + gw * 0.1 + s * bw
            parts.append(f'<rect x="{x:.1f}" y="{top + plot_h - bh:.1f}" width="{bw:.1f}" height="{bh:.1f}" '
                         f'fill="{PALETTE[s % len(PALETTE)]}"><title>{html.escape(fmt.format(v))}</title></rect>')
    for s, (name, _) in enumerate(series):
        parts.append(f'<rect x="{w - 150}" y="{top + s * 16}" width="10" height="10" fill="{PALETTE[s % len(PALETTE)]}"/>'
                     f'<text x="{w - 135}" y="{top + s * 16 + 9}" font-size="11">{html.escape(name[:22])}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _html_table(head: list[str], body: list[list[str]]) -> str:
    return ("<table><thead><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in head) + "</tr></thead><tbody>"
            + "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in body)
            + "</tbody></table>")


def html_report(entries: list[dict]) -> str:
    rows = rows_of(entries)
    label = lambda r: f"{r['system']} ({r['mode']})"
    sections = []
    for bench in dict.fromkeys(r["benchmark"] for r in rows):
        mine = [r for r in rows if r["benchmark"] == bench]
        charts = [_svg_lines(f"{bench}: session recall by k", [(label(r), [r.get(f"session_recall@{k}") for k in KS])
                                                               for r in mine], [f"k={k}" for k in KS]),
                  _svg_lines(f"{bench}: turn recall by k", [(label(r), [r.get(f"turn_recall@{k}") for k in KS])
                                                            for r in mine], [f"k={k}" for k in KS]),
                  _svg_lines(f"{bench}: strict turn recall_all by k",
                             [(label(r), [r.get(f"turn_recall_all@{k}") for k in KS]) for r in mine],
                             [f"k={k}" for k in KS])]
        cats = sorted({c for r in mine for c in r.get("by_category", {})})
        charts.append(_svg_bars(f"{bench}: session recall@5 by category", cats,
                                [(label(r), [r.get("by_category", {}).get(c, {}).get("session_recall@5") for c in cats])
                                 for r in mine], max_value=1.0))
        if any(r.get("qa_accuracy") is not None for r in mine):
            charts.append(_svg_bars(f"{bench}: QA accuracy by category", cats,
                                    [(label(r), [r.get("by_category", {}).get(c, {}).get("qa_accuracy") for c in cats])
                                     for r in mine], max_value=1.0))
        memory = [r for r in mine if r["kind"] == "memory"]
        if memory:
            layers = sorted({l for r in memory for l in r.get("altitude_top1", {})})
            charts.append(_svg_bars(f"{bench}: altitude of the top hit (questions)", [label(r) for r in memory],
                                    [(l, [r.get("altitude_top1", {}).get(l, 0) for r in memory]) for l in layers],
                                    fmt="{:.0f}"))
        costed = [r for r in mine if r.get("usd_per_question") is not None or r.get("build_llm_calls") is not None]
        if costed:
            charts.append(_svg_bars(f"{bench}: cost", ["$ per question (QA)", "build LLM calls / 100"],
                                    [(label(r), [r.get("usd_per_question"), (r.get("build_llm_calls") or 0) / 100])
                                     for r in costed], fmt="{:.4f}"))
        sections.append(f"<h2>{html.escape(bench)}</h2>" + "".join(f'<div class="chart">{c}</div>' for c in charts))
    head, body = table_rows(rows)
    cat_html = "".join(f"<h3>{html.escape(b)} by category</h3>{_html_table(h, t)}" for b, h, t in category_tables(rows))
    lost_head, lost_body = attribution_rows(rows)
    if lost_body:
        cat_html += (f"<h3>Where the misses were lost</h3><p>{html.escape(ATTRIBUTION_NOTE)}</p>"
                     + _html_table(lost_head, lost_body))
    notes = "".join(f"<p class=note>{html.escape(n)}</p>" for n in sorted({r['qa_note'] for r in rows if r.get('qa_note')}))
    return ("<!doctype html><html><head><meta charset=utf-8><title>Synix eval report</title><style>"
            "body{font-family:system-ui,sans-serif;margin:24px;color:#222}table{border-collapse:collapse;margin:8px 0 20px}"
            "th,td{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:right}th{background:#f3f3f3}"
            ".chart{display:inline-block;margin:6px 12px 6px 0}.note{color:#a60}</style></head><body>"
            f"<h1>Synix eval report</h1><p>{html.escape(RECALL_NOTE)}</p>"
            + _html_table(head, body) + f"<h3>Design metrics</h3><p>{html.escape(DESIGN_NOTE)}</p>"
            + _html_table(*design_rows(rows)) + cat_html
            + "<h3>Runs: the memory each number measured</h3>" + _html_table(*stamp_rows(entries)) + notes + "".join(sections) + "</body></html>\n")

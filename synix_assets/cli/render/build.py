"""`synix run`, `plan` and `status`: the build summary, failures, the plan and the status tables."""
from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from synix_assets.cli.render.output import error_line, level_style, make_table, money, num
from synix_assets.cli.render.text import safe

EXTRACTIVE_NOTE = ("extractive = offline sentence selection, not an LLM; set ANTHROPIC_API_KEY "
                   "(or SYNIX_LLM_PROVIDER) to summarise with a model")


def run_summary(out: Console, report, pipeline=None) -> None:
    if report.noop:
        total = sum(v.get("cached", 0) for v in report.layers.values())
        out.print(f"[bold]Nothing changed[/bold] — all {total} artifacts are cached; "
                  "no LLM calls, no Dagster runs launched.")
    table = make_table("layer", "built", "reused", "cached", "failed", "calls", "tok in", "tok out",
                       "cost", "time", title=None if report.noop else "Build summary")
    for layer, v in report.layers.items():
        level = pipeline.level(layer) if pipeline is not None and layer in pipeline.steps else None
        table.add_row(f"[{level_style(level)}]{safe(layer)}[/]", num(v.get("built")),
                      num(v.get("from_response_cache")), num(v.get("cached")),
                      num(v.get("failed")), num(v.get("llm_calls")), num(v.get("tokens_in")),
                      num(v.get("tokens_out")), money(v.get("cost_usd")),
                      f"{v['seconds']:.2f}s" if v.get("seconds") is not None else "-")
    j = report.to_json()
    table.add_row("[bold]total[/]", num(report.total("built")), num(report.total("from_response_cache")),
                  num(report.total("cached")),
                  num(report.total("failed")), num(j["llm_calls"]), num(j["tokens_in"]),
                  num(j["tokens_out"]), money(j["cost_usd"]), f"{report.seconds:.2f}s")
    out.print(table)
    reused = int(report.total("from_response_cache"))
    if reused:  # built, yet no model was asked: say so rather than let it pass for fresh work
        out.print(f"reused: {reused:,} of the {int(report.total('built')):,} records built took every "
                  "answer from the LLM response cache (no model call); cached: records already current")
    out.print(f"Branch: {safe(report.branch)}")
    provider_line(out, report.provider)
    changed = [n for n, v in report.projections.items() if v.get("changed")]
    if changed:
        out.print(f"Projections updated: {safe(', '.join(changed))}")
    unwritten = [n for n, v in report.projections.items() if v.get("not_written")]
    if unwritten:
        out.print(f"[yellow]Not written:[/] {safe(', '.join(unwritten))} — the layer it draws from "
                  "holds nothing yet; it is written once that layer is built", soft_wrap=True)


def provider_line(out: Console, identity: str) -> None:
    if not identity:
        return
    note = f" ({EXTRACTIVE_NOTE})" if identity.startswith("extractive") else ""
    out.print(f"LLM provider: [bold]{safe(identity)}[/]{escape(note)}")


def failures(out: Console, items: list[dict]) -> None:
    for f in items:
        out.print(f"[red]failed[/red] {safe(f.get('layer'), one_line=True)}/"
                  f"{safe(f.get('partition', f.get('group_key')), one_line=True)}: {safe(f.get('error'), one_line=True)}",
                  soft_wrap=True)


def skipped_inputs(out: Console, items: list[dict]) -> None:
    for s in items:
        if "error" in s:
            error_line(out, s["error"])
        else:
            out.print(f"[yellow]skipped[/yellow] conversation "
                      f"{safe(s.get('conversation_id'), one_line=True)} "
                      f"in {safe(s.get('file'), one_line=True)}: {safe(s.get('reason'), one_line=True)}",
                      soft_wrap=True)


def plan_table(out: Console, plan: dict) -> None:
    table = make_table("layer", "rebuild", "cached", "calls", "tok in", "tok out", "est. cost", "why",
                       title=f"Plan for {safe(plan['pipeline'], one_line=True)}", left=("layer", "why"))
    for layer, v in plan["layers"].items():
        why = ", ".join(f"{n} {r}" for r, n in v["reasons"].items())
        if v["retire"]:
            why = ", ".join(x for x in (why, f"{v['retire']} removed") if x)
        if v["blocked"]:
            why = ", ".join(x for x in (why, f"{v['blocked']} blocked by failures") if x)
        if v.get("failed"):  # recorded failures a build retries
            why = ", ".join(x for x in (why, f"{v['failed']} failed before, retried") if x)
        if v.get("partial"):  # built from what is there (design §10.2)
            why = ", ".join(x for x in (why, f"{v['partial']} built with a gap") if x)
        table.add_row(f"[{level_style(v['level'])}]{safe(layer)}[/]", num(v["stale"]), num(v["cached"]),
                      num(v["llm_calls"]), num(v["tokens_in"]), num(v["tokens_out"]), money(v["cost_usd"]),
                      safe(why or "-"))
    out.print(table)
    for name, p in plan["projections"].items():
        out.print(f"projection {safe(name)}: {'will update' if p['stale'] else 'up to date'}")
    out.print(f"Estimated: {num(plan['llm_calls'])} LLM calls, {num(plan['tokens_in'])} tokens in, "
              f"{num(plan['tokens_out'])} out, {money(plan['cost_usd'])} "
              f"({safe(plan['provider'])}:{safe(plan['model'])})")
    provider_line(out, f"{plan['provider']}:{plan['model']}")
    for f in plan["sources"].get("failed_files", []):
        error_line(out, f["error"])
    skipped_inputs(out, plan["sources"].get("skipped", []))
    cmp_ = plan.get("compared_to_main")
    if cmp_ and cmp_.get("ratio") is not None:
        unit = {"cost_usd": "cost", "tokens": "tokens", "llm_calls": "LLM calls"}[cmp_["unit"]]
        out.print(f"Branch {safe(plan['branch'])}: {cmp_['ratio']:g}x main's {unit} "
                  f"for the whole memory of this architecture.")
    branch = "" if plan.get("branch", "main") == "main" else f" --branch {safe(plan['branch'])}"
    out.print("Nothing to do." if plan["nothing_to_do"] else f"Run it with: synix run{branch}")


def stats_table(out: Console, stats: dict) -> None:
    table = make_table("step", "kind", "records", "last built (UTC)",
                       title=f"Records of {safe(stats['pipeline'], one_line=True)} "
                             f"(branch {safe(stats['branch'], one_line=True)})",
                       left=("step", "kind", "last built (UTC)"))
    for step, v in stats["steps"].items():
        table.add_row(f"[{level_style(v['level'])}]{safe(step)}[/]", safe(v["kind"]), num(v["records"]),
                      (v["last_built"] or "never")[:19].replace("T", " "))
    out.print(table)
    out.print(f"{num(stats['records'])} records in all")


def _spent_cells(spent: dict) -> tuple[str, ...]:
    return (num(spent["llm_calls"]), num(spent["tokens_in"]), num(spent["tokens_out"]),
            money(spent["cost_usd"]))


def spent_table(out: Console, status: dict) -> None:
    """Each layer's model calls, tokens and cost over every build of the branch (its own table:
    beside the status columns it would not fit 80 columns)."""
    table = make_table("layer", "LLM calls", "tokens in", "tokens out", "cost",
                       title="Model use, every build so far")
    for layer, v in status["layers"].items():
        table.add_row(f"[{level_style(v['level'])}]{safe(layer)}[/]", *_spent_cells(v["spent"]))
    table.add_row("[bold]total[/]", *_spent_cells(status["spent"]))
    out.print(table)


def status_table(out: Console, status: dict) -> None:
    table = make_table("layer", "artifacts", "stale", "failed", "last built (UTC)", "built", "reused",
                       "cache hits",
                       title=f"Status of {safe(status['pipeline'], one_line=True)} "
                             f"(branch {safe(status.get('branch', 'main'), one_line=True)})",
                       left=("layer", "last built (UTC)"))
    for layer, v in status["layers"].items():
        ratio = "-" if v["cache_hit_ratio"] is None else f"{v['cache_hit_ratio']:.0%}"
        ran = v["last_run"]
        table.add_row(f"[{level_style(v['level'])}]{safe(layer)}[/]", num(v["artifacts"]),
                      num(v["stale"]), num(v["failed"]),
                      (v["last_built"] or "never")[:19].replace("T", " "),
                      *((num(ran["built"]), num(ran["from_response_cache"])) if ran else ("-", "-")), ratio)
    out.print(table)
    for layer, v in status["layers"].items():  # built from what was there (design §10.2)
        for group, missing in (v.get("gaps") or {}).items():
            out.print(f"[yellow]gap[/yellow] {safe(layer, one_line=True)}/{safe(group, one_line=True)} is built "
                      f"without {safe(', '.join(missing), one_line=True)} (failed; the next build retries it)",
                      soft_wrap=True)
    out.print("last build: built = records made, reused = of them answered from the LLM response "
              "cache (no model call); cache hits = partitions that needed no model call")
    spent_table(out, status)
    if status.get("created_at"):
        out.print(f"pipeline created {safe(status['created_at'], one_line=True)}")
    for name, p in status["projections"].items():
        where = f" → {p['path']}" if p.get("path") else ""
        out.print(f"projection {safe(name)} ({safe(p['kind'])}): "
                  f"{'[yellow]stale[/]' if p['stale'] else 'up to date'}{safe(where, one_line=True)}")
    if status["last_run"]:
        r = status["last_run"]
        out.print(f"last run {safe(r['run_id'][:12])} {safe(r['status'])} at "
                  f"{safe((r['finished_at'] or r['started_at'])[:19])}")
    else:
        out.print("No build yet — run: synix run")
    failures(out, status.get("failures", []))
    pending = status.get("pending_forget")
    if pending:
        out.print(f"[yellow]forget of {safe(pending['target'], one_line=True)} is not finished[/] "
                  f"— finish it: {safe(pending['finish_with'])} (the next synix run also finishes "
                  f"it before building)")

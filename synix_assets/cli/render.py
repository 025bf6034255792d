"""Rich rendering of the report dicts. Colour by altitude: 0 dim, 1 blue, 2 green, 3 gold.

Rich's Console drops colour for NO_COLOR and for pipes; progress bars are only drawn on a TTY.
"""
from __future__ import annotations

from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

LEVEL_STYLE = {0: "dim", 1: "blue", 2: "green", 3: "gold1"}
TREE_CHILDREN = 4  # children shown per provenance node before "… and N more"
EXTRACTIVE_NOTE = ("extractive = offline sentence selection, not an LLM; set ANTHROPIC_API_KEY "
                   "(or SYNIX_LLM_PROVIDER) to summarise with a model")


def console(stderr: bool = False) -> Console:
    return Console(stderr=stderr, highlight=False)


def level_style(level: int | None) -> str:
    return LEVEL_STYLE.get(level if level is not None else 0, "gold1" if (level or 0) > 3 else "dim")


def money(x: float | None) -> str:
    if not x:
        return "$0"
    return f"${x:.4f}" if x < 1 else f"${x:,.2f}"


def make_table(*columns: str, title: str | None = None, left: tuple[str, ...] = ("layer",)) -> Table:
    """A borderless table whose first column never wraps (layer names stay readable at 80 cols)."""
    t = Table(title=title, show_edge=False, pad_edge=False, box=None, header_style="bold")
    for i, col in enumerate(columns):
        t.add_column(col, justify="left" if col in left else "right", no_wrap=i == 0)
    return t


def num(x) -> str:
    return f"{int(x or 0):,}"


# ---- run -------------------------------------------------------------------------------------

class PlainProgress:
    """One line per finished layer: for pipes, CI logs and NO_COLOR terminals without bars."""

    def __init__(self, out: Console):
        self.out = out

    def __call__(self, layer: str, event: str, data: dict) -> None:
        if event != "done":
            return
        if layer == "projections":
            changed = [n for n, v in data.items() if v.get("changed")]
            self.out.print(f"projections  updated: {', '.join(changed) or 'none'}")
            return
        total = data.get("built", 0) + data.get("cached", 0) + data.get("failed", 0)
        self.out.print(f"{layer:<12} {data.get('built', 0) + data.get('cached', 0)}/{total}  "
                       f"built {data.get('built', 0)}  cached {data.get('cached', 0)}  "
                       f"failed {data.get('failed', 0)}  tokens {num(data.get('tokens_in'))}/"
                       f"{num(data.get('tokens_out'))}  {money(data.get('cost_usd'))}")


class BarProgress:
    """A rich progress bar per layer, moved partition by partition as the build reports them."""

    def __init__(self, out: Console):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(TextColumn("{task.description:<12}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[detail]}"), TimeElapsedColumn(),
                                 console=out, transient=False)
        self.tasks: dict[str, int] = {}
        self.cached: dict[str, int] = {}

    def __enter__(self):
        self.progress.start()
        return self

    def __exit__(self, *exc):
        self.progress.stop()

    def _task(self, layer: str) -> int:
        if layer not in self.tasks:
            self.tasks[layer] = self.progress.add_task(layer, total=None, detail="")
        return self.tasks[layer]

    def __call__(self, layer: str, event: str, data: dict) -> None:
        task = self._task(layer)
        if event == "planned":
            self.cached[layer] = data.get("cached", 0)
            self.progress.update(task, total=data.get("stale", 0) + data.get("cached", 0),
                                 completed=data.get("cached", 0),
                                 detail=f"building {data.get('stale', 0)}, cached {data.get('cached', 0)}")
        elif event == "progress":
            self.progress.update(task, completed=self.cached.get(layer, 0) + data.get("done", 0))
        elif event == "done" and layer == "projections":
            changed = [n for n, v in data.items() if v.get("changed")]
            self.progress.update(task, total=1, completed=1, detail=f"updated: {', '.join(changed) or 'none'}")
        elif event == "done":
            total = data.get("built", 0) + data.get("cached", 0) + data.get("failed", 0)
            self.progress.update(task, total=total or 1, completed=total or 1, detail=(
                f"built {data.get('built', 0)} cached {data.get('cached', 0)} failed {data.get('failed', 0)}"
                f"  tok {num(data.get('tokens_in'))}/{num(data.get('tokens_out'))}  {money(data.get('cost_usd'))}"))


def run_summary(out: Console, report, pipeline=None) -> None:
    if report.noop:
        total = sum(v.get("cached", 0) for v in report.layers.values())
        out.print(f"[bold]Nothing changed[/bold] — all {total} artifacts are cached; "
                  "no LLM calls, no Dagster runs launched.")
    table = make_table("layer", "built", "cached", "failed", "calls", "tok in", "tok out", "cost", "time",
                       title=None if report.noop else "Build summary")
    for layer, v in report.layers.items():
        level = pipeline.level(layer) if pipeline is not None and layer in pipeline.steps else None
        table.add_row(f"[{level_style(level)}]{layer}[/]", num(v.get("built")), num(v.get("cached")),
                      num(v.get("failed")), num(v.get("llm_calls")), num(v.get("tokens_in")),
                      num(v.get("tokens_out")), money(v.get("cost_usd")),
                      f"{v['seconds']:.2f}s" if v.get("seconds") is not None else "-")
    j = report.to_json()
    table.add_row("[bold]total[/]", num(report.total("built")), num(report.total("cached")),
                  num(report.total("failed")), num(j["llm_calls"]), num(j["tokens_in"]),
                  num(j["tokens_out"]), money(j["cost_usd"]), f"{report.seconds:.2f}s")
    out.print(table)
    provider_line(out, report.provider)
    changed = [n for n, v in report.projections.items() if v.get("changed")]
    if changed:
        out.print(f"Projections updated: {', '.join(changed)}")


def provider_line(out: Console, identity: str) -> None:
    if not identity:
        return
    note = f" ({EXTRACTIVE_NOTE})" if identity.startswith("extractive") else ""
    out.print(f"LLM provider: [bold]{escape(identity)}[/]{escape(note)}")


def failures(out: Console, items: list[dict]) -> None:
    for f in items:
        out.print(f"[red]failed[/red] {escape(str(f.get('layer')))}/{escape(str(f.get('group_key')))}: "
                  f"{escape(str(f.get('error')))}")


def skipped_inputs(out: Console, items: list[dict]) -> None:
    for s in items:
        if "error" in s:
            out.print(f"[red]error:[/red] {escape(s['error'])}")
        else:
            out.print(f"[yellow]skipped[/yellow] conversation {escape(str(s.get('conversation_id')))} "
                      f"in {escape(str(s.get('file')))}: {escape(str(s.get('reason')))}")


# ---- plan / status ---------------------------------------------------------------------------

def plan_table(out: Console, plan: dict) -> None:
    table = make_table("layer", "rebuild", "cached", "calls", "tok in", "tok out", "est. cost", "why",
                       title=f"Plan for {plan['pipeline']}", left=("layer", "why"))
    for layer, v in plan["layers"].items():
        why = ", ".join(f"{n} {r}" for r, n in v["reasons"].items())
        if v["retire"]:
            why = ", ".join(x for x in (why, f"{v['retire']} removed") if x)
        if v["blocked"]:
            why = ", ".join(x for x in (why, f"{v['blocked']} blocked by failures") if x)
        table.add_row(f"[{level_style(v['level'])}]{layer}[/]", num(v["stale"]), num(v["cached"]),
                      num(v["llm_calls"]), num(v["tokens_in"]), num(v["tokens_out"]), money(v["cost_usd"]),
                      escape(why or "-"))
    out.print(table)
    for name, p in plan["projections"].items():
        out.print(f"projection {name}: {'will update' if p['stale'] else 'up to date'}")
    out.print(f"Estimated: {num(plan['llm_calls'])} LLM calls, {num(plan['tokens_in'])} tokens in, "
              f"{num(plan['tokens_out'])} out, {money(plan['cost_usd'])} "
              f"({escape(plan['provider'])}:{escape(plan['model'])})")
    provider_line(out, f"{plan['provider']}:{plan['model']}")
    for f in plan["sources"].get("failed_files", []):
        out.print(f"[red]error:[/red] {escape(f['error'])}")
    cmp_ = plan.get("compared_to_main")
    if cmp_ and cmp_.get("ratio") is not None:
        unit = {"cost_usd": "cost", "tokens": "tokens", "llm_calls": "LLM calls"}[cmp_["unit"]]
        out.print(f"Branch {escape(plan['branch'])}: {cmp_['ratio']:g}x main's {unit} "
                  f"for the whole memory of this architecture.")
    branch = "" if plan.get("branch", "main") == "main" else f" --branch {escape(plan['branch'])}"
    out.print("Nothing to do." if plan["nothing_to_do"] else f"Run it with: synix run{branch}")


def status_table(out: Console, status: dict) -> None:
    table = make_table("layer", "artifacts", "stale", "failed", "last built (UTC)", "cache hits",
                       title=f"Status of {status['pipeline']}", left=("layer", "last built (UTC)"))
    for layer, v in status["layers"].items():
        ratio = "-" if v["cache_hit_ratio"] is None else f"{v['cache_hit_ratio']:.0%}"
        table.add_row(f"[{level_style(v['level'])}]{layer}[/]", num(v["artifacts"]),
                      num(v["stale"]), num(v["failed"]),
                      (v["last_built"] or "never")[:19].replace("T", " "), ratio)
    out.print(table)
    for name, p in status["projections"].items():
        where = f" → {p['path']}" if p.get("path") else ""
        out.print(f"projection {name} ({p['kind']}): {'[yellow]stale[/]' if p['stale'] else 'up to date'}"
                  f"{escape(where)}")
    if status["last_run"]:
        r = status["last_run"]
        out.print(f"last run {r['run_id'][:12]} {r['status']} at {(r['finished_at'] or r['started_at'])[:19]}")
    else:
        out.print("No build yet — run: synix run")


# ---- search / lineage / get ------------------------------------------------------------------

def _node_label(node: dict) -> str:
    style = level_style(node["level"])
    label = f"[{style}]{escape(node['layer'])}[/] {escape(node['artifact_id'])}  {escape(node['title'])}"
    src = node.get("source")
    if src:
        rng = src.get("message_range")
        label += (f"  [dim]{escape(src.get('date') or '?')}"
                  f"{f'  messages {rng[0]}–{rng[1]}' if rng else ''}[/]")
    return label


def add_tree(tree: Tree, node: dict, limit: int | None = TREE_CHILDREN) -> None:
    parents = node["parents"]
    shown = parents if limit is None else parents[:limit]
    for p in shown:
        add_tree(tree.add(_node_label(p)), p, limit)
    hidden = len(parents) - len(shown) + node.get("hidden", 0)
    if hidden:
        tree.add(f"[dim]… and {hidden} more[/]")


def lineage_tree(node: dict, limit: int | None = None) -> Tree:
    tree = Tree(_node_label(node))
    add_tree(tree, node, limit)
    return tree


def search_results(out: Console, result: dict) -> None:
    if result.get("notice"):
        out.print(f"[yellow]note:[/yellow] {escape(result['notice'])}")
    if not result["hits"]:
        out.print(f"No results for {escape(repr(result['query']))}.")
        return
    for i, hit in enumerate(result["hits"], 1):
        style = level_style(hit["level"])
        tree = Tree("[bold]provenance[/]")
        if hit.get("tree") and hit["tree"]["parents"]:
            add_tree(tree, hit["tree"])
        else:  # a transcript is its own source: show the conversation and the matched messages
            for s in hit["sources"]:
                rng = s.get("message_range")
                tree.add(f"[dim]source[/] {escape(s.get('title') or '')}  [dim]{escape(s.get('date') or '?')}"
                         f"{f'  messages {rng[0]}–{rng[1]}' if rng else ''}  {escape(str(s.get('conversation_id')))}[/]")
        parts = [Text(hit["snippet"].replace("**", "")), tree]
        if hit.get("pii"):
            found = ", ".join(f"{kind}×{n}" for kind, n in sorted(hit["pii"].items()))
            parts.insert(1, Text(f"⚠ contains PII: {found}", style="bold yellow"))
        body = Group(*parts)
        title = f"[{style}]{i}. {escape(hit['layer'])} (level {hit['level']})[/] {escape(hit['title'] or '')}"
        out.print(Panel(body, title=title, title_align="left", border_style=style,
                        subtitle=f"{escape(hit['artifact_id'])}  score {hit['score']:.3f}",
                        subtitle_align="right"))


def artifact_details(out: Console, art: dict) -> None:
    style = level_style(art["level"])
    out.print(Panel(escape(art["content"]), title=f"[{style}]{escape(art['layer'])}[/] {escape(art['artifact_id'])}",
                    subtitle=escape(art["title"]), title_align="left", border_style=style))
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    table.add_row("group", escape(art["group_key"]))
    table.add_row("created", art["created_at"][:19].replace("T", " ") + ("" if art["current"] else "  (superseded)"))
    table.add_row("run", escape(str(art["run_id"])))
    audit = art.get("audit") or {}
    if audit:
        table.add_row("llm", escape(f"{audit.get('provider')}:{audit.get('model')}"))
        table.add_row("tokens", f"{num(audit.get('input_tokens'))} in / {num(audit.get('output_tokens'))} out")
        table.add_row("cost", money(audit.get("cost_usd")))
        if audit.get("flags"):
            table.add_row("flags", escape(", ".join(map(str, audit["flags"]))))
    for p in art["parents"]:
        table.add_row("parent", escape(f"{p['layer']} {p['artifact_id']}  {p['title']}"))
    for s in art["sources"][:10]:
        table.add_row("source", escape(f"{s['title']} ({s['date']}) {s['conversation_id']}"))
    for k, v in sorted(art["metadata"].items()):
        table.add_row(escape(k), escape(str(v))[:200])
    out.print(table)


def runs_table(out: Console, runs: list[dict]) -> None:
    if not runs:
        out.print("No runs yet — run: synix run")
        return
    table = make_table("run id", "status", "started (UTC)", "built", "cached", "failed", "calls", "cost", "time",
                       left=("run id", "status", "started (UTC)"))
    for r in runs:
        table.add_row(r["run_id"][:12], r["status"], (r["started_at"] or "")[5:16].replace("T", " "),
                      num(r["built"]), num(r["cached"]), num(r["failed"]), num(r["llm_calls"]),
                      money(r["cost_usd"]), f"{r['seconds']:.2f}s" if r.get("seconds") is not None else "-")
    out.print(table)


def run_details(out: Console, run: dict) -> None:
    out.print(f"run {run['run_id']} [bold]{run['status']}[/] started {run['started_at'][:19]}"
              f" finished {(run['finished_at'] or '-')[:19]}")
    table = make_table("layer", "built", "cached", "failed", "calls", "tok in", "tok out", "cost", "time")
    for layer, v in run["layers"].items():
        table.add_row(layer, num(v.get("built")), num(v.get("cached")), num(v.get("failed")),
                      num(v.get("llm_calls")), num(v.get("tokens_in")), num(v.get("tokens_out")),
                      money(v.get("cost_usd")), f"{v['seconds']:.2f}s" if v.get("seconds") is not None else "-")
    out.print(table)
    failures(out, run["failures"])

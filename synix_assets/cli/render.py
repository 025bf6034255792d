"""Rich rendering of the report dicts. Colour by altitude: 0 dim, 1 blue, 2 green, 3 gold.

Rich's Console drops colour for NO_COLOR and for pipes; progress bars are only drawn on a TTY.
"""
from __future__ import annotations

import re
import threading

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


# What data must never send to a terminal raw: C0/C1 control characters (ESC starts colour,
# clear-screen, OSC 8 link and window-title sequences; BEL, CR and backspace rewrite the line),
# bidi overrides that reorder what is shown, and lone surrogates (not encodable).
_UNSAFE = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_UNSAFE_MULTILINE = re.compile(f"[{_UNSAFE}]")
_UNSAFE_ONE_LINE = re.compile(f"[{_UNSAFE}\n\t]")


def _spell(match: re.Match) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape), e.g. in a file name
        return f"\\x{code - 0xDC00:02x}"
    return {"\n": "\\n", "\t": "\\t"}.get(match.group()) or (
        f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def plain(value, *, one_line: bool = False) -> str:
    """Text from data (titles, snippets, ids, file names, error messages) as a terminal may show
    it: control characters, bidi overrides and undecodable bytes spelled out (`\\x1b[2J`), so
    export text can neither move the cursor, clear the screen, retitle the window nor plant a
    link. `one_line` also spells out newlines and tabs."""
    return (_UNSAFE_ONE_LINE if one_line else _UNSAFE_MULTILINE).sub(_spell, str(value))


def safe(value, *, one_line: bool = False) -> str:
    """`plain`, then Rich markup escaped: the form for putting data into a markup string
    (`[redacted]` stays literal). Emoji codes (`:x:`) stay literal because our consoles and
    `markup()` never replace them."""
    return escape(plain(value, one_line=one_line))


def markup(text: str) -> Text:
    """Our own markup (with `safe` data inside) as Text, for titles that Rich would otherwise
    parse with emoji codes on (Panel titles do)."""
    return Text.from_markup(text, emoji=False)


def console(stderr: bool = False) -> Console:
    # emoji=False: ":x:" in an export must print as ":x:", not as an emoji.
    return Console(stderr=stderr, highlight=False, emoji=False)


def error_line(out: Console, text: str) -> None:
    """One `error: …` line; the text may carry data (file names, ids), so it is made safe."""
    out.print(f"[bold red]error:[/] {safe(text, one_line=True)}", soft_wrap=True)


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
            self.out.print(f"projections  updated: {safe(', '.join(changed)) or 'none'}")
            return
        total = data.get("built", 0) + data.get("cached", 0) + data.get("failed", 0)
        self.out.print(f"{safe(layer):<12} {data.get('built', 0) + data.get('cached', 0)}/{total}  "
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
        # layers report from the build's work-graph threads too (engine/schedule.py)
        self._lock = threading.Lock()

    def __enter__(self):
        self.progress.start()
        return self

    def __exit__(self, *exc):
        self.progress.stop()

    def _task(self, layer: str) -> int:
        if layer not in self.tasks:
            self.tasks[layer] = self.progress.add_task(safe(layer, one_line=True), total=None, detail="")
        return self.tasks[layer]

    def __call__(self, layer: str, event: str, data: dict) -> None:
        with self._lock:
            self._update(layer, event, data)

    def _update(self, layer: str, event: str, data: dict) -> None:
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
            self.progress.update(task, total=1, completed=1,
                                 detail=f"updated: {safe(', '.join(changed)) or 'none'}")
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
        table.add_row(f"[{level_style(level)}]{safe(layer)}[/]", num(v.get("built")), num(v.get("cached")),
                      num(v.get("failed")), num(v.get("llm_calls")), num(v.get("tokens_in")),
                      num(v.get("tokens_out")), money(v.get("cost_usd")),
                      f"{v['seconds']:.2f}s" if v.get("seconds") is not None else "-")
    j = report.to_json()
    table.add_row("[bold]total[/]", num(report.total("built")), num(report.total("cached")),
                  num(report.total("failed")), num(j["llm_calls"]), num(j["tokens_in"]),
                  num(j["tokens_out"]), money(j["cost_usd"]), f"{report.seconds:.2f}s")
    out.print(table)
    out.print(f"Branch: {safe(report.branch)}")
    provider_line(out, report.provider)
    changed = [n for n, v in report.projections.items() if v.get("changed")]
    if changed:
        out.print(f"Projections updated: {safe(', '.join(changed))}")


def provider_line(out: Console, identity: str) -> None:
    if not identity:
        return
    note = f" ({EXTRACTIVE_NOTE})" if identity.startswith("extractive") else ""
    out.print(f"LLM provider: [bold]{safe(identity)}[/]{escape(note)}")


def failures(out: Console, items: list[dict]) -> None:
    for f in items:
        out.print(f"[red]failed[/red] {safe(f.get('layer'), one_line=True)}/"
                  f"{safe(f.get('group_key'), one_line=True)}: {safe(f.get('error'), one_line=True)}",
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


# ---- plan / status ---------------------------------------------------------------------------

def plan_table(out: Console, plan: dict) -> None:
    table = make_table("layer", "rebuild", "cached", "calls", "tok in", "tok out", "est. cost", "why",
                       title=f"Plan for {safe(plan['pipeline'], one_line=True)}", left=("layer", "why"))
    for layer, v in plan["layers"].items():
        why = ", ".join(f"{n} {r}" for r, n in v["reasons"].items())
        if v["retire"]:
            why = ", ".join(x for x in (why, f"{v['retire']} removed") if x)
        if v["blocked"]:
            why = ", ".join(x for x in (why, f"{v['blocked']} blocked by failures") if x)
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


def status_table(out: Console, status: dict) -> None:
    table = make_table("layer", "artifacts", "stale", "failed", "last built (UTC)", "cache hits",
                       title=f"Status of {safe(status['pipeline'], one_line=True)} "
                             f"(branch {safe(status.get('branch', 'main'), one_line=True)})",
                       left=("layer", "last built (UTC)"))
    for layer, v in status["layers"].items():
        ratio = "-" if v["cache_hit_ratio"] is None else f"{v['cache_hit_ratio']:.0%}"
        table.add_row(f"[{level_style(v['level'])}]{safe(layer)}[/]", num(v["artifacts"]),
                      num(v["stale"]), num(v["failed"]),
                      (v["last_built"] or "never")[:19].replace("T", " "), ratio)
    out.print(table)
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
    pending = status.get("pending_forget")
    if pending:
        out.print(f"[yellow]forget of {safe(pending['target'], one_line=True)} is not finished[/] "
                  f"— finish it: {safe(pending['finish_with'])} (the next synix run also finishes "
                  f"it before building)")


# ---- search / lineage / get ------------------------------------------------------------------

def _node_label(node: dict) -> str:
    style = level_style(node["level"])
    label = (f"[{style}]{safe(node['layer'], one_line=True)}[/] {safe(node['artifact_id'], one_line=True)}"
             f"  {safe(node['title'], one_line=True)}")
    src = node.get("source")
    if src:
        rng = src.get("message_range")
        label += (f"  [dim]{safe(src.get('date') or '?', one_line=True)}"
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
        out.print(f"[yellow]note:[/yellow] {safe(result['notice'], one_line=True)}")
    if not result["hits"]:
        out.print(f"No results for {safe(repr(result['query']), one_line=True)}.")
        return
    for i, hit in enumerate(result["hits"], 1):
        style = level_style(hit["level"])
        tree = Tree("[bold]provenance[/]")
        if hit.get("tree") and hit["tree"]["parents"]:
            add_tree(tree, hit["tree"])
        else:  # a transcript is its own source: show the conversation and the matched messages
            for s in hit["sources"]:
                rng = s.get("message_range")
                tree.add(f"[dim]source[/] {safe(s.get('title') or '', one_line=True)}  "
                         f"[dim]{safe(s.get('date') or '?', one_line=True)}"
                         f"{f'  messages {rng[0]}–{rng[1]}' if rng else ''}  "
                         f"{safe(s.get('conversation_id'), one_line=True)}[/]")
        parts = [Text(plain(hit["snippet"].replace("**", ""))), tree]
        if hit.get("pii"):
            found = ", ".join(f"{kind}×{n}" for kind, n in sorted(hit["pii"].items()))
            parts.insert(1, Text(plain(f"⚠ contains PII: {found}"), style="bold yellow"))
        body = Group(*parts)
        title = (f"[{style}]{i}. {safe(hit['layer'], one_line=True)} (level {hit['level']})[/] "
                 f"{safe(hit['title'] or '', one_line=True)}")
        out.print(Panel(body, title=markup(title), title_align="left", border_style=style,
                        subtitle=markup(f"{safe(hit['artifact_id'], one_line=True)}  "
                                        f"score {hit['score']:.3f}"),
                        subtitle_align="right"))


def artifact_details(out: Console, art: dict) -> None:
    style = level_style(art["level"])
    out.print(Panel(Text(plain(art["content"])),
                    title=markup(f"[{style}]{safe(art['layer'], one_line=True)}[/] "
                                 f"{safe(art['artifact_id'], one_line=True)}"),
                    subtitle=markup(safe(art["title"], one_line=True)), title_align="left",
                    border_style=style))
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    table.add_row("group", safe(art["group_key"]))
    table.add_row("created", art["created_at"][:19].replace("T", " ") + ("" if art["current"] else "  (superseded)"))
    table.add_row("run", safe(art["run_id"]))
    audit = art.get("audit") or {}
    if audit:
        table.add_row("llm", safe(f"{audit.get('provider')}:{audit.get('model')}"))
        table.add_row("tokens", f"{num(audit.get('input_tokens'))} in / {num(audit.get('output_tokens'))} out")
        table.add_row("cost", money(audit.get("cost_usd")))
        if audit.get("flags"):
            table.add_row("flags", safe(", ".join(map(str, audit["flags"]))))
    for p in art["parents"]:
        table.add_row("parent", safe(f"{p['layer']} {p['artifact_id']}  {p['title']}", one_line=True))
    for s in art["sources"][:10]:
        table.add_row("source", safe(f"{s['title']} ({s['date']}) {s['conversation_id']}", one_line=True))
    for k, v in sorted(art["metadata"].items()):
        table.add_row(safe(k, one_line=True), safe(str(v)[:200]))
    out.print(table)


def runs_table(out: Console, runs: list[dict]) -> None:
    if not runs:
        out.print("No runs yet — run: synix run")
        return
    table = make_table("run id", "status", "started (UTC)", "built", "cached", "failed", "calls", "cost", "time",
                       left=("run id", "status", "started (UTC)"))
    for r in runs:
        table.add_row(safe(r["run_id"][:12]), safe(r["status"]),
                      safe((r["started_at"] or "")[5:16].replace("T", " ")),
                      num(r["built"]), num(r["cached"]), num(r["failed"]), num(r["llm_calls"]),
                      money(r["cost_usd"]), f"{r['seconds']:.2f}s" if r.get("seconds") is not None else "-")
    out.print(table)


def run_details(out: Console, run: dict) -> None:
    out.print(f"run {safe(run['run_id'])} [bold]{safe(run['status'])}[/] "
              f"started {safe(run['started_at'][:19])}"
              f" finished {safe((run['finished_at'] or '-')[:19])}")
    table = make_table("layer", "built", "cached", "failed", "calls", "tok in", "tok out", "cost", "time")
    for layer, v in run["layers"].items():
        table.add_row(safe(layer), num(v.get("built")), num(v.get("cached")), num(v.get("failed")),
                      num(v.get("llm_calls")), num(v.get("tokens_in")), num(v.get("tokens_out")),
                      money(v.get("cost_usd")), f"{v['seconds']:.2f}s" if v.get("seconds") is not None else "-")
    out.print(table)
    failures(out, run["failures"])


def ask_result(out: Console, result: dict) -> None:
    """`synix ask`: the answer (or the notice that none was generated), then the citations or
    evidence with their source conversations. Data goes through Text: no markup, no escapes."""
    if result.get("generated"):
        out.print(Panel(Text(result["answer"] or "(empty answer)"), title="answer", expand=False))
    else:
        out.print(Text(result["notice"], style="yellow"))
        for item in result.get("evidence", []):
            head = Text(f"{item['kind']} ", style="dim")
            head.append(item["artifact_id"], style=level_style(0 if item["kind"] == "transcript" else 1))
            head.append(f"  {item.get('title') or ''}  {item.get('date') or ''}")
            out.print(head)
            out.print(Text("   " + " ".join((item.get("snippet") or "").split())))
    for cite in result.get("citations", []) if result.get("generated") else []:
        line = Text(f"[{cite['artifact_id']}] ", style="bold")
        line.append(cite.get("title") or "")
        out.print(line)
        for src in cite.get("sources", [])[:5]:
            rng = src.get("message_range")
            out.print(Text(f"   ← {src.get('title') or src.get('conversation_id')} ({src.get('date') or '?'})"
                           + (f" messages {rng[0]}–{rng[1]}" if rng else "")))

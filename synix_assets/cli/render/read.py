"""`synix search`, `lineage`, `get`, `runs` and `ask`: results, provenance trees and records."""
from __future__ import annotations

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from synix_assets.cli.render.build import failures
from synix_assets.cli.render.output import level_style, make_table, money, num
from synix_assets.cli.render.text import markup, plain, safe

TREE_CHILDREN = 4  # children shown per provenance node before "… and N more"


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
    for key in ("notice", "incomplete"):
        if result.get(key):
            out.print(f"[yellow]note:[/yellow] {safe(result[key], one_line=True)}", soft_wrap=True)
    if not result["hits"] and not result.get("passages"):
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
        wide = hit["covers"]["conversations"]
        title = (f"[{style}]{i}. {safe(hit['layer'], one_line=True)} (level {hit['level']})[/] "
                 f"{safe(hit['title'] or '', one_line=True)}"
                 + (f" [dim]· {wide} conversations[/]" if wide > 1 else ""))
        out.print(Panel(body, title=markup(title), title_align="left", border_style=style,
                        subtitle=markup(f"{safe(hit['artifact_id'], one_line=True)}  "
                                        f"score {hit['score']:.3f}"),
                        subtitle_align="right"))
    if result.get("passages"):
        passages(out, result["passages"])


def passages(out: Console, items: list[dict]) -> None:
    """The conversations' own matched passages under the hits ("In the conversations")."""
    out.print(f"[bold]In the conversations[/] [dim]· {len(items)} passages[/]")
    for p in items:
        rng = p.get("message_range")
        head = Text("  ")
        head.append(plain(p.get("title") or p.get("conversation_id") or ""), style="bold")
        head.append(plain(f"  {p.get('date') or '?'}"
                          + (f"  messages {rng[0]}–{rng[1]}" if rng else "")
                          + f"  {p['artifact_id']}"), style="dim")
        out.print(head)
        out.print(Text("    " + plain(" ".join(p["snippet"].split()))))


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
    table = make_table("run id", "status", "started (UTC)", "built", "reused", "cached", "failed", "calls",
                       "cost", "time", left=("run id", "status", "started (UTC)"))
    for r in runs:
        table.add_row(safe(r["run_id"][:12]), safe(r["status"]),
                      safe((r["started_at"] or "")[5:16].replace("T", " ")),
                      num(r["built"]), num(r["from_response_cache"]), num(r["cached"]), num(r["failed"]),
                      num(r["llm_calls"]),
                      money(r["cost_usd"]), f"{r['seconds']:.2f}s" if r.get("seconds") is not None else "-")
    out.print(table)


def run_details(out: Console, run: dict) -> None:
    out.print(f"run {safe(run['run_id'])} [bold]{safe(run['status'])}[/] "
              f"started {safe(run['started_at'][:19])}"
              f" finished {safe((run['finished_at'] or '-')[:19])}")
    table = make_table("layer", "built", "reused", "cached", "failed", "calls", "tok in", "tok out", "cost",
                       "time")
    for layer, v in run["layers"].items():
        table.add_row(safe(layer), num(v.get("built")), num(v.get("from_response_cache")),
                      num(v.get("cached")), num(v.get("failed")),
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

"""`synix eval locomo`: evidence recall of the search index on LoCoMo (eval/locomo.py)."""
from __future__ import annotations

import json

import click

METRICS = ("session_recall@1", "session_recall@5", "session_recall@10",
           "turn_recall@1", "turn_recall@5", "turn_recall@10")
MODES = ("fts", "semantic", "hybrid")


def _parse_modes(ctx, param, value: str) -> tuple[str, ...]:
    modes = tuple(dict.fromkeys(m.strip() for m in value.split(",") if m.strip()))
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise click.BadParameter(f"{(unknown or [value])[0]!r} is not a mode; use a "
                                 f"comma-separated list of {', '.join(MODES)}")
    return modes


@click.group(name="eval")
def eval_group() -> None:
    """Benchmark the search index on public memory benchmarks."""


@eval_group.command()
@click.option("--data", "data", required=True, metavar="FILE",
              help="LoCoMo JSON file (a list of samples with 'conversation' and 'qa').")
@click.option("--modes", default=",".join(MODES), show_default=True, callback=_parse_modes,
              help="Comma-separated search modes to measure.")
@click.option("--index-dir", type=click.Path(file_okay=False), default=None,
              help="Keep the per-conversation indexes here (reruns skip re-embedding).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with the results.")
def locomo(data: str, modes: tuple[str, ...], index_dir: str | None, as_json: bool) -> None:
    """Evidence recall@1/5/10 (session and turn) and query latency per search mode.

    Each conversation is indexed the way transcripts are, every question of categories 1-4 is
    asked as a search, and a hit counts when an evidence session / turn is in the top k.
    Without the embedding model, semantic and hybrid fall back to full-text (noted).

    \b
    Examples:
      synix eval locomo --data locomo10.json --modes fts,hybrid
      synix eval locomo --data locomo10.json --json
    """
    from synix_assets.eval.locomo import run_locomo_eval

    result = run_locomo_eval(data, modes=modes, ks=(1, 5, 10), index_dir=index_dir)
    if as_json:
        out = {"questions": result["questions"],
               "modes": {m: _mode_entry(e) for m, e in result["modes"].items()}}
        click.echo(json.dumps(out, indent=2))
    else:
        _print_table(result)


def _mode_entry(entry: dict) -> dict:
    out = {k: entry[k] for k in (*METRICS, "p50_ms", "p95_ms", "by_category")}
    if "notice" in entry:
        out["notice"] = entry["notice"]
    return out


def _cell(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def _print_table(result: dict) -> None:
    from rich.markup import escape

    from synix_assets.cli import render

    out = render.console()
    table = render.make_table("mode", "S@1", "S@5", "S@10", "T@1", "T@5", "T@10", "p50 ms",
                              "p95 ms", title=f"LoCoMo evidence recall — {result['questions']} "
                              "questions (S = session, T = turn)", left=("mode",))
    for mode, entry in result["modes"].items():
        table.add_row(mode, *(_cell(entry[k]) for k in METRICS),
                      f"{entry['p50_ms']:.1f}", f"{entry['p95_ms']:.1f}")
    out.print(table)
    for mode, entry in result["modes"].items():
        if "notice" in entry:
            out.print(f"[yellow]note:[/] {mode}: {escape(entry['notice'])}")

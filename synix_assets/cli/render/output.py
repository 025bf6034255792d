"""The consoles and the small formatting every view shares (level colours, money, tables).

Rich's Console drops colour for NO_COLOR and for pipes."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table

from synix_assets.cli.render.text import safe

LEVEL_STYLE = {0: "dim", 1: "blue", 2: "green", 3: "gold1"}


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

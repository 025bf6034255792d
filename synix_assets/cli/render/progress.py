"""Build progress: one line per finished layer, or (on a TTY) a bar per layer."""
from __future__ import annotations

import threading

from rich.console import Console

from synix_assets.cli.render.output import money, num
from synix_assets.cli.render.text import safe


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
                       f"built {data.get('built', 0)}{_reused(data)}  cached {data.get('cached', 0)}  "
                       f"failed {data.get('failed', 0)}  tokens {num(data.get('tokens_in'))}/"
                       f"{num(data.get('tokens_out'))}  {money(data.get('cost_usd'))}")


def _reused(data: dict) -> str:
    n = data.get("from_response_cache", 0)
    return f" ({n} from response cache)" if n else ""


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
                f"built {data.get('built', 0)}{_reused(data)} cached {data.get('cached', 0)} "
                f"failed {data.get('failed', 0)}"
                f"  tok {num(data.get('tokens_in'))}/{num(data.get('tokens_out'))}  {money(data.get('cost_usd'))}"))

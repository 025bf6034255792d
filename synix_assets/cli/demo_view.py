"""How `synix demo` shows each step of `reports.demo.run_demo` as it happens."""
from __future__ import annotations

from pathlib import Path

from rich.rule import Rule

from synix_assets.cli import render


class DemoView:
    def __init__(self):
        self.out = render.console()
        self.plain = render.PlainProgress(self.out)
        self.pipeline = None

    def progress(self, layer: str, event: str, data: dict) -> None:
        self.plain(layer, event, data)

    def step(self, name: str, data: dict) -> None:
        getattr(self, f"_{name.replace('-', '_')}")(data)

    def _init(self, data: dict) -> None:
        self.out.print(Rule("[bold]synix demo[/]"))
        self.out.print(f"$ synix init {render.safe(data['root'])} --demo")
        self.out.print(f"  project with the monthly pipeline and {len(data['exports'])} bundled exports "
                       f"({render.safe(', '.join(data['exports']))})")
        if data["provider"] == "extractive":
            self.out.print(f"  LLM provider: extractive ({render.EXTRACTIVE_NOTE})")
        self._load_pipeline(data["root"])

    def _load_pipeline(self, root: str) -> None:
        from synix_assets.pipeline.loader import load_pipeline

        self.pipeline = load_pipeline(Path(root) / "pipeline.py")

    def _run_start(self, data: dict) -> None:
        self.out.print(Rule(render.safe(data["title"]), align="left"))
        self.out.print("$ synix run")

    def _run(self, data: dict) -> None:
        render.run_summary(self.out, data["report"], self.pipeline)

    def _search(self, data: dict) -> None:
        result = data["result"]
        self.out.print(Rule(render.safe(data["title"]), align="left"))
        self.out.print(f"$ synix search {render.safe(repr(result['query']))} --limit 5")
        render.search_results(self.out, {**result, "hits": result["hits"][:2]})
        scoped = data.get("rollup")
        if scoped is not None:
            self.out.print(f"$ synix search {render.safe(repr(result['query']))} --layers {data['rollup_layer']}")
            for hit in scoped["hits"]:
                style = render.level_style(hit["level"])
                titles = sorted({s.get("title") or "?" for s in hit["sources"]})
                self.out.print(f"  [{style}]{render.safe(hit['title'], one_line=True)}[/] "
                               f"{render.safe(hit['artifact_id'])} ← {len(titles)} conversation(s): "
                               f"{render.safe('; '.join(titles[:3]), one_line=True)}"
                               f"{' …' if len(titles) > 3 else ''}")

    def _context(self, data: dict) -> None:
        lines = data["text"].strip().splitlines()
        self.out.print(Rule("The context document (the agent's system prompt)", align="left"))
        self.out.print(f"{render.safe(data['path'])}: {len(lines)} lines")
        for line in lines[:8]:
            self.out.print(f"  [dim]{render.safe(line[:76], one_line=True)}[/]")
        if len(lines) > 8:
            self.out.print("  [dim]…[/]")

    def _switch(self, data: dict) -> None:
        self.out.print(Rule("Change the memory architecture", align="left"))
        self.out.print(f"pipeline.py now rolls episodes up by {data['template'].replace('topical', 'topic')} "
                       "instead of by month; transcripts and episodes stay cached.")
        self._load_pipeline(str(Path(data["pipeline"]).parent))

    def finish(self, root) -> None:
        self.out.print(Rule("Done"))
        self.out.print(f"Your demo project is in {render.safe(str(root))}. Try:")
        self.out.print(f"  cd {render.safe(str(root))}")
        self.out.print('  synix search "sourdough"     synix status     synix lineage <id>     synix ui')

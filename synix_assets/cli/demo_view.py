"""How `synix demo` shows each step of `app.demo.run_demo` as it happens."""
from __future__ import annotations

from pathlib import Path

from rich.rule import Rule

from synix_assets.cli import render


class DemoView:
    def __init__(self):
        self.out = render.console()
        self.plain = render.PlainProgress(self.out)
        self.pipeline = None
        self.root = None

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

        self.root = Path(root)
        self.pipeline = load_pipeline(self.root / "pipeline.py")

    @staticmethod
    def _flag(data: dict) -> str:
        branch = data.get("branch", "main")
        return "" if branch == "main" else f" --branch {render.safe(branch)}"

    def _run_start(self, data: dict) -> None:
        self.out.print(Rule(render.safe(data["title"]), align="left"))
        self.out.print(f"$ synix run{self._flag(data)}")

    def _run(self, data: dict) -> None:
        render.run_summary(self.out, data["report"], self._pipeline_of(data))

    def _pipeline_of(self, data: dict):
        from synix_assets.project import ProjectPaths

        if data.get("branch", "main") == "main" or self.root is None:
            return self.pipeline
        return ProjectPaths(self.root, data["branch"]).load_pipeline()

    def _search(self, data: dict) -> None:
        result = data["result"]
        flag = self._flag(data)
        self.out.print(Rule(render.safe(data["title"]), align="left"))
        self.out.print(f"$ synix search {render.safe(repr(result['query']))} --limit 5{flag}")
        render.search_results(self.out, {**result, "hits": result["hits"][:2],
                                         "passages": result.get("passages", [])[:2]})
        scoped = data.get("rollup")
        if scoped is not None:
            self.out.print(f"$ synix search {render.safe(repr(result['query']))} --layers "
                           f"{data['rollup_layer']}{flag}")
            for hit in scoped["hits"]:
                style = render.level_style(hit["level"])
                titles = sorted({s.get("title") or "?" for s in hit["sources"]})
                count = hit["covers"]["conversations"]  # a hit lists its first few sources
                self.out.print(f"  [{style}]{render.safe(hit['title'], one_line=True)}[/] "
                               f"{render.safe(hit['artifact_id'])} ← {count} conversation(s): "
                               f"{render.safe('; '.join(titles[:3]), one_line=True)}"
                               f"{' …' if count > 3 else ''}")

    def _context(self, data: dict) -> None:
        lines = data["text"].strip().splitlines()
        self.out.print(Rule("The context document (the agent's system prompt)", align="left"))
        self.out.print(f"{render.safe(data['path'])}: {len(lines)} lines")
        for line in lines[:8]:
            self.out.print(f"  [dim]{render.safe(line[:76], one_line=True)}[/]")
        if len(lines) > 8:
            self.out.print("  [dim]…[/]")

    def _branch(self, data: dict) -> None:
        self.out.print(Rule("Try another memory architecture on a branch", align="left"))
        self.out.print(f"$ synix branch create topical --pipeline {render.safe(Path(data['from_file']).name)}"
                       f"   # from {render.safe(data['from'])}: no copies, no LLM calls")
        self.out.print("  the branch rolls episodes up by topic instead of by month; main keeps "
                       "serving the monthly memory meanwhile.")

    def _compare(self, data: dict) -> None:
        self.out.print(Rule("main and topical side by side", align="left"))
        table = render.make_table("", "main", "topical", title=None, left=("", "main", "topical"))
        hits = {b: d["rollup"]["hits"] if d.get("rollup") else [] for b, d in data["searches"].items()}
        for i in range(max(len(h) for h in hits.values())):
            table.add_row(f"rollup hit {i + 1}", *(render.safe((hits[b][i]["title"] if i < len(hits[b])
                                                                else ""), one_line=True)[:40]
                                                    for b in ("main", "topical")))
        context = {b: t.strip().splitlines() for b, t in data["context"].items()}
        table.add_row("context.md", *(f"{len(context[b])} lines, {len(data['context'][b])} chars"
                                      for b in ("main", "topical")))
        self.out.print(table)

    def _diff(self, data: dict) -> None:
        self.out.print(Rule("What the branch changes", align="left"))
        self.out.print("$ synix branch diff topical")
        for step in data["steps"]:
            self.out.print(f"  step {render.safe(step['step'])}: {render.safe(step['change'])}")
        for layer in data["layers"]:
            self.out.print(f"  {render.safe(layer['layer'])}: +{len(layer['added'])} "
                           f"-{len(layer['removed'])} ~{len(layer['changed'])} "
                           f"={layer['shared']} shared records")

    def _promote(self, data: dict) -> None:
        self.out.print(Rule("Promote the winner", align="left"))
        self.out.print("$ synix branch promote topical")
        self.out.print(f"  main now serves topical's memory (no LLM calls); undo with "
                       f"`{render.safe(data['undo'])}`")
        self._load_pipeline(str(self.root))

    def finish(self, root) -> None:
        self.out.print(Rule("Done"))
        self.out.print(f"Your demo project is in {render.safe(str(root))}. Try:")
        self.out.print(f"  cd {render.safe(str(root))}")
        self.out.print('  synix search "sourdough"     synix status     synix lineage <id>     synix ui')

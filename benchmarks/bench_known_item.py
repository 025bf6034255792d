"""Known-item recall@5 of every door on a built project: "the conversation where I asked
about X" (`synix_assets/app/known_item.py`), the default search beside the same search over
the transcripts alone, plus the largest hit's JSON and the largest MCP tool result.

    python benchmarks/bench_known_item.py PROJECT [--n 80] [--seed 0] [--doors cli,python,http,mcp,explorer]

PROJECT is a built project folder (`synix init DIR --from conversations.json; synix run`).
The CLI runs in-process through its click command (`--json`), Python through `synix.open`,
HTTP and the explorer through the served ASGI app, MCP through its tool functions. Prints a
Markdown table (`--out FILE`: the figures as JSON).
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from pathlib import Path

K = 5
TRANSCRIPTS = "transcripts"


def door_searches(root: Path):
    """door -> (default search, transcripts-only search), each query -> hit ids, best first;
    and a list the JSON doors append each answer to (for the size figures)."""
    from click.testing import CliRunner
    from fastapi.testclient import TestClient

    import synix
    from synix_assets.app.memory import MemoryService
    from synix_assets.cli.main import main as cli
    from synix_assets.project.paths import find_project
    from synix_assets.serve.app import create_app
    from synix_assets.serve.tools import memory_tools

    paths = find_project(root)
    svc = MemoryService(paths)
    client = TestClient(create_app(svc))
    tools = {t.__name__: t for t in memory_tools(svc)}
    pipe = synix.open(str(root))
    runner = CliRunner()
    answers: dict[str, list[str]] = {"hit": [], "mcp": []}

    def cli_search(q, step=None):
        args = ["-p", str(root), "search", q, "--json", "--limit", str(K)]
        res = runner.invoke(cli, args + (["--step", step] if step else []), catch_exceptions=False)
        data = json.loads(res.output)
        answers["hit"] += [json.dumps(h) for h in data["hits"]]
        return [h["artifact_id"] for h in data["hits"]]

    def py_search(q, step=None):
        return [h.id for h in pipe.search(q, step=step, limit=K)]

    def http_search(q, step=None):
        params = {"q": q, "limit": K, **({"layers": step} if step else {})}
        data = client.get("/v1/search", params=params).json()
        answers["hit"] += [json.dumps(h) for h in data["hits"]]
        return [h["artifact_id"] for h in data["hits"]]

    def mcp_search(q, step=None):
        data = tools["search_memories"](q, layers=[step] if step else None, limit=K)
        answers["mcp"].append(json.dumps(data))
        return [h["artifact_id"] for h in data["hits"]]

    def explorer_search(q, step=None):
        html = client.get("/explore", params={"q": q, **({"layers": step} if step else {})}).text
        results = html.split('id="col-results"', 1)[1].split('id="passages"', 1)[0]
        return re.findall(r'class="item[^"]*" data-id="([^"]+)"', results)

    doors = {"cli": cli_search, "python": py_search, "http": http_search, "mcp": mcp_search,
             "explorer": explorer_search}
    return doors, answers, tools, svc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("project", type=Path)
    parser.add_argument("--n", type=int, default=80)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--doors", default="cli,python,http,mcp,explorer")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = parser.parse_args()

    from synix_assets.app.known_item import known_items, read_corpus, recall_at
    from synix_assets.project.paths import find_project

    root = args.project.resolve()
    corpus = read_corpus(find_project(root))
    items = known_items(corpus, args.n, seed=args.seed)
    doors, answers, tools, svc = door_searches(root)
    rows, figures = [], {"questions": len(items), "doors": {}}
    for name in args.doors.split(","):
        search = doors[name]
        times = []

        def timed(q, step=None, search=search):
            start = time.perf_counter()
            try:
                return search(q, step)
            finally:
                times.append((time.perf_counter() - start) * 1000)

        default = recall_at(corpus, items, timed, K)
        raw = recall_at(corpus, items, lambda q: timed(q, TRANSCRIPTS), K)
        figures["doors"][name] = {"default": default, "transcripts": raw,
                                  "p50_ms": round(statistics.median(times), 1)}
        rows.append(f"| {name} | {default['recall']:.3f} ({default['found']}/{default['questions']}) "
                    f"| {raw['recall']:.3f} ({raw['found']}/{raw['questions']}) "
                    f"| {statistics.median(times):.1f} |")
    # the answers an agent gets for a topic: one search and one cross-reference, limit 3
    for q in ("kubernetes", "python code"):
        answers["mcp"].append(json.dumps(tools["search_memories"](q, limit=3)))
        answers["mcp"].append(json.dumps(tools["cross_reference"](q, limit=3)))
    figures["largest_hit_json"] = max((len(a) for a in answers["hit"]), default=0)
    figures["largest_mcp_result"] = max((len(a) for a in answers["mcp"]), default=0)
    svc.close()
    print(f"{len(items)} known-item questions (three rare words each), recall@{K}\n")
    print("| door | default search | transcripts only | p50 ms |\n|---|---|---|---|")
    print("\n".join(rows))
    print(f"\nlargest hit JSON: {figures['largest_hit_json']:,} characters; "
          f"largest MCP result: {figures['largest_mcp_result']:,} characters")
    for name, fig in figures["doors"].items():
        if fig["default"]["missed"]:
            print(f"{name} default missed: {fig['default']['missed'][:10]}")
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()

"""One vocabulary across the doors (issue 42): every parameter of every door is a name (or an
older spelling) `app/vocabulary.py` declares; an unknown name is refused at each door with one
line naming what is accepted (the explorer: on an HTML page; its links and forms use the design
names); a server started read-only refuses writes; an agent written
against design 003's 15 tools runs unchanged over the real `mcp` client on stdio."""
from __future__ import annotations

import asyncio
import html
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qsl

import click
import pytest
from serve_helpers import synix_cmd

from synix_assets.app.vocabulary import CAPABILITIES, DOOR_PARAMS, PARAMS, SYKE_TOOLS, served_by

ROOT = Path(__file__).resolve().parents[2]


def _undeclared(names, cap, door, extra=()) -> list[str]:
    return sorted(set(names) - set(cap.accepted()) - set(DOOR_PARAMS[door]) - set(extra))


def test_the_vocabulary_declares_each_name_once_and_every_alias_leads_to_a_name():
    for cap in CAPABILITIES.values():
        assert set(cap.params) <= set(PARAMS), cap.name
        for alias, name in cap.aliases.items():
            assert name in cap.params and alias not in cap.params, (cap.name, alias)
    assert len(SYKE_TOOLS) == 15
    for tool, args in SYKE_TOOLS:
        assert set(args) <= set(CAPABILITIES[tool].params), tool


def test_every_cli_command_of_a_capability_takes_only_declared_names():
    from synix_assets.cli.main import main

    ctx = click.Context(main)
    for where, cap in served_by("cli").items():
        cmd = main
        for part in where.split():
            cmd = cmd.get_command(ctx, part)
        assert cmd is not None, where
        assert not _undeclared([p.name for p in cmd.params], cap, "cli"), (where, cmd.params)


def test_every_python_method_of_a_capability_takes_only_declared_names():
    import synix

    for cls in (synix.Pipeline, synix.PipelineBranch):
        for where, cap in served_by("python").items():
            sig = inspect.signature(getattr(cls, where))
            kinds = {p.kind for p in sig.parameters.values()}
            assert inspect.Parameter.VAR_KEYWORD not in kinds, (cls, where)  # nothing swallowed
            assert not _undeclared([n for n in sig.parameters if n != "self"], cap, "python"), where


def _http_routes(app, prefix=""):
    from synix_assets.serve.params import api_routes

    for route in api_routes(app.routes):
        if route.path.startswith(prefix):
            names = [p.alias for p in route.dependant.query_params]
            names += [p.name for p in route.dependant.path_params]
            for body in route.dependant.body_params:
                names += list(body.field_info.annotation.model_fields)
            for method in route.methods:
                yield f"{method} {route.path}", names, list(route.param_convertors)


def test_every_http_route_is_a_declared_capability_taking_only_declared_names(served_project):
    from synix_assets.app.live import TenantServices
    from synix_assets.app.memory import MemoryService
    from synix_assets.serve.app import create_app
    from synix_assets.serve.live_api import live_api

    service = MemoryService(served_project)
    try:
        routes = [*_http_routes(create_app(service), "/v1/"),
                  *_http_routes(live_api(TenantServices.__new__(TenantServices)), "/v1/")]
    finally:
        service.close()
    declared = served_by("http")
    assert len(routes) >= 25
    for key, names, path in routes:
        assert key in declared, f"{key} is not declared in app/vocabulary.py"
        assert not _undeclared(names, declared[key], "http", path), (key, names)


def _tool_text(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def _mcp(service, calls, *, writes):
    from mcp import Client

    from synix_assets.serve.mcp_server import build_server

    out = {}
    async with Client(build_server(service, writes=writes)) as client:
        out["tools"] = {t.name: t for t in (await client.list_tools()).tools}
        for key, name, args in calls:
            try:
                result = await client.call_tool(name, args)
                out[key] = ("result", result.is_error, _tool_text(result))
            except Exception as exc:  # the client raises an MCP error as MCPError
                out[key] = ("error", getattr(getattr(exc, "error", None), "code", None), str(exc))
    return out


def test_every_mcp_tool_lists_only_declared_names_and_refuses_unknown_ones(served_project):
    from synix_assets.app.memory import MemoryService

    service = MemoryService(served_project)
    calls = [("unknown", "search_memories", {"query": "marathon", "colour": "red"}),
             # declared for search (the CLI and HTTP have it), but not a parameter of this tool
             ("not_here", "search_memories", {"query": "marathon", "exact": True}),
             ("alias", "search_memories", {"query": "marathon", "layers": ["episodes"], "limit": 2}),
             ("step", "search_memories", {"query": "marathon", "step": "episodes", "limit": 2}),
             ("twice", "get_memory", {"memory_id": "x", "record_id": "x"}),
             ("before", "browse_timeline", {"before": "1999"}),
             ("records_before", "browse_records", {"before": "1999"}),
             ("write", "create_memory", {"content": "x"}),
             ("append", "append_events", {"events": [{"source": "x", "event_type": "y",
                                                       "content": "z"}]})]
    try:
        out = asyncio.run(_mcp(service, calls, writes=False))
        full = asyncio.run(_mcp(service, [], writes=True))
    finally:
        service.close()
    declared = served_by("mcp")
    assert set(full["tools"]) == set(declared)  # every tool declared, every declared tool served
    assert {name for name, _ in SYKE_TOOLS} <= set(full["tools"])
    for name, tool in full["tools"].items():
        assert tool.input_schema["additionalProperties"] is False, name
        assert not _undeclared(tool.input_schema.get("properties", {}), declared[name], "mcp"), name
    assert not {"create_memory", "update_memory", "create_link"} & set(out["tools"])  # read-only
    kind, code, text = out["unknown"]
    assert (kind, code) == ("error", -32602) and "colour" in text and "accepts query" in text, text
    assert "\n" not in text
    assert out["twice"][:2] == ("error", -32602) and "twice" in out["twice"][2]
    kind, code, text = out["not_here"]
    assert (kind, code) == ("error", -32602) and "'exact'" in text and "leaves" not in text, text
    for key in ("alias", "step"):
        kind, is_error, text = out[key]
        assert not is_error and {h["layer"] for h in json.loads(text)["hits"]} == {"episodes"}, text
    assert json.loads(out["before"][2]) == {"events": []}  # nothing happened before 1999
    assert json.loads(out["records_before"][2])["total"] == 0
    for key in ("write", "append"):
        kind, is_error, text = out[key]
        assert is_error and "read-only" in text and "--writes" in text, text
    assert "append_events" not in out["tools"] and "append_events" in full["tools"]


@pytest.fixture()
def http(served_project):
    from fastapi.testclient import TestClient

    from synix_assets.app.memory import MemoryService
    from synix_assets.serve.app import create_app

    service = MemoryService(served_project)
    try:
        with TestClient(create_app(service)) as client:
            yield client
    finally:
        service.close()


def test_http_refuses_unknown_names_and_takes_the_older_spellings(http):
    answer = http.get("/v1/search", params={"q": "marathon", "colour": "red"})
    assert answer.status_code == 400 and "colour" in answer.json()["error"]
    assert "accepts query, step" in answer.json()["error"] and "q → query" in answer.json()["error"]
    scoped = http.get("/v1/search", params={"q": "marathon", "step": "episodes"})
    assert scoped.status_code == 200 and {h["layer"] for h in scoped.json()["hits"]} == {"episodes"}
    old = http.get("/v1/search", params={"q": "marathon", "layers": "episodes"}).json()
    assert [h["artifact_id"] for h in old["hits"]] == [h["artifact_id"] for h in scoped.json()["hits"]]
    brief = http.get("/v1/brief", params={"q": "marathon"})
    assert brief.status_code == 200 and brief.json()["query"] == "marathon"
    assert http.get("/v1/brief", params={"qery": "marathon"}).status_code == 400
    both = http.get("/v1/search", params={"q": "a", "query": "b"})
    assert both.status_code == 400 and "twice" in both.json()["error"]
    assert http.get("/v1/timeline", params={"before": "1999"}).json()["total"] == 0
    assert http.get("/v1/timeline", params={"until": "2100"}).json()["total"] > 0
    assert http.get("/v1/cross_reference", params={"topic": "marathon"}).status_code == 200
    assert http.get("/v1/memories", params={"limit": 5}).json() == {"memories": [], "count": 0}
    # the guard's `?token=` (it sets the cookie) passes through to the app: not an unknown name
    assert http.get("/v1/layers", params={"token": "t"}).status_code == 200


def _explorer_pages():
    """(method path, query names) of every explorer page: the query names its handler takes."""
    from synix_assets.serve import explorer

    for route in explorer.router.routes:
        for method in route.methods:
            yield f"{method} {route.path}", [p.alias for p in route.dependant.query_params]


def test_every_explorer_page_is_a_declared_capability_taking_only_declared_names():
    declared = served_by("explorer")
    pages = dict(_explorer_pages())
    # `/` only redirects to /explore with its query string, which /explore then checks
    assert set(pages) - {"GET /"} == set(declared), "explorer pages vs app/vocabulary.py"
    for key, names in pages.items():
        if key != "GET /":
            assert not _undeclared(names, declared[key], "explorer"), (key, names)
            assert not set(names) & set(declared[key].aliases), (key, "an older spelling as a name")


class _LinksAndForms(HTMLParser):
    """The explorer URLs a page links to, and the names of its GET forms' fields, by form."""

    def __init__(self):
        super().__init__()
        self.urls: list[str] = []
        self.forms: list[tuple[str, list[str]]] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "a" and (a.get("href") or "").startswith("/"):
            self.urls.append(a["href"])
        elif tag == "form":
            self.forms.append((a.get("action") or "", []))
        elif tag in ("input", "select") and a.get("name") and self.forms:
            self.forms[-1][1].append(a["name"])


def _page_of(path: str):
    from synix_assets.serve.params import PAGES

    for key, cap in PAGES.items():
        pattern = "^" + re.sub(r"\{[^}]+\}", "[^/]+", key.split(" ", 1)[1]) + "$"
        if re.match(pattern, path):
            return key, cap
    return None, None


def test_the_explorer_links_and_forms_use_the_design_names_on_every_page_walked(http):
    """From a search, a drill-down and a layer page, follow the explorer's own links (60 pages
    at most): every link and form names only a page's declared names — never `q`/`layers`."""
    start = http.get("/explore", params={"q": "marathon", "layers": "episodes"})  # an old bookmark
    hit = re.search(r'data-id="([^"]+)"', start.text).group(1)
    queue = [f"/explore?query=marathon&sel={hit}", "/explore?q=marathon", "/layers/episodes",
             f"/records/{hit}", "/context", "/pipeline", "/pipeline/graph"]
    seen, names_used = set(), set()
    while queue and len(seen) < 60:
        url = queue.pop(0)
        if url in seen or url.startswith("/static/") or url.startswith("/docs"):
            continue
        seen.add(url)
        answer = http.get(url)
        assert answer.status_code == 200, (url, answer.text[-300:])
        parsed = _LinksAndForms()
        parsed.feed(answer.text)
        for action, fields in parsed.forms:
            key, cap = _page_of(action)
            assert cap is not None, (url, action)
            assert set(fields) <= set(cap.params) | set(DOOR_PARAMS["explorer"]), (url, action, fields)
            names_used |= set(fields)
        for link in parsed.urls:
            path, _, query = link.partition("?")
            key, cap = _page_of(path)
            if cap is None:
                continue
            names = {k for k, _ in parse_qsl(query)}
            assert names <= set(cap.params) | set(DOOR_PARAMS["explorer"]), (url, link)
            names_used |= names
            queue.append(link.replace("&amp;", "&"))
    assert len(seen) >= 20, seen
    assert {"query", "step", "sel", "src", "branch"} <= names_used, names_used


def test_the_explorer_refuses_unknown_names_with_an_html_page_and_opens_old_bookmarks(http):
    answer = http.get("/explore", params={"query": "marathon", "colour": "red"})
    assert answer.status_code == 400 and answer.headers["content-type"].startswith("text/html")
    line = html.unescape(re.search(r'role="alert">(.*?)</p>', answer.text, re.S).group(1))
    assert line == ("the page /explore takes no parameter 'colour' — it accepts query, step, mode, "
                    "as_of, layer, page, sel, src, trail, range, branch, token "
                    "(older spellings: q → query, layers → step)")
    assert '<nav' in answer.text  # the explorer's own page, with its navigation, not JSON
    both = http.get("/explore", params={"q": "a", "query": "b"})
    assert both.status_code == 400 and "given &#39;query&#39; twice (as &#39;q&#39; and &#39;query&#39;)" in both.text
    for url, name in (("/layers/episodes?colour=1", "colour"), ("/records/x?as_of=2025", "as_of"),
                      ("/pipeline?x=1", "x"), ("/context?q=a", "q"),
                      ("/layers/episodes?layer=core", "layer")):  # a path parameter is no query name
        refused = http.get(url)
        assert refused.status_code == 400 and f"takes no parameter &#39;{name}&#39;" in refused.text, url

    def hits(params):
        page = http.get("/explore", params=params)
        assert page.status_code == 200, page.text[-300:]
        return re.findall(r'class="item[^"]*" data-id="([^"]+)"', page.text.split('id="passages"')[0])

    new = hits({"query": "marathon", "step": "episodes"})
    assert new and all(h.startswith("episodes-") for h in new)
    assert hits({"q": "marathon", "layers": "episodes"}) == new  # a bookmark made before the rename
    assert hits({"query": "marathon", "step": ["episodes", "monthly"]}) == \
        hits({"query": "marathon", "step": "episodes,monthly"})
    assert http.get("/", params={"q": "marathon"}, follow_redirects=False).headers["location"] == \
        "/explore?q=marathon"
    for spelling in ("branch", "name"):  # the switcher's field, and its older spelling
        moved = http.get("/branch", params={spelling: "main"}, follow_redirects=False)
        assert moved.status_code == 303 and moved.headers["location"] == "/explore", spelling
    assert http.get("/explore", params={"token": "t"}).status_code == 200  # the guard's, passed on


def test_a_read_only_server_refuses_writes_with_one_line(http):
    answer = http.post("/v1/memories", json={"content": "x"}, headers={"X-Synix-Request": "1"})
    assert answer.status_code == 403
    assert answer.json()["error"] == ("create_memory writes to the memory and this server is read-only "
                                      "— start it with `synix serve --writes` (docs/doors.md)")
    event = {"source": "github", "event_type": "commit", "content": "Fix login"}
    appended = http.post("/v1/events", json={"events": [event]}, headers={"X-Synix-Request": "1"})
    assert appended.status_code == 403 and appended.json()["error"].startswith(
        "append_events writes to the memory and this server is read-only")
    resolved = http.post("/v1/events/resolve", json={"ids": ["ev-" + "0" * 24]},
                         headers={"X-Synix-Request": "1"})  # a POST that only reads: served
    assert resolved.status_code == 200 and resolved.json()["missing"] == ["ev-" + "0" * 24]


def test_the_ledger_routes_take_the_vocabularys_names(http):
    found = http.get("/v1/events/search", params={"q": "marathon", "limit": 2})  # older spelling
    assert found.status_code == 200 and found.json()["query"] == "marathon" and found.json()["events"]
    assert found.json() == http.get("/v1/events/search", params={"query": "marathon", "limit": 2}).json()
    odd = http.get("/v1/events/search", params={"query": "marathon", "conversation": "x"})
    assert odd.status_code == 400 and "takes no parameter 'conversation'" in odd.json()["error"]
    assert http.get("/v1/events/timeline", params={"before": "1999-01-01"}).json() == {"events": []}
    assert http.get("/v1/events/timeline", params={"until": "2100"}).status_code == 400


def test_http_write_bodies_take_design_names_and_refuse_unknown_fields(tmp_path):
    from fastapi.testclient import TestClient

    sys.path.insert(0, str(ROOT / "tests" / "app"))
    from agent_memory_helpers import built_project, transcripts

    from synix_assets.app.memory import MemoryService
    from synix_assets.serve.app import create_app

    paths = built_project(tmp_path)
    event = transcripts(paths)[0].artifact_id
    service = MemoryService(paths)
    try:
        with TestClient(create_app(service, writes=True)) as client:
            made = client.post("/v1/memories", json={"content": "Keeps bees", "source_event_ids": [event]})
            assert made.status_code == 200, made.text
            mem = made.json()["memory_id"]
            assert client.get(f"/v1/memories/{mem}").json()["evidence"] == [event]
            assert client.post(f"/v1/memories/{mem}/update", json={"new_content": "Keeps two hives"}).status_code == 200
            assert client.post(f"/v1/memories/{mem}/update", json={"content": "Keeps three hives"}).status_code == 200
            odd = client.post("/v1/memories", json={"content": "x", "colour": "red"})
            assert odd.status_code == 400 and "colour" in odd.json()["error"]
            assert "source_event_ids" in odd.json()["error"]
            swapped = client.post(f"/v1/memories/{mem}/supersede", json={"new_content": "Sold the hives"})
            assert swapped.status_code == 200, swapped.text  # design 003: no reason needed
            nothing = client.post("/v1/memories", json={"content": "x", "source_event_ids": ["nope-123"]})
            assert nothing.status_code == 400 and "names no record" in nothing.json()["error"]
    finally:
        service.close()


def test_python_refuses_unknown_keywords_with_type_error_and_takes_older_spellings(tmp_path):
    sys.path.insert(0, str(ROOT / "tests" / "app"))
    from agent_memory_helpers import built_project, transcripts

    import synix

    paths = built_project(tmp_path)
    pipe = synix.open(paths.root)
    event = transcripts(paths)[0].artifact_id
    with pytest.raises(TypeError, match="colour"):
        pipe.create_memory("x", colour="red")
    mem = pipe.create_memory("Keeps bees", source_event_ids=[event])["memory_id"]
    pipe.update_memory(mem, new_content="Keeps two hives")
    pipe.update_memory(mem, content="Keeps three hives")
    with pytest.raises(TypeError, match="older spelling"):
        pipe.update_memory(mem, new_content="a", content="b")
    assert pipe.get_memory(mem)["evidence"] == [event]
    assert pipe.list_active_memories()["memories"][0]["first_line"] == "Keeps three hives"


def test_a_memory_cites_ledger_events_and_records_and_refuses_ids_naming_nothing(tmp_path):
    """source_event_ids: an `ev-…` id is resolved in the evidence ledger, any other id in the
    store; the memory keeps both, shows each event's conversation, and an id naming nothing
    refuses the write with one line (Python and HTTP alike)."""
    from fastapi.testclient import TestClient

    sys.path.insert(0, str(ROOT / "tests" / "app"))
    from agent_memory_helpers import built_project, transcripts

    import synix
    from synix_assets.app.memory import MemoryService
    from synix_assets.serve.app import create_app
    from synix_resources.errors import MemoryOpRefused

    paths = built_project(tmp_path)
    pipe = synix.open(paths.root)
    event = pipe.search_evidence("marathon", limit=1)["events"][0]
    record = transcripts(paths)[0].artifact_id
    mem = pipe.create_memory("Signed up for a marathon", source_event_ids=[event["id"], record[:14]])
    shown = pipe.get_memory(mem["memory_id"])
    assert shown["evidence"] == [event["id"], record]
    assert shown["evidence_events"] == [{k: event[k] for k in (
        "id", "source", "event_type", "timestamp", "title", "conversation_id")}]
    ghost = "ev-" + "0" * 24
    with pytest.raises(MemoryOpRefused) as refused:
        pipe.create_memory("x", source_event_ids=[event["id"], ghost])
    assert f"evidence '{ghost}' names no event in the evidence ledger" in str(refused.value)
    assert "\n" not in refused.value.one_line()
    service = MemoryService(paths)
    try:
        with TestClient(create_app(service, writes=True)) as client:
            made = client.post("/v1/memories", json={"content": "Runs", "source_event_ids": [event["id"]]})
            assert made.status_code == 200, made.text
            assert client.get(f"/v1/memories/{made.json()['memory_id']}").json()["evidence"] == [event["id"]]
            nothing = client.post("/v1/memories", json={"content": "x", "source_event_ids": [ghost]})
            assert nothing.status_code == 400 and "names no event" in nothing.json()["error"]
    finally:
        service.close()
    assert len(pipe.list_active_memories()["memories"]) == 2  # the refused writes stored nothing


def test_cli_refuses_unknown_options_as_usage_errors(served_project):
    done = subprocess.run(synix_cmd("-p", str(served_project.root), "search", "marathon", "--colour", "red"),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "No such option '--colour'" in done.stderr


def test_help_says_the_servers_are_read_only_unless_writes(served_project):
    for command in ("serve", "mcp"):
        done = subprocess.run(synix_cmd(command, "--help"), capture_output=True, text=True, timeout=120)
        text = " ".join(done.stdout.split())
        assert "--writes" in text and "read-only" in text, text


def test_an_agent_written_against_design_003_runs_unchanged_over_stdio(tmp_path):
    """scripts/syke_003_session.py: the 15 tools by their design names and arguments, against
    a real `synix mcp --writes` on stdio started from `/`."""
    sys.path.insert(0, str(ROOT / "tests" / "app"))
    from agent_memory_helpers import built_project

    paths = built_project(tmp_path)
    env = {**os.environ, "SYNIX_LLM_PROVIDER": "fake", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "syke_003_session.py"), str(paths.root)],
                          capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    log = json.loads(done.stdout)
    assert log[0]["missing"] == []
    answers = {e["call"]: e["answer"] for e in log[1:]}
    assert {name for name, _ in SYKE_TOOLS} == set(answers)
    cited = answers["search_evidence"]["events"][0]
    assert cited["id"].startswith("ev-") and "marathon" in cited["content"].lower()
    assert answers["get_memory"]["evidence"] == [cited["id"]]  # source_event_ids: ledger events
    shown = answers["get_memory"]["evidence_events"]  # and through them, the conversation
    assert [(e["id"], e["conversation_id"]) for e in shown] == [(cited["id"], cited["conversation_id"])]
    assert cited["conversation_id"]
    assert answers["browse_timeline"]["events"]  # 003's time-windowed events: the ledger's
    assert answers["get_memory"]["content"] == "Training for a spring marathon"
    chain = answers["get_memory_history"]["chain"]
    assert [m["content"] for m in chain] == ["Runs in trail shoes", "Runs in road shoes now"]
    assert {m["first_line"] for m in answers["list_active_memories"]["memories"]} == {
        "Training for a spring marathon", "Runs in road shoes now"}
    assert answers["cross_reference"]["memories"]
    assert shutil.which("true")  # sanity: the session ran as a subprocess, not in this process

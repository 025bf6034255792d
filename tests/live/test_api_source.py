"""Sources of kind `api` and `stream` (design §3.1). An api source pulls conversations from an
Open WebUI server (its HTTP JSON API) into a mirror folder the build reads; here the server is a
loopback HTTP server the test starts and shuts down, holding chats in Open WebUI's row shape.
Pulls page through the change list, never fetch an unchanged conversation twice, resume after an
interruption, and fail in one line; the pull sensor pulls and the exports sensor builds."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import dagster as dg
import pytest

from synix_assets.app.init import init_project
from synix_assets.dagster_defs.build import build_defs
from synix_assets.dagster_defs.instance import dagster_instance
from synix_assets.dagster_defs.vocabulary import API_SENSOR, EXPORTS_SENSOR
from synix_assets.pipeline.spec import PipelineSpec
from synix_assets.project import ProjectPaths
from synix_assets.sources.api import STATE_FILE
from synix_resources.errors import PipelineDefinitionError
from synix_resources.store.artifact_store import ArtifactStore

TOKEN = "sk-test-key"
PAGE = 2  # chats per list page: three chats make two pages


def chat_row(cid: str, title: str, when: int, words: str) -> dict:
    """One chat as Open WebUI's API returns it (export-formats §8.1–8.3)."""
    q, a = f"{cid}-q", f"{cid}-a"
    messages = {q: {"id": q, "parentId": None, "childrenIds": [a], "role": "user",
                    "content": f"Tell me about {words}.", "timestamp": when},
                a: {"id": a, "parentId": q, "childrenIds": [], "role": "assistant",
                    "content": f"Here is what I know about {words}: it matters.", "timestamp": when + 5}}
    return {"id": cid, "user_id": "u1", "title": title, "updated_at": when + 5, "created_at": when,
            "chat": {"id": "", "title": title, "models": ["m"], "history": {"messages": messages, "currentId": a},
                     "messages": list(messages.values()), "timestamp": when * 1000}}


class FakeOpenWebUI:
    """The two endpoints an api source reads, with a bearer token and a count of each fetch."""

    def __init__(self, chats: list[dict]):
        self.chats = {c["id"]: c for c in chats}
        self.fetches: dict[str, int] = {}
        self.fail_fetch: set[str] = set()  # answered 503 once, as a service going away mid-pull
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                """Quiet: the test's output stays the test's."""

            def _send(self, status: int, body) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    return self._send(401, {"detail": "Not authenticated"})
                url = urlsplit(self.path)
                if url.path == "/api/v1/chats/list":
                    page = int(parse_qs(url.query).get("page", ["1"])[0])
                    rows = sorted(fake.chats.values(), key=lambda c: -c["updated_at"])
                    part = rows[(page - 1) * PAGE: page * PAGE]
                    return self._send(200, [{k: c[k] for k in ("id", "title", "updated_at", "created_at")}
                                            for c in part])
                cid = url.path.removeprefix("/api/v1/chats/")
                if cid in fake.fail_fetch:
                    fake.fail_fetch.discard(cid)
                    return self._send(503, {"detail": "busy"})
                if cid not in fake.chats:
                    return self._send(404, {"detail": "not found"})
                fake.fetches[cid] = fake.fetches.get(cid, 0) + 1
                return self._send(200, fake.chats[cid])

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


def three_chats() -> list[dict]:
    return [chat_row("c-one", "Sourdough starter", 1736000000, "sourdough starters and rye flour"),
            chat_row("c-two", "Bike gears", 1736100000, "bicycle gear ratios on hills"),
            chat_row("c-three", "Tax forms", 1736200000, "filing the yearly tax forms early")]


@pytest.fixture
def api_project(tmp_path):
    """make(url) → a project whose pipeline reads one api source instead of an export folder."""
    def make(url: str) -> ProjectPaths:
        paths = ProjectPaths(init_project(tmp_path / "mem"))
        text = (paths.root / "pipeline.py").read_text()
        line = 'pipeline.source("exports", path="exports", format="auto")\n'
        assert line in text
        (paths.root / "pipeline.py").write_text(text.replace(
            line, f'pipeline.source("exports", kind="api", url="{url}", format="openwebui", every=60)\n'))
        return paths
    return make


def _cli(paths, *args, token: str | None = TOKEN):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SYNIX_FAKE", "SYNIX_API"))}
    env["SYNIX_LLM_PROVIDER"] = "fake"
    if token is not None:
        env["SYNIX_API_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "synix_assets.cli.main", "-p", str(paths.root), *args],
                          env=env, capture_output=True, text=True, timeout=300)


def _pulled(out) -> dict:
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["sources"][0]


def test_a_pull_pages_through_the_changes_fetches_each_once_and_the_build_reads_the_mirror(api_project):
    with FakeOpenWebUI(three_chats()) as service:
        paths = api_project(service.url)
        first = _pulled(_cli(paths, "pull", "--json"))
        assert (first["listed"], first["fetched"], first["unchanged"]) == (3, 3, 0)
        mirror = paths.root / ".synix" / "api" / "exports"
        assert sorted(p.name for p in mirror.iterdir()) == [STATE_FILE, "c-one.json", "c-three.json", "c-two.json"]
        built = _cli(paths, "run", "--json")
        assert built.returncode == 0, built.stderr
        assert json.loads(built.stdout)["layers"]["episodes"]["built"] == 3
        with ArtifactStore(paths.store) as store:
            titles = {a.metadata.get("meta.chat.title") for a in store.list_layer("transcripts")}
            assert titles == {"Sourdough starter", "Bike gears", "Tax forms"}
        # nothing changed: listed again, fetched never
        again = _pulled(_cli(paths, "pull", "--json"))
        assert (again["fetched"], again["resumed"]) == (0, False)
        assert service.fetches == {"c-one": 1, "c-two": 1, "c-three": 1}
        # one chat gets a new answer: only it is fetched, and the build makes only its episode
        changed = chat_row("c-two", "Bike gears", 1736100000, "bicycle gear ratios and chain wear")
        changed["updated_at"] = 1736300000
        service.chats["c-two"] = changed
        third = _pulled(_cli(paths, "pull", "--json"))
        assert (third["fetched"], third["fetched_ids"]) == (1, ["c-two"])
        assert service.fetches == {"c-one": 1, "c-two": 2, "c-three": 1}
        rebuilt = _cli(paths, "run", "--json")
        assert rebuilt.returncode == 0, rebuilt.stderr
        assert json.loads(rebuilt.stdout)["layers"]["episodes"]["built"] == 1


def test_an_interrupted_pull_resumes_with_what_is_left_and_fetches_nothing_twice(api_project):
    with FakeOpenWebUI(three_chats()) as service:
        paths = api_project(service.url)
        service.fail_fetch = {"c-two"}  # fetched in id order: c-one, c-three, then c-two fails
        broken = _cli(paths, "pull")
        assert broken.returncode == 1
        assert broken.stderr.strip().splitlines() == [
            f"error: api source 'exports': GET {service.url}/api/v1/chats/c-two answered HTTP 503 "
            "Service Unavailable — check the source's url= and that the service is an Open WebUI server"]
        state = json.loads((paths.root / ".synix" / "api" / "exports" / STATE_FILE).read_text())
        assert state["pending"] == {"c-two": f"{1736100005:020d}"}
        assert sorted(state["fetched"]) == ["c-one", "c-three"]
        resumed = _pulled(_cli(paths, "pull", "--json"))
        assert (resumed["resumed"], resumed["fetched_ids"]) == (True, ["c-two"])
        assert service.fetches == {"c-one": 1, "c-two": 1, "c-three": 1}
        # the cursor moved on once nothing was pending: the next pull lists only the newest
        assert _pulled(_cli(paths, "pull", "--json"))["fetched"] == 0


def test_a_wrong_token_or_an_unreachable_service_is_one_line_naming_the_fix(api_project):
    with FakeOpenWebUI(three_chats()) as service:
        paths = api_project(service.url)
        refused = _cli(paths, "pull", token="wrong")
        assert refused.returncode == 1 and "Traceback" not in refused.stderr
        assert refused.stderr.strip() == (
            f"error: api source 'exports': GET {service.url}/api/v1/chats/list?page=1 answered HTTP 401 "
            "Unauthorized — set SYNIX_API_TOKEN to an API key of the service")
        url = service.url
    gone = _cli(paths, "pull")  # the server is shut down: nothing listens on its port
    assert gone.returncode == 1 and len(gone.stderr.strip().splitlines()) == 1
    assert gone.stderr.startswith(f"error: api source 'exports': cannot reach {url}/api/v1/chats/list?page=1")
    assert "the next pull resumes" in gone.stderr
    # an unpulled api source: the build says to pull, not to copy an export
    unpulled = _cli(paths, "run")
    assert unpulled.returncode == 1 and "has pulled nothing" in unpulled.stderr and "synix pull" in unpulled.stderr


def test_the_pull_sensor_pulls_and_the_exports_sensor_then_requests_the_build(api_project):
    with FakeOpenWebUI(three_chats()) as service:
        paths = api_project(service.url)
        os.environ["SYNIX_API_TOKEN"] = TOKEN  # the sensors run in this process here
        try:
            defs = build_defs(paths.root)
            sensors = {s.name: s for s in defs.sensors}
            assert sensors[API_SENSOR].minimum_interval_seconds == 60  # the source's every=
            instance = dagster_instance(paths)
            with dg.build_sensor_context(instance=instance, resources=defs.resources, definitions=defs) as ctx:
                pulled = sensors[API_SENSOR](ctx)
            assert "exports: 3 fetched, 0 unchanged" in pulled.skip_message
            with dg.build_sensor_context(instance=instance, resources=defs.resources, definitions=defs) as ctx:
                result = sensors[EXPORTS_SENSOR](ctx)
            assert len(result.run_requests) == 1
            assert result.run_requests[0].tags["synix/trigger"] == "exports_sensor"
            with dg.build_sensor_context(instance=instance, resources=defs.resources, definitions=defs) as ctx:
                quiet = sensors[API_SENSOR](ctx)
            # the cursor moved past the older two: only the newest is listed again, not fetched
            assert "exports: 0 fetched, 1 unchanged" in quiet.skip_message
            assert service.fetches == {"c-one": 1, "c-two": 1, "c-three": 1}
        finally:
            os.environ.pop("SYNIX_API_TOKEN", None)


def test_stream_is_the_live_inbox_and_an_api_source_needs_its_url():
    spec = PipelineSpec("p")
    assert spec.source("inbox", kind="stream").kind == "live"
    with pytest.raises(PipelineDefinitionError, match="needs url= the service's http"):
        spec.source("webui", kind="api")
    with pytest.raises(PipelineDefinitionError, match="cannot pull format 'chatgpt'"):
        spec.source("webui", kind="api", url="http://localhost:3000", format="chatgpt")
    with pytest.raises(PipelineDefinitionError, match='url= is for kind="api" only'):
        spec.source("files", path="exports", url="http://localhost:3000")
    src = spec.source("webui", kind="api", url="http://localhost:3000")
    assert (src.format, str(src.path), src.every) == ("openwebui", ".synix/api/webui", 900)
    spec.merge("transcripts", from_=["webui"])
    back = PipelineSpec.from_toml(spec.to_toml())
    assert (back.sources["webui"].kind, back.sources["webui"].url) == ("api", "http://localhost:3000")

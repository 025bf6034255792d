"""A projection's on_update hook (design 000 §6.1): called or POSTed to after a build changed the
projection, with what changed; never on a no-op; a failing hook is one warning line and the build
still succeeds."""
from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from synix_assets.app.init import init_project
from synix_assets.app.run import run_build
from synix_assets.pipeline.api import Pipeline
from synix_assets.project import ProjectPaths
from synix_resources.errors import PipelineDefinitionError


@pytest.fixture
def hook_server():
    """A loopback HTTP server recording each POSTed JSON body; `status` is what it answers."""
    received: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append(json.loads(body))
            self.send_response(server.status)
            self.end_headers()

        def log_message(self, *args):
            """Quiet: the test reads what the server received, not its access log."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.status = 204
    server.received = received
    server.url = f"http://127.0.0.1:{server.server_address[1]}/memory-updated"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _project(tmp_path, claude_export, conversation, url: str, n: int = 2) -> ProjectPaths:
    paths = ProjectPaths(init_project(tmp_path / "mem"))
    convs = [conversation(f"c{i}", f"Talk {i}", f"2025-0{i + 1}-03", f"topic{i} kayaks") for i in range(n)]
    claude_export(paths.root / "exports" / "talks.json", convs)
    hook = ('import json as _json, pathlib as _pathlib\n\n\ndef record_update(payload):\n'
            '    with (_pathlib.Path(__file__).parent / "updates.jsonl").open("a") as f:\n'
            '        f.write(_json.dumps(payload) + "\\n")\n\n\n# Projections:')
    text = paths.pipeline_file.read_text().replace("# Projections:", hook)  # defined before its use
    text = text.replace('from_=["episodes", "monthly", "core"])',
                        f'from_=["episodes", "monthly", "core"], on_update="{url}")')
    text = text.replace('budget_tokens=4000)', 'budget_tokens=4000, on_update=record_update)')
    paths.pipeline_file.write_text(text)
    return paths


def test_url_hook_gets_a_post_with_what_changed_and_none_on_a_noop(tmp_path, claude_export, conversation,
                                                                   hook_server):
    paths = _project(tmp_path, claude_export, conversation, hook_server.url)
    report = run_build(paths)
    assert report.projections["memory-index"]["on_update"] == "sent"
    (post,) = hook_server.received
    assert post["projection"] == "memory-index" and post["kind"] == "search_index"
    assert post["branch"] == "main" and post["pipeline"] == "personal-memory"
    assert post["changed"]["added"] > 0 and post["changed"]["documents"] == post["changed"]["added"]
    calls = [json.loads(line) for line in (paths.root / "updates.jsonl").read_text().splitlines()]
    assert [c["projection"] for c in calls] == ["context"]
    assert calls[0]["changed"]["path"].endswith("context.md")

    run_build(paths)  # nothing changed: no hook
    assert len(hook_server.received) == 1
    assert len((paths.root / "updates.jsonl").read_text().splitlines()) == 1


def test_hook_runs_again_when_a_new_conversation_changes_the_index(tmp_path, claude_export, conversation,
                                                                    hook_server):
    paths = _project(tmp_path, claude_export, conversation, hook_server.url)
    run_build(paths)
    claude_export(paths.root / "exports" / "more.json",
                  [conversation("c9", "Talk 9", "2025-01-20", "sailing lessons")])
    run_build(paths)
    assert len(hook_server.received) == 2
    assert hook_server.received[1]["changed"]["added"] >= 1  # the new episode at least


def test_failing_hook_is_one_warning_and_the_build_succeeds(tmp_path, claude_export, conversation,
                                                            hook_server, caplog):
    hook_server.status = 500
    paths = _project(tmp_path, claude_export, conversation, hook_server.url)
    with caplog.at_level(logging.WARNING, logger="synix.projections"):
        report = run_build(paths)
    assert report.status == "completed"
    line = report.projections["memory-index"]["on_update"]
    assert line.startswith("on_update of projection 'memory-index'") and "HTTP 500" in line
    assert "\n" not in line and line in caplog.text
    assert paths.search.exists() and (paths.root / "context.md").exists()


def test_on_update_round_trips_through_toml_and_bad_hooks_are_refused():
    p = Pipeline("t", base_dir="/tmp")
    p.source("exports", path="exports")
    p.merge("transcripts", from_=["exports"])
    p.search_index("index", from_=["transcripts"], on_update="http://127.0.0.1:9/x")
    p.context_doc("doc", from_="transcripts", on_update=json.dumps)
    text = p.to_toml()
    q = Pipeline.from_toml(text, base_dir="/tmp")
    assert q.on_update == {"index": "http://127.0.0.1:9/x", "doc": json.dumps}
    assert q.to_toml() == text
    with pytest.raises(PipelineDefinitionError) as err:
        p.search_index("other", from_=["transcripts"], on_update="ftp://host/x")
    assert "on_update='ftp://host/x' is not an http(s) URL" in err.value.one_line()
    with pytest.raises(PipelineDefinitionError):
        p.search_index("third", from_=["transcripts"], on_update=42)


def test_a_hook_changes_no_key_or_build_fingerprint():
    from synix_assets.app.sync import definition

    def make(hook):
        p = Pipeline("t", base_dir="/tmp")
        p.source("exports", path="exports")
        p.merge("transcripts", from_=["exports"])
        p.search_index("index", from_=["transcripts"], on_update=hook)
        return p.validate()

    plain, hooked = make(None), make("http://127.0.0.1:9/x")
    assert definition(plain, "") == definition(hooked, "")
    assert plain.projections == hooked.projections

"""/v1/search and /v1/brief of a real `synix serve` while another process rewrites the search
index as a build does: every answer is a 200 from one consistent index generation."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from serve_helpers import free_port, request, stop, synix_cmd, wait_until_serving

CLIENTS = 6
MIN_REQUESTS = 600    # answers asked for while the writer rewrites the index …
MIN_ROUNDS = 20       # … and rewrites it at least this often meanwhile
MAX_REQUESTS = 20_000  # bounds: the clients stop here, the writer after MAX_ROUNDS
MAX_ROUNDS = 5000
PATHS = ("/v1/search?q=marathon&limit=5", "/v1/search?q=training+plan&evidence=true",
         "/v1/brief?query=marathon", "/v1/search?q=kayak+trip&limit=20",
         "/v1/brief?query=training+plan&hits=10")


@pytest.fixture
def own_project(tmp_path):
    """A built demo project of this test's own: the writer changes its index."""
    from synix_assets.app.run import run_build
    from synix_assets.project import ProjectPaths
    from synix_assets.app.init import demo_exports, init_project

    paths = ProjectPaths(init_project(tmp_path / "mem", exports=demo_exports()))
    run_build(paths)
    return paths


def test_search_and_brief_answer_200_while_a_build_rewrites_the_index(own_project, tmp_path):
    port = free_port()
    log_path = tmp_path / "serve.log"
    env = {**os.environ, "SYNIX_LLM_PROVIDER": "fake"}
    with open(log_path, "wb") as log:
        server = subprocess.Popen(synix_cmd("-p", str(own_project.root), "serve", "--port", str(port)),
                                  stdout=log, stderr=subprocess.STDOUT, env=env)
    writer = None
    try:
        wait_until_serving(port, server, "/v1/layers", 90, lambda: log_path.read_text(errors="replace"))
        stop_file = tmp_path / "stop-writing"
        writer_log = tmp_path / "writer.log"
        with open(writer_log, "wb") as wlog:
            writer = subprocess.Popen([sys.executable, str(Path(__file__).with_name("index_churn.py")),
                                       str(own_project.search), str(stop_file), str(MAX_ROUNDS)],
                                      stdout=subprocess.PIPE, stderr=wlog, text=True, env=env)
        failures: list[tuple] = []
        done = [0]
        lock = threading.Lock()

        def rounds_written() -> int:
            try:
                return int(Path(str(stop_file) + ".rounds").read_text() or 0)
            except (OSError, ValueError):  # not written yet, or caught mid-write
                return 0

        def enough() -> bool:
            return done[0] >= MAX_REQUESTS or (done[0] >= MIN_REQUESTS
                                               and rounds_written() >= MIN_ROUNDS)

        def client(k: int) -> None:
            i = 0
            while not enough() and writer.poll() is None:
                path = PATHS[(i + k) % len(PATHS)]
                i += 1
                status, _, body = request(port, "GET", path)
                with lock:
                    done[0] += 1
                    if status != 200:
                        failures.append((status, path, body[:300]))

        threads = [threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=600)
        stop_file.touch()
        out, _ = writer.communicate(timeout=120)
        err = writer_log.read_text(errors="replace")
        assert writer.returncode == 0, err[-3000:]
        rounds = int(out.split()[-1])
        # The answers overlapped the writes: the writer was still going when the clients ended.
        assert MIN_ROUNDS <= rounds < MAX_ROUNDS, (rounds, err[-2000:])
        assert done[0] >= MIN_REQUESTS
        assert not failures, (f"{len(failures)} of {done[0]} answers were not 200 while the index "
                              f"was rewritten {rounds} times: {failures[:3]}")
        # The writer left the index as the build wrote it; the server still answers from it.
        status, _, _ = request(port, "GET", "/v1/search?q=marathon")
        assert status == 200
    finally:
        if writer is not None and writer.poll() is None:
            writer.kill()
            writer.wait(timeout=30)
        stop(server)

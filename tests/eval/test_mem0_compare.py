"""`--compare mem0`: the real mem0ai package (Qdrant local mode, its history DB, its OpenAI LLM
client) over a loopback OpenAI-compatible server, on the tiny LoCoMo fixture."""
from __future__ import annotations

import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from click.testing import CliRunner
from eval_fixtures import LOCOMO_TINY

from synix_assets.cli.main import main
from synix_assets.eval import workspace
from synix_assets.eval.data import load_locomo
from synix_assets.eval.mem0_system import Mem0Retriever
from synix_assets.eval.runner import EvalSettings, run_eval

ANSWERS = {"puppy": "Biscuit", "sister": "Lisbon", "bird": "a parrot", "instrument": "cello",
           "pottery": "May 2023"}


class Model:
    """The chat-completions API: Mem0's extraction gets one memory per new message (its words
    kept), Synix's answer prompt an answer found in the memory text, the judge a verdict."""

    def __init__(self):
        self.extractions: list[str] = []
        self.answers: list[str] = []

    def reply(self, body: dict) -> str:
        prompt = body["messages"][-1]["content"]
        if "## New Messages" in prompt:
            self.extractions.append(prompt)
            new = prompt.split("## New Messages\n", 1)[1].split("\n\n## ", 1)[0]
            lines = [re.sub(r"^(user|assistant): ", "", line) for line in new.splitlines() if line.strip()]
            return json.dumps({"memory": [{"text": line} for line in lines]})
        if "Your task is to label an answer" in prompt:
            gold = prompt.rsplit("Gold answer: ", 1)[1].split("\n")[0].lower()
            answer = prompt.rsplit("Generated answer: ", 1)[1].split("\n")[0].lower()
            return '{"label": "CORRECT"}' if gold in answer else '{"label": "WRONG"}'
        self.answers.append(prompt)
        memory, question = prompt.split("Question:")[0], prompt.split("Question:")[1].lower()
        return next((a for k, a in ANSWERS.items() if k in question and a.split()[-1] in memory), "not mentioned")


@pytest.fixture
def model():
    api = Model()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            data = json.dumps({"id": "c1", "object": "chat.completion", "created": 0, "model": body["model"],
                               "choices": [{"index": 0, "finish_reason": "stop",
                                            "message": {"role": "assistant", "content": api.reply(body)}}],
                               "usage": {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            """Silenced: the default writes every request to stderr."""

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    api.env = {"SYNIX_LLM_PROVIDER": "openai-compatible", "SYNIX_LLM_MODEL": "llama-test",
               "SYNIX_LLM_BASE_URL": f"http://127.0.0.1:{httpd.server_address[1]}/v1",
               "SYNIX_LLM_API_KEY": "sk-test-not-a-key"}
    yield api
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=5)


@pytest.fixture(autouse=True)
def _mem0_env(monkeypatch):
    # unset, as for a user: the eval itself must turn telemetry off and keep mem0's files local
    monkeypatch.delenv("MEM0_TELEMETRY", raising=False)
    monkeypatch.delenv("MEM0_DIR", raising=False)


def test_mem0_row_is_scored_from_the_memories_mem0_returned(model, make_project, locomo_file):
    project = make_project()
    bench = load_locomo(locomo_file)
    settings = EvalSettings(modes=("fts",), systems=("mem0",), qa_options={"env": model.env})
    result = run_eval(bench, project=project, branch="main", settings=settings)
    # four turns per session, two per add(): 2 adds x 3 sessions, each one extraction call
    assert len(model.extractions) == 6
    assert "Alice: I adopted a puppy named Biscuit last week." in model.extractions[0]
    mem0 = result["systems"]["mem0"]["mem0"]
    assert mem0["questions"] == 5 and mem0["provenance_complete"] == 1.0
    rows = [r for r in result["questions"] if r["system"] == "mem0"]
    puppy = next(r for r in rows if "puppy" in r["question"])
    assert puppy["sessions"][0] == "session_1" and "D1:1" in puppy["turns"][:2]
    # the same figures again, straight from mem0's search over the stored case (no re-ingest)
    case = bench.cases[0]
    folder = workspace.case_folder(project, "locomo", case.case_id) / "mem0"
    again = Mem0Retriever(case, folder, project.state_dir / "eval" / "mem0-home", model.env)
    try:
        for row in rows:
            ranking, _ = again.rank(row["question"], "mem0", depth=10)
            assert ranking.sessions[:10] == row["sessions"] and ranking.turns[:10] == row["turns"]
            for q in case.questions:
                if q.question_id == row["question_id"]:
                    assert row["scores"]["session"]["any@5"] == float(bool(set(q.evidence_sessions)
                                                                            & set(ranking.sessions[:5])))
        hits = again.memory.get_all(filters={"user_id": case.case_id})["results"]
        assert len(hits) == 12  # one memory per turn, each naming its own session and turn
        for s in case.sessions:
            for t in s.turns:
                memory = next(h for h in hits if h["memory"] == f"{t.speaker}: {t.text}")
                assert memory["metadata"]["session"] == s.session_id and t.turn_id in memory["metadata"]["turns"]
    finally:
        again.close()
    assert len(model.extractions) == 6
    assert mem0["session_recall@10"] == 1.0  # three sessions: every one is read by k=10
    from mem0.memory import setup, telemetry

    assert telemetry.MEM0_TELEMETRY is False  # no PostHog calls from an eval
    assert setup.mem0_dir == str(project.state_dir / "eval" / "mem0-home")


def run(*args):
    return CliRunner().invoke(main, ["eval", *args], catch_exceptions=True)


def test_compare_mem0_with_a_model_puts_mem0_in_the_same_table_with_qa(model, locomo_file, tmp_path, monkeypatch):
    for name, value in model.env.items():
        monkeypatch.setenv(name, value)
    result = run("locomo", "--data", str(locomo_file), "--no-memory", "--baseline", "raw-rag",
                 "--compare", "mem0", "--modes", "fts", "--results", str(tmp_path / "r.db"), "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert set(out["systems"]) == {"raw-rag", "mem0"}
    mem0 = out["systems"]["mem0"]["mem0"]
    assert mem0["session_recall@5"] == 1.0 and mem0["qa_accuracy"] == 1.0 and mem0["tokens_per_question"] > 0
    assert out["run"]["qa_model"] == "openai-compatible:llama-test"
    assert any("Biscuit" in a for a in model.answers)
    md = run("report", "--results", str(tmp_path / "r.db"))
    assert md.exit_code == 0 and "| locomo | mem0 | mem0 |" in md.stdout and "| locomo | raw-rag | fts |" in md.stdout


def test_compare_mem0_offline_says_it_needs_a_model_in_one_line(locomo_file, tmp_path, monkeypatch):
    for var in ("ANTHROPIC_API_KEY", "SYNIX_LLM_API_KEY", "SYNIX_LLM_BASE_URL", "SYNIX_LLM_MODEL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "extractive")
    result = run("locomo", "--data", str(locomo_file), "--no-memory", "--compare", "mem0",
                 "--results", str(tmp_path / "r.db"))
    assert result.exit_code == 1 and "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Mem0 needs a model" in lines[0]
    assert "ANTHROPIC_API_KEY" in lines[0] and "SYNIX_LLM_BASE_URL" in lines[0]
    assert not (tmp_path / "r.db").exists()


def test_compare_mem0_without_the_package_names_the_extra(locomo_file, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "mem0", None)  # as if mem0ai were not installed
    result = run("locomo", "--data", str(locomo_file), "--no-memory", "--compare", "mem0",
                 "--results", str(tmp_path / "r.db"))
    assert result.exit_code == 1 and "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and 'pip install "synix[mem0]"' in lines[0]


def test_mem0_on_longmemeval_stores_user_and_assistant_turns_as_they_are(model, make_project, lme_files):
    from synix_assets.eval.data import load_longmemeval

    project = make_project()
    result = run_eval(load_longmemeval(lme_files["s"]), project=project, branch="main",
                      settings=EvalSettings(modes=("fts",), systems=("mem0",), qa_options={"env": model.env}))
    assert any("user: I just bought a blue kayak" in e for e in model.extractions)
    assert not any("user: user:" in e for e in model.extractions)
    mem0 = result["systems"]["mem0"]["mem0"]
    assert mem0["questions"] == 2 and mem0["session_recall@10"] == 1.0 and mem0["provenance_complete"] == 1.0

"""PII flag/redact through real builds, SQLCipher at rest, and API keys never written anywhere."""
from __future__ import annotations

import hashlib
import json
import re
import shutil
import sqlite3
import threading

import httpx2
import pytest

from synix_assets.app.run import run_build
from synix_resources.errors import BuildFailed
from synix_resources.store.artifact_store import ArtifactStore

PKUPPENS = "chatgpt/pkuppens-my_chat_gpt__history_download_conversations.json"
# The owner's e-mail address and mobile number, by hash only: the test data must not be quoted.
OWNER_EMAIL_SHA = "2740dee46906bbcc4ea6906ccd6fb5479d7df5f2bfb155ee0b479197eb4f9c33"
OWNER_PHONE_DIGITS_SHA = hashlib.sha256(b"41047445").hexdigest()  # digits only, no prefix
KEY = "sk-ant-test-SECRETMARKER123"
ALL_KINDS = ("Mail jane.roe@example.org or call +1 (555) 123-4567. Card 4111 1111 1111 1111, "
             "IBAN NL91ABNA0417164300, SSN 123-45-6789, key sk-ant-abcdefghijklmnopqrstu.")


def _pipeline(paths, pii_mode: str, extra: str = "") -> None:
    text = paths.pipeline_file.read_text().replace(
        'conflict="prefer_latest")', f'conflict="prefer_latest", pii="{pii_mode}")')
    paths.pipeline_file.write_text(text + extra)


def test_flag_records_every_kind_in_metadata(small_project, make_conversations, claude_export):
    paths = small_project(1)
    conv = make_conversations(1)[0]
    conv["messages"][0] = ("human", ALL_KINDS, conv["messages"][0][2])
    claude_export(paths.root / "exports" / "talks.json", [conv])
    _pipeline(paths, "flag")
    run_build(paths)
    store = ArtifactStore(paths.store)
    try:
        found = store.current("transcripts", "conv-0").metadata["meta.custom.pii"]
        # every kind is found; PHONE also counts digit runs of the transcript's own timestamps
        assert set(found) == {"EMAIL", "PHONE", "CARD", "IBAN", "US_SSN", "API_KEY"}
        assert found["EMAIL"] == found["CARD"] == found["IBAN"] == found["US_SSN"] == 1
        assert "jane.roe@example.org" in store.current("transcripts", "conv-0").content  # flagged, kept
    finally:
        store.close()


def test_detect_records_where_each_finding_is_and_keeps_the_text(small_project, make_conversations,
                                                                 claude_export):
    paths = small_project(1)
    conv = make_conversations(1)[0]
    conv["messages"][0] = ("human", ALL_KINDS, conv["messages"][0][2])
    claude_export(paths.root / "exports" / "talks.json", [conv])
    _pipeline(paths, "detect")
    text = paths.pipeline_file.read_text().replace("prompt=prompts.episode_summary)",
                                                   'prompt=prompts.episode_summary, pii="detect")')
    paths.pipeline_file.write_text(text)
    run_build(paths)
    store = ArtifactStore(paths.store)
    try:
        transcript = store.current("transcripts", "conv-0")
        assert "jane.roe@example.org" in transcript.content  # detected, not changed
        findings = transcript.metadata["meta.custom.pii_findings"]
        spans = {f["kind"]: transcript.content[f["start"]:f["end"]] for f in findings}
        assert spans["EMAIL"] == "jane.roe@example.org"
        assert spans["IBAN"] == "NL91ABNA0417164300"
        assert spans["API_KEY"] == "sk-ant-abcdefghijklmnopqrstu"
        # the counts are the flag's, so search hits and downstream layers carry them as before
        counts = transcript.metadata["meta.custom.pii"]
        assert counts["EMAIL"] == 1 and sum(counts.values()) == len(findings)
        assert "jane.roe@example.org" not in json.dumps(transcript.metadata)  # spans, never values
        episode = store.current("episodes", "conv-0")
        at = [f for f in episode.metadata["meta.custom.pii_findings"] if f["kind"] == "EMAIL"]
        assert at and at[0]["in"] == transcript.artifact_id
        assert transcript.content[at[0]["start"]:at[0]["end"]] == "jane.roe@example.org"
    finally:
        store.close()


def test_flag_lists_no_findings(small_project, make_conversations, claude_export):
    paths = small_project(1)
    conv = make_conversations(1)[0]
    conv["messages"][0] = ("human", ALL_KINDS, conv["messages"][0][2])
    claude_export(paths.root / "exports" / "talks.json", [conv])
    _pipeline(paths, "flag")
    run_build(paths)
    store = ArtifactStore(paths.store)
    try:
        meta = store.current("transcripts", "conv-0").metadata
        assert meta["meta.custom.pii"]["EMAIL"] == 1 and "meta.custom.pii_findings" not in meta
    finally:
        store.close()


def test_unknown_pii_mode_names_the_three_modes():
    from synix_assets.pipeline.api import Pipeline
    from synix_resources.errors import PipelineDefinitionError

    p = Pipeline("t", base_dir="/tmp")
    p.source("exports", path="exports")
    with pytest.raises(PipelineDefinitionError) as err:
        p.merge("transcripts", from_=["exports"], pii="mask")
    assert 'pii="detect"' in err.value.one_line()


def _owner_values(raw: str) -> tuple[set[str], set[str]]:
    emails = {m for m in re.findall(r"[\w.+-]+@[\w-]+\.[\w.]+", raw)
              if hashlib.sha256(m.encode()).hexdigest() == OWNER_EMAIL_SHA}
    phones = {m for m in re.findall(r"(?:\+31 ?6|06)-?\d{8}", raw)
              if hashlib.sha256(re.sub(r"\D", "", m)[-8:].encode()).hexdigest() == OWNER_PHONE_DIGITS_SHA}
    return emails, phones


@pytest.fixture(scope="module")
def redacted_build(tmp_path_factory, shared_data):
    """The pkuppens export built with pii="redact" on the transcripts; every prompt recorded."""
    from synix_assets.project import ProjectPaths
    from synix_assets.app.init import init_project
    from synix_resources.llm.fake import FakeClient
    source = shared_data / PKUPPENS
    paths = ProjectPaths(init_project(tmp_path_factory.mktemp("pii") / "mem"))
    shutil.copy2(source, paths.root / "exports" / "conversations.json")
    _pipeline(paths, "redact")
    prompts: list[str] = []
    lock = threading.Lock()
    original = FakeClient.call_once

    def recording(self, request, model, attempt):
        with lock:
            prompts.append(request.prompt + "\n" + (request.system or ""))
        return original(self, request, model, attempt)

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SYNIX_LLM_PROVIDER", "fake")
        mp.setattr(FakeClient, "call_once", recording)
        run_build(paths)
    # the export itself still holds the data: the check is on everything Synix made from it
    (paths.root / "exports" / "conversations.json").unlink()
    emails, phones = _owner_values(source.read_text(encoding="utf-8"))
    assert emails and phones, "the owner's e-mail address and phone number are in the input"
    return paths, prompts, emails, phones


def _leaks(paths, prompts, values: set[str]) -> list[str]:
    out = []
    for value in values:
        for f in sorted(paths.root.rglob("*")):
            if f.is_file() and value.encode() in f.read_bytes():
                out.append(str(f.relative_to(paths.root)))
        out += ["prompt" for p in prompts if value in p][:1]
    return out


def test_redact_keeps_the_owner_email_out_of_artifacts_index_and_prompts(redacted_build):
    paths, prompts, emails, _ = redacted_build
    assert prompts
    assert _leaks(paths, prompts, emails) == []
    store = ArtifactStore(paths.store)
    try:
        flagged = [a for a in store.list_layer("transcripts") if a.metadata.get("meta.custom.pii_redacted")]
        assert flagged and "[EMAIL]" in "".join(a.content for a in flagged)
    finally:
        store.close()


def test_redact_keeps_the_owner_phone_out_of_artifacts_index_and_prompts(redacted_build):
    paths, prompts, _, phones = redacted_build
    assert _leaks(paths, prompts, phones) == []


def _anthropic_reply(request: httpx2.Request) -> httpx2.Response:
    body = json.loads(request.content)
    prompt = body["messages"][0]["content"]
    if "echo-the-key" in str(prompt):  # a provider error that quotes the key back
        return httpx2.Response(400, json={"type": "error", "error": {
            "type": "invalid_request_error", "message": f"bad request for key {KEY}"}})
    return httpx2.Response(200, json={
        "id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
        "content": [{"type": "text", "text": "A short summary of the talk."}],
        "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 50, "output_tokens": 8}})


def test_api_key_is_never_written_anywhere(small_project, monkeypatch, files_containing):
    from synix_resources.llm import anthropic_client

    paths = small_project(3, marker_at={2: "echo-the-key"})
    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "anthropic")
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    original = anthropic_client.AnthropicClient.__init__

    def mocked(self, *args, **kwargs):
        kwargs["http_client"] = httpx2.Client(transport=httpx2.MockTransport(_anthropic_reply))
        original(self, *args, **kwargs)

    monkeypatch.setattr(anthropic_client.AnthropicClient, "__init__", mocked)
    with pytest.raises(BuildFailed) as info:
        run_build(paths)
    assert KEY not in json.dumps(info.value.report.to_json()) and KEY not in str(info.value)
    assert info.value.report.layers["episodes"]["built"] == 2
    assert files_containing(paths.root, KEY) == []
    assert files_containing(paths.root, "SECRETMARKER") == []


def test_sqlcipher_encrypts_an_exported_store(tmp_path):
    sqlcipher = pytest.importorskip(
        "sqlcipher3", reason="SQLCipher bindings absent: pip install sqlcipher3-binary "
                             "(docs/encryption.md)")
    plain = tmp_path / "synix.db"
    store = ArtifactStore(plain)
    store.put(layer="transcripts", group_key="a", content="PLAINTEXTMARKER", materialization_key="k")
    store.close()
    encrypted = tmp_path / "synix.enc.db"
    conn = sqlcipher.connect(str(plain))
    conn.execute(f"ATTACH DATABASE '{encrypted}' AS enc KEY 'correct horse'")
    conn.execute("SELECT sqlcipher_export('enc')")
    conn.execute("DETACH DATABASE enc")
    conn.close()
    assert b"PLAINTEXTMARKER" not in encrypted.read_bytes()
    conn = sqlcipher.connect(str(encrypted))
    conn.execute("PRAGMA key = 'correct horse'")
    assert conn.execute("SELECT content FROM artifacts").fetchall() == [("PLAINTEXTMARKER",)]
    conn.close()
    wrong = sqlcipher.connect(str(encrypted))
    wrong.execute("PRAGMA key = 'wrong'")
    with pytest.raises(sqlcipher.DatabaseError):
        wrong.execute("SELECT COUNT(*) FROM artifacts").fetchone()
    wrong.close()
    with pytest.raises(sqlite3.DatabaseError):  # plain SQLite cannot read it at all
        sqlite3.connect(str(encrypted)).execute("SELECT * FROM artifacts").fetchall()


def test_search_hits_carry_the_pii_flag_of_their_artifact(tmp_path, claude_export, conversation):
    from click.testing import CliRunner

    from synix_assets.app.run import run_build
    from synix_assets.cli.main import main
    from synix_assets.project import ProjectPaths
    from synix_assets.app.init import init_project
    from synix_resources.search.index import SearchIndex

    conv = conversation("pii-1", "Contact details", "2025-02-03", "kayak club membership")
    conv["messages"][0] = ("human", "Write to me at kayak.fan@example.org about the kayak club.",
                           "2025-02-03T10:00:00Z")
    export = claude_export(tmp_path / "c.json", [conv])
    paths = ProjectPaths(init_project(tmp_path / "p", exports=[export]))
    text = paths.pipeline_file.read_text().replace(
        'conflict="prefer_latest")', 'conflict="prefer_latest", pii="flag")', 1)
    paths.pipeline_file.write_text(text)
    run_build(paths)
    index = SearchIndex(paths.search, embeddings=False)
    hits = index.search("kayak club", layers=["episodes"])
    assert hits and hits[0].pii == {"EMAIL": 1}
    assert hits[0].to_dict()["pii"] == {"EMAIL": 1}
    out = CliRunner().invoke(main, ["-p", str(paths.root), "search", "kayak club", "--layers", "episodes"])
    assert "contains PII: EMAIL×1" in out.output

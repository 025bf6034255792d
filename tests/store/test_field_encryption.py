"""Field-level encryption on the store contract (design 001): with SYNIX_FIELD_KEY set, the
chosen fields (content, chosen metadata keys) are AES-GCM ciphertext in the SQLite file and
plaintext through every read; a missing, wrong or malformed key is one line naming the variable."""
from __future__ import annotations

import sqlite3

import dagster as dg
import pytest

from synix_resources.errors import FieldKeyError
from synix_resources.field_crypto import new_key
from synix_resources.store.artifact_store import ArtifactStore
from synix_resources.store.resource import ArtifactStoreResource

SECRET = "Dana's diagnosis came back benign"
EMAIL = "dana@example.org"


def _raw(path) -> bytes:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))


@pytest.fixture
def key(monkeypatch):
    value = new_key()
    monkeypatch.setenv("SYNIX_FIELD_KEY", value)
    monkeypatch.setenv("SYNIX_ENCRYPTED_FIELDS", "content,metadata.email")
    return value


def _put(store, content=SECRET, group="g1"):
    return store.put(layer="episodes", group_key=group, content=content, materialization_key=f"k-{group}",
                     metadata={"email": EMAIL, "title": "Checkup"})


def test_chosen_fields_are_ciphertext_on_disk_and_plaintext_through_every_read(tmp_path, key):
    path = tmp_path / "synix.db"
    with ArtifactStore(path) as store:
        art = _put(store)
        assert art.content == SECRET  # the caller gets what it stored
        got = store.get(art.artifact_id)
        assert (got.content, got.metadata) == (SECRET, {"email": EMAIL, "title": "Checkup"})
        assert [a.content for a in store.list_layer("episodes")] == [SECRET]
        assert store.on_branch("exp").get(art.artifact_id).content == SECRET
    raw = _raw(path)
    assert SECRET.encode() not in raw and EMAIL.encode() not in raw
    assert b"synix:enc:v1:" in raw and b"Checkup" in raw  # only the chosen fields are sealed
    # the content hash still decides rebuilds without the key: the same put is a no-op
    with ArtifactStore(path) as store:
        assert _put(store).artifact_id == art.artifact_id and len(store.history("episodes", "g1")) == 1


def test_without_the_key_an_encrypted_field_is_one_line_naming_the_variable(tmp_path, key, monkeypatch):
    path = tmp_path / "synix.db"
    with ArtifactStore(path) as store:
        art = _put(store)
    monkeypatch.delenv("SYNIX_FIELD_KEY")
    with ArtifactStore(path) as store, pytest.raises(FieldKeyError) as caught:
        store.get(art.artifact_id)
    assert caught.value.one_line() == (
        f"artifact {art.artifact_id}'s content is encrypted and SYNIX_FIELD_KEY is not set — "
        "set SYNIX_FIELD_KEY to the key the store was written with")


def test_a_wrong_key_is_one_line_naming_the_variable(tmp_path, key, monkeypatch):
    path = tmp_path / "synix.db"
    with ArtifactStore(path) as store:
        art = _put(store)
    monkeypatch.setenv("SYNIX_FIELD_KEY", new_key())
    with ArtifactStore(path) as store, pytest.raises(FieldKeyError, match="SYNIX_FIELD_KEY is not the key"):
        store.get(art.artifact_id)


@pytest.mark.parametrize("var, value, words", [
    ("SYNIX_FIELD_KEY", "not-a-key", "SYNIX_FIELD_KEY is not 32 bytes"),
    ("SYNIX_ENCRYPTED_FIELDS", "content,colour", "SYNIX_ENCRYPTED_FIELDS names 'colour'")])
def test_a_malformed_setting_refuses_to_open_the_store(tmp_path, key, monkeypatch, var, value, words):
    monkeypatch.setenv(var, value)
    with pytest.raises(FieldKeyError, match=words) as caught:
        ArtifactStore(tmp_path / "synix.db")
    assert "\n" not in caught.value.one_line()
    assert not (tmp_path / "synix.db").exists()  # refused before the file is made


def test_rows_written_before_encryption_still_read_and_new_ones_are_sealed(tmp_path, monkeypatch):
    path = tmp_path / "synix.db"
    with ArtifactStore(path) as store:
        old = _put(store, "plain old text", "g0")
    monkeypatch.setenv("SYNIX_FIELD_KEY", new_key())
    with ArtifactStore(path) as store:
        new = _put(store, SECRET, "g1")
        assert {a.artifact_id: a.content for a in store.list_layer("episodes")} == {
            old.artifact_id: "plain old text", new.artifact_id: SECRET}
    assert SECRET.encode() not in _raw(path)


def test_the_dagster_resource_takes_the_key_as_an_env_var(tmp_path, key, monkeypatch):
    path = tmp_path / "synix.db"
    monkeypatch.delenv("SYNIX_FIELD_KEY")  # only the resource's config carries it
    monkeypatch.setenv("MY_STORE_KEY", key)

    @dg.asset
    def sealed(store: ArtifactStoreResource) -> None:
        store.put(layer="episodes", group_key="g1", content=SECRET, materialization_key="k1")
        assert store.list_layer("episodes")[0].content == SECRET

    result = dg.materialize([sealed], resources={"store": ArtifactStoreResource(
        path=str(path), field_key=dg.EnvVar("MY_STORE_KEY"))})
    assert result.success
    assert SECRET.encode() not in _raw(path)


def test_a_whole_build_runs_on_an_encrypted_store_and_search_still_answers(demo_project, key, monkeypatch):
    """Through `synix run`'s Dagster runs: every layer is written sealed, read back to build the
    next, and the search index (derived, a file of its own) answers as before."""
    from synix_assets.app.run import run_build
    from synix_assets.python_api.pipeline import Pipeline

    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "fake")
    monkeypatch.setenv("SYNIX_ENCRYPTED_FIELDS", "content")
    report = run_build(demo_project)
    assert report.status == "completed" and report.layers["episodes"]["built"] == 24
    with ArtifactStore(demo_project.store) as store:
        transcript = store.list_layer("transcripts")[0]
        line = next(l for l in transcript.content.splitlines() if len(l) > 40)
    raw = _raw(demo_project.store)
    assert line.encode() not in raw and raw.count(b"synix:enc:v1:") >= 55
    hits = Pipeline.load(demo_project.root).search("equity offer")
    assert hits and "Lumen" in hits[0].title
    assert run_build(demo_project).noop  # the sealed store plans as the plain one

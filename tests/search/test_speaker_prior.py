"""A query naming a speaker lifts that speaker's messages in passage search."""
from synix_resources.fingerprints import content_hash
from synix_resources.search import fusion
from synix_resources.search.documents import IndexDoc
from synix_resources.search.fusion import message_speaker, with_speaker_prior
from synix_resources.search.index import SearchIndex


def test_message_speaker_reads_the_name_before_the_colon():
    assert message_speaker("Caroline: I went to a support group.") == "caroline"
    assert message_speaker("Mary Ann: hi") == "mary ann"
    assert message_speaker("no speaker here") is None
    assert message_speaker("a very long sentence that happens to contain: a colon somewhere far") is None


def test_speaker_prior_lifts_the_named_speakers_passages_by_a_share_of_the_best_score():
    scored = [(1, 10.0), (2, 9.0), (3, 1.0)]
    speakers = {1: "bob", 2: "alice", 3: "alice"}
    assert with_speaker_prior(scored, speakers, ["what", "did", "alice", "say"], 0.2) == \
        [(2, 11.0), (1, 10.0), (3, 3.0)]
    assert with_speaker_prior(scored, speakers, ["nobody"], 0.2) == scored
    assert with_speaker_prior(scored, speakers, ["alice"], 0.0) == scored


def _chat(aid, lines):
    messages = tuple({"index": i, "id": f"{aid}-{i}", "speaker": who, "text": text}
                     for i, (who, text) in enumerate(lines))
    content = "\n".join(f"{w}: {t}" for w, t in lines)
    return IndexDoc(artifact_id=aid, layer="transcripts", level=0, content=content,
                    content_hash=content_hash(content), messages=messages)


def test_a_question_about_a_person_prefers_that_persons_own_message(tmp_path, monkeypatch):
    index = SearchIndex(tmp_path / "s.sqlite", embeddings=False)
    index.sync("t", [_chat("c1", [("Bob", "Did you go hiking in the mountains, Alice? I love hiking there."),
                                  ("Alice", "Yes! I went hiking on Saturday."),
                                  ("Bob", "Nice, I stayed home.")])])
    question = "When did Alice go hiking?"
    monkeypatch.setattr(fusion, "SPEAKER_PRIOR", 0.0)
    assert index.search(question, per="passage", limit=3)[0].message_ids == ("c1-0",)  # Bob's question
    monkeypatch.setattr(fusion, "SPEAKER_PRIOR", 0.15)
    assert index.search(question, per="passage", limit=3)[0].message_ids == ("c1-1",)  # Alice's answer
    index.close()

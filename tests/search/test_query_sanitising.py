"""User text never reaches FTS5 MATCH raw: hostile strings search, empty ones fail cleanly."""
import pytest

from synix_resources.errors import SearchError
from synix_resources.fingerprints import content_hash
from synix_resources.search.documents import IndexDoc
from synix_resources.search.index import SearchIndex
from synix_resources.search.query import STOP_WORDS, fts_match, parse_query, quote_term

HOSTILE = [
    '"', '""', 'a"b', '"unbalanced', '*', 'foo*', '-foo', 'foo:bar', 'body:secret',
    'NEAR(a b)', 'NEAR', 'AND', 'OR NOT', 'NOT', 'a AND', 'OR', '(', ')', '((a)', '^', '^foo',
    '{body context}: x', "it's", "'", '`', '\\', '%', '_', '%_%', "'; DROP TABLE docs; --",
    '🍕', 'pizza 🍕', '👩‍💻 code', '東京', '東京タワー', 'שלום עולם', 'مرحبا', 'Привет', 'café',
    'naïve', 'Straße', 'a\x00b', '\x00foo', 'x' * 10_000, 'rust ' * 3000, '+', '#', '@me',
    '1 2 3', '3.14', 'c++', 'c#', '.net', 'e-mail', 'a/b', '[x]', '<b>', '&amp;',
]


@pytest.fixture
def index(tmp_path):
    idx = SearchIndex(tmp_path / "q.sqlite", embeddings=False)
    texts = {"a": "Learning Rust ownership and borrowing in Tokyo 東京 🍕",
             "b": "שלום עולם — a Hebrew greeting, café au lait, naïve code",
             "c": "The C++ and C# e-mail parser for foo:bar tokens"}
    idx.sync("t", [IndexDoc(artifact_id=k, layer="summaries", level=1, content=v,
                            content_hash=content_hash(v)) for k, v in texts.items()])
    yield idx
    idx.close()


def _has_words_or_symbols(text):
    try:
        parse_query(text)
    except SearchError:
        return False
    return True


@pytest.mark.parametrize("text", HOSTILE, ids=lambda s: repr(s[:20]))
def test_hostile_query_searches_without_error(index, text):
    for mode in ("fts", "hybrid"):
        if _has_words_or_symbols(text):
            assert isinstance(index.search(text, mode=mode), list)
        else:  # punctuation only: the documented one-line SearchError, never an sqlite error
            with pytest.raises(SearchError):
                index.search(text, mode=mode)


@pytest.mark.parametrize("text", ['"', '""', '*', '(', ')', '^', '-', ':', '%_%', "'", '\\'])
def test_punctuation_only_query_raises_one_line_search_error(index, text):
    with pytest.raises(SearchError) as err:
        index.search(text)
    assert "\n" not in err.value.one_line()


@pytest.mark.parametrize("text", ["", "   ", "\n\t", "\x00"])
def test_empty_or_whitespace_query_raises_search_error(index, text):
    with pytest.raises(SearchError, match="empty"):
        index.search(text)


def test_non_latin_scripts_find_their_documents(index):
    assert [h.artifact_id for h in index.search("東京")] == ["a"]
    assert [h.artifact_id for h in index.search("שלום")] == ["b"]
    assert [h.artifact_id for h in index.search("cafe")] == ["b"]  # diacritics folded


def test_emoji_only_query_matches_as_substring(index):
    assert [h.artifact_id for h in index.search("🍕")] == ["a"]


def test_fts_operators_in_user_text_are_plain_words(index):
    assert [h.artifact_id for h in index.search("foo:bar")] == ["c"]
    assert index.search("NEAR(rust tokyo)")[0].artifact_id == "a"


def test_terms_are_quoted_so_fts_syntax_is_inert():
    parsed = parse_query('NOT rust" OR body:*')
    match = fts_match(parsed)
    assert match == '"rust" OR "body"'
    assert quote_term('a"b') == '"a""b"'


def test_stop_words_are_dropped_from_or_queries_unless_nothing_is_left():
    assert parse_query("What did Caroline research?").content_terms == ("caroline", "research")
    assert parse_query("to be or not to be").content_terms == ("to", "be", "or", "not")
    assert "what" in STOP_WORDS


def test_very_long_query_is_capped_to_a_bounded_number_of_terms():
    parsed = parse_query(" ".join(f"word{i}" for i in range(5000)))
    assert len(parsed.terms) == 64

"""The front-matter fast path (parsers/frontmatter.py `_simple`) gives exactly what PyYAML's
SafeLoader gives, or hands the front matter to PyYAML; and it does read Obsidian's shapes."""
from __future__ import annotations


import pytest

from synix_assets.parsers import frontmatter
from tests.support import corpus

DATA = corpus.DATA / "notes-obsidian"

CASES = [
    "title: Hello\n", "date: 2023-09-12\n", "date: 2023-9-12\n", "date: 2023-02-30\n",
    "n: 1\n", "f: 1.5\n", "b: yes\n", "b: On\n", "b: y\n", "x: ~\n", "x: null\n", "x:\n",
    "x: []\n", "l:\n  - a\n  - b\n", "l:\n- a\n- b\n", "l:\n  - a\n    - b\n",
    'l:\n  - "[[A]]"\n  - 2023-09-12\n  - yes\n', "u: https://x.com/a#b\n", "c: a # comment\n",
    "c: a\t# comment\n", "k: a: b\n", "k: v:\n", "on: x\n", "1: x\n", "k:value\n",
    "k: 'it''s'\n", "k: 'single'\n", 'k: "esc\\"q"\n', "k: [a, b]\n", "k: {a: 1}\n",
    "k: |\n  block\n", "k: long\n  continued\n", "k: a\n\nj: b\n", "k: =\n", "k: <<\n",
    "k: -5\n", "k: x\ry\n", "k: a\u2028b\n", "k: caf\u00e9 \U0001F600\n", "k: a\x01b\n",
    "a: 1\na: 2\n", "a: x\na: y\n", "a:\n  - x\na:\n", "a: []\na:\n  - x\n", "tags: #x\n",
    "k: 2023-09-12T10:00:00\n", "k: 12:30\n", "k: 0x1F\n", "k: .inf\n", "k: Yes please\n",
    "k: ' padded '\n", 'k: ""\n', "k: ''\n", "  indented: x\n", "- a\n", "k:  two  spaces  \n",
    "key-with-dash: v\n", "_under: v\n", "k: v \n", "k:\tv\n", "l:\n  -\n", "l:\n  - \n",
    "a:\nb: c\n", "k: v\n  - x\n", "k: \u0661\u0662\u0663\u0664-01-01\n", "k: a:b\n", "k: ?x\n",
    "k: :x\n", "k: %x\n", "k: @x\n", "k: x,y\n", "k: !!str 5\n", "k: &a x\nj: *a\n",
]


def _outcome(text: str):
    try:
        return frontmatter.split_front_matter(text)
    except Exception as exc:  # noqa: BLE001 — the exact failure is what is compared
        return type(exc).__name__


@pytest.mark.parametrize("front", CASES, ids=repr)
def test_front_matter_reads_the_same_with_and_without_the_fast_path(front, monkeypatch):
    text = f"---\n{front}---\nbody\n"
    fast = _outcome(text)
    monkeypatch.setattr(frontmatter, "_simple", lambda _front: frontmatter._NO)
    assert fast == _outcome(text)


@pytest.mark.corpus
def test_obsidian_property_shapes_are_read_without_pyyaml():
    texts = [p.read_text(encoding="utf-8") for p in sorted(DATA.iterdir())]
    fronts = [text[b[0]:b[1]] for text in texts if (b := frontmatter.front_bounds(text))]
    assert len(fronts) == 2
    for front in fronts:
        assert frontmatter._simple(front) is not frontmatter._NO, front
    data = frontmatter._simple('categories:\n  - "[[Meetings]]"\ntype: []\ndate: 2023-09-12\ntopics:\n')
    assert data == {"categories": ["[[Meetings]]"], "type": [],
                    "date": __import__("datetime").date(2023, 9, 12), "topics": None}


def test_the_odd_character_class_flags_exactly_what_yaml_and_the_line_break_list_flag():
    import re
    everything = "".join(chr(c) for c in range(0x110000))
    as_yaml = [m.start() for m in re.compile(frontmatter.ODD_CHARS_AS_YAML).finditer(everything)]
    assert [m.start() for m in frontmatter._ODD_CHARS.finditer(everything)] == as_yaml
    assert 0x0D in as_yaml and 0xFEFF in as_yaml and 0x09 not in as_yaml


_KEYS = ["title", "date", "tags", "y", "on", "Yes", "k-1", "_x", "null", "n1"]
_VALUES = ["plain", "two words", "2023-09-12", "2023-02-30", "2023-9-1", '"[[A]]"', '"a #b"', "'q'",
           "'it''s'", '"e\\"q"', "yes", "No", "~", "null", "12", "-3", "1.5", "0x1f", ".inf", "a: b",
           "a #c", "a#c", "https://x.y/z#a", "[]", "[a]", "{a: 1}", "", " ", "a ", "a\t", "café 🌲",
           ":x", "x:", "-x", "*a", "&a b", "!x", "|", ">", "`x`", "%x", "@x", "a, b", "=", "<<",
           "2023-09-12T10:00:00", "2023-09-12 10:00", "12:30", "a\u00a0", "a\u3000b", "[[Link]]"]
_LINES = ["{k}: {v}", "{k}:", "  - {v}", "- {v}", "    - {v}", "", "# comment", "{k}:{v}", " {k}: {v}"]


def test_random_front_matter_reads_the_same_with_and_without_the_fast_path(monkeypatch):
    """Property-style: 3,000 front matters drawn from Obsidian's shapes and YAML's traps
    (seeded, so a failure can be replayed), each read with and without the fast path."""
    import random

    rng = random.Random(33)
    texts = []
    for _ in range(3000):
        # mostly Obsidian's shapes, so the fast path is taken often; a trap now and then
        lines = [rng.choice(_LINES[:4] if rng.random() < 0.85 else _LINES).format(
                     k=rng.choice(_KEYS), v=rng.choice(_VALUES[:8] if rng.random() < 0.7 else _VALUES))
                 for _ in range(rng.randint(1, 6))]
        texts.append("---\n" + "\n".join(lines) + "\n---\nbody\n")
    fast = [_outcome(text) for text in texts]
    assert sum(frontmatter._simple(t[4:t.index("\n---\n") + 1]) is not frontmatter._NO
               for t in texts) > 200  # the fast path is taken often enough to be tested
    monkeypatch.setattr(frontmatter, "_simple", lambda _front: frontmatter._NO)
    for text, got in zip(texts, fast):
        assert got == _outcome(text), text


def test_front_matter_bounds_are_those_of_the_front_matter_regex():
    """`front_bounds` finds the lines `\\A---[ \\t]*\\n(.*?)^(?:---|\\.\\.\\.)[ \\t]*(?:\\n|\\Z)` finds
    (re.S | re.M), on random texts made of the pieces that matter."""
    import random
    import re

    regex = re.compile(r"\A---[ \t]*\n(.*?)^(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S | re.M)
    rng = random.Random(12)
    pieces = ["---", "...", "\n", " ", "\t", "a", "-", ".", "\r\n"]
    for _ in range(5000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
        if rng.random() < 0.7:
            text = "---" + rng.choice(["", " ", "\t"]) + "\n" + text
        found = regex.match(text)
        expected = (found.start(1), found.end(1), found.end()) if found else None
        assert frontmatter.front_bounds(text) == expected, repr(text)


def test_a_note_of_many_dash_lines_and_no_closing_line_is_read_in_linear_time():
    import time

    text = "---\n" + "----\n" * 200_000 + "body\n"  # 1 MB: no `---` or `...` line closes it
    started = time.process_time()
    assert frontmatter.front_bounds(text) is None
    assert time.process_time() - started < 2.0  # a rescan per line would take minutes

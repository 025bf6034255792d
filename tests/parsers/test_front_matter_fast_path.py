"""The front-matter fast path (parsers/frontmatter.py `_simple`) gives exactly what PyYAML's
SafeLoader gives, or hands the front matter to PyYAML; and it does read Obsidian's shapes."""
from __future__ import annotations

from pathlib import Path

import pytest

from synix_assets.parsers import frontmatter

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "notes-obsidian"

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


def test_obsidian_property_shapes_are_read_without_pyyaml():
    fronts = [frontmatter._FRONT.match(p.read_text(encoding="utf-8")) for p in sorted(DATA.iterdir())]
    fronts = [m.group(1) for m in fronts if m]
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

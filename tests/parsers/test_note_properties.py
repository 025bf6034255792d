"""A note's list properties (parsers/notes.py `_properties`): every item is kept in the
properties, the text line shows the items that say something (not empty text, not null) joined
with ", ", whatever mix of text and other values the list holds; and a note's id is its path
inside the folder however the path is spelled."""
from __future__ import annotations

import random

import yaml

from synix_assets.parsers import notes, textfiles


def _note(front: str):
    return notes.parse_note(f"---\n{front}---\nbody\n", "n.md", "n", "/vault/n.md", lambda: None)


def test_list_properties_keep_every_item_and_show_the_ones_that_say_something():
    note = _note('aliases:\n  - ""\n  - Alpha\n  - ""\nmixed: [1, "two", null, 2024-01-02, [3, 4], "", {k: v}, true]\n'
                 'people:\n  - "[[Steph Ango]]"\n  - "[[Ada]]"\nempty: []\nblank:\n  - ""\nnone_only: [null]\n')
    assert note.metadata["properties"] == {
        "aliases": ["", "Alpha", ""], "mixed": [1, "two", None, "2024-01-02", [3, 4], "", {"k": "v"}, True],
        "people": ["[[Steph Ango]]", "[[Ada]]"], "empty": [], "blank": [""], "none_only": [None]}
    assert note.messages[0].text == ("aliases: Alpha\nmixed: 1, two, 2024-01-02, [3, 4], {'k': 'v'}, True\n"
                                     "people: [[Steph Ango]], [[Ada]]\n\nbody")


def test_seeded_lists_of_text_empty_text_null_and_numbers_show_as_their_items_joined():
    rng = random.Random(33)
    words = ["a", "Alpha beta", "[[Link]]", "", "  spaced  ", "x, y", "🌲"]
    for _ in range(500):
        items = [rng.choice([*words, None, 7, 2.5, True]) for _ in range(rng.randint(0, 6))]
        front = yaml.safe_dump({"things": items}, allow_unicode=True)
        note = _note(front)
        assert note.metadata["properties"]["things"] == items, front
        shown = " ".join(", ".join(str(v) for v in items if v is not None and v != "").split())
        expected = f"things: {shown}\n\nbody" if shown else "body"
        assert note.messages[0].text == expected, front


def test_a_note_id_is_its_path_inside_the_folder_however_the_path_is_spelled(tmp_path, monkeypatch):
    root = tmp_path / "vault"
    assert textfiles.note_path(f"{root}/a/n.md", root) == "a/n.md"
    assert textfiles.note_path(f"{root}/./a//n.md", root) == "a/n.md"
    assert textfiles.note_path(f"{root}/b/../a/n.md", str(root)) == "a/n.md"
    assert textfiles.note_path(f"{tmp_path}/elsewhere/n.md", root) == "n.md"  # outside: its name
    monkeypatch.chdir(tmp_path)
    assert textfiles.note_path("vault/a/n.md", "vault") == "a/n.md"
    assert textfiles.note_path("./vault/a/n.md", root) == "a/n.md"

"""Readable partition names in the store (partition_names.py), on every backend: date and title,
bounded, assigned once and kept, unique with a suffix that does not depend on the order seen."""
from __future__ import annotations

import re

import dagster as dg

from synix_resources.store.artifact_store import ArtifactStore
from synix_resources.store.partition_names import NAME_CHARS, base_name

A, B, C = ("1dcd717d-bd5c-56dc-a504-8e02563fec81", "25a06837-6c49-5f68-a663-3de48903a077",
           "28ff7520-3d2e-51af-81a7-5de5b58ca1e7")


def test_a_base_name_is_the_date_and_a_slug_of_the_title_bounded_at_a_word():
    assert base_name("2024-03-15T09:12:00Z", "Django migration notes!") == "2024-03-15-django-migration-notes"
    assert base_name("2024-03-15", "Crème brûlée — à la minute") == "2024-03-15-creme-brulee-a-la-minute"
    assert base_name(None, "") == "undated-untitled"
    assert base_name("yesterday", "日本語だけ") == "undated-untitled"
    long = base_name("2024-03-15", "word " * 40)
    assert len(long) <= NAME_CHARS and long.endswith("-word") and not long.endswith("-")


def test_names_are_readable_valid_dagster_keys_and_kept_when_asked_again(store):
    names = store.name_partitions({A: base_name("2024-03-15", "Django migration notes"),
                                   B: base_name("2024-03-16", "Rye sourdough")})
    assert names == {A: "2024-03-15-django-migration-notes", B: "2024-03-16-rye-sourdough"}
    # a re-export renamed A and moved it to another day: its name stays
    again = store.name_partitions({A: base_name("2024-04-01", "Renamed"), C: base_name("2024-03-17", "New")})
    assert again == {A: "2024-03-15-django-migration-notes", C: "2024-03-17-new"}
    assert store.partition_names() == {**names, **again}
    assert store.partition_groups(["2024-03-16-rye-sourdough", B]) == {"2024-03-16-rye-sourdough": B}
    assert all(re.fullmatch(r"[a-z0-9-]+", name) for name in store.partition_names().values())
    with dg.DagsterInstance.ephemeral() as instance:  # Dagster refuses a key it cannot use
        instance.add_dynamic_partitions("conversations", list(store.partition_names().values()))
        assert len(instance.get_dynamic_partitions("conversations")) == 3


def test_the_same_date_and_title_get_a_short_suffix_whatever_the_order_of_the_export(tmp_path):
    same = base_name("2024-03-15", "Standup")
    results = []
    for order in ([A, B, C], [C, B, A]):  # one export, its conversations in either order
        with ArtifactStore(tmp_path / f"{order[0]}.db") as store:
            store.name_partitions({key: same for key in order})
            results.append(store.partition_names())
    assert results[0] == results[1]  # suffixes come from the group keys, not the file's order
    names = results[0]
    assert len(set(names.values())) == 3 and names[A] == same
    assert re.fullmatch(re.escape(same) + r"-[0-9a-f]{4}", names[B])
    assert re.fullmatch(re.escape(same) + r"-[0-9a-f]{4}", names[C])


def test_a_later_conversation_with_a_taken_name_gets_the_suffix_and_the_first_keeps_its_name(sqlite_store):
    same = base_name("2024-03-15", "Standup")
    assert sqlite_store.name_partitions({C: same}) == {C: same}
    later = sqlite_store.name_partitions({A: same, C: same})
    assert later[C] == same and later[A].startswith(same + "-")


def test_dropping_a_name_forgets_it_and_frees_it(store):
    store.name_partitions({A: "2024-03-15-secret-plans"})
    assert store.drop_partition_names([A, B]) == 1
    assert store.partition_names() == {}
    assert store.name_partitions({B: "2024-03-15-secret-plans"}) == {B: "2024-03-15-secret-plans"}

"""Readable partition names: one per conversation group key, assigned at first sight and kept.

A conversation's group key is its export id (a UUID for ChatGPT and Claude), which nobody can
read or type. Dagster shows, filters and launches partitions by a name built from the
conversation's date and title instead (`2024-03-15-django-migration-notes`). The name is stored
(table `partition_names`, migration m011 / p002) the first time a group key is named and never
recomputed: a re-export that renames the conversation or reorders the file keeps it. Two
conversations whose date and title give the same name are told apart by a short suffix derived
from the group key: a conversation named earlier keeps the plain name, and among those named
together the order of the export does not decide which one gets the suffix.

Names are shared by every branch (they name conversations, which every branch reads alike).
"""
from __future__ import annotations

import json
import re
import unicodedata
from typing import Iterable, Mapping

from synix_resources.fingerprints import sha256_text
from synix_resources.store.connection import utc_now
from synix_resources.store.dialect import ids_in

NAME_CHARS = 60  # date (10) + '-' + slug: short enough for the UI's partition column
UNDATED = "undated"
UNTITLED = "untitled"
_NOT_SLUG = re.compile(r"[^a-z0-9]+")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def slug(text: str) -> str:
    """Lowercase ASCII letters and digits joined by '-' (accents folded, the rest dropped)."""
    folded = unicodedata.normalize("NFKD", text or "").encode("ascii", "ignore").decode("ascii")
    return _NOT_SLUG.sub("-", folded.lower()).strip("-")


def base_name(date: str | None, title: str | None) -> str:
    """`YYYY-MM-DD-title-slug`, at most NAME_CHARS long, cut at a word boundary."""
    day = str(date or "")[:10]
    day = day if _DATE.fullmatch(day) else UNDATED
    words = slug(title or "") or UNTITLED
    room = NAME_CHARS - len(day) - 1
    if len(words) > room:
        cut = words[:room + 1]
        words = cut[:cut.rfind("-")] if "-" in cut else words[:room]
    return f"{day}-{words}"


def _with_suffix(base: str, group_key: str, taken: set[str]) -> str:
    """`base`, or `base-<hash of the group key>` (4 hex, longer on the rare clash)."""
    if base not in taken:
        return base
    digest = sha256_text(group_key)
    for width in range(4, len(digest) + 1):
        name = f"{base}-{digest[:width]}"
        if name not in taken:
            return name
    raise ValueError(f"no free partition name for {group_key!r}")


def choose(wanted: Mapping[str, str], names: Mapping[str, str], taken: set[str]) -> dict[str, str]:
    """New names for the group keys of `wanted` (group key → base name) that `names` lacks,
    in group-key order so the outcome does not depend on the order conversations were seen."""
    chosen: dict[str, str] = {}
    for group_key in sorted(set(wanted) - set(names)):
        name = _with_suffix(wanted[group_key], group_key, taken)
        taken.add(name)
        chosen[group_key] = name
    return chosen


class PartitionNamesMixin:
    """The SQL stores' (SQLite and PostgreSQL) part: `_read`/`_write` come from the connection."""

    def partition_names(self, group_keys: Iterable[str] | None = None) -> dict[str, str]:
        """group key → stored name, for `group_keys` (every named key when None)."""
        return dict(self._names_where("group_key", group_keys))

    def partition_groups(self, names: Iterable[str]) -> dict[str, str]:
        """name → group key, for those of `names` that are stored names."""
        return {name: key for key, name in self._names_where("name", names)}

    def _names_where(self, column: str, values: Iterable[str] | None) -> list[tuple[str, str]]:
        sql, args = "SELECT group_key, name FROM partition_names", ()
        if values is not None:
            sql, args = f"{sql} WHERE {column} IN {ids_in(self.dialect)}", (json.dumps(sorted(set(values))),)
        with self._read("reading partition names") as conn:
            return [(row[0], row[1]) for row in conn.execute(sql, args).fetchall()]

    def name_partitions(self, wanted: Mapping[str, str]) -> dict[str, str]:
        """Give each group key of `wanted` (group key → base name, see `base_name`) that has no
        name yet one, and return group key → name for all of `wanted`. Kept names never change."""
        if not wanted:
            return {}
        with self._write("naming partitions") as conn:
            rows = conn.execute("SELECT group_key, name FROM partition_names").fetchall()
            names = {row[0]: row[1] for row in rows}
            chosen = choose(wanted, names, set(names.values()))
            now = utc_now()
            for key, name in chosen.items():
                conn.execute("INSERT INTO partition_names (group_key, name, assigned_at) "
                             "VALUES (?, ?, ?)", (key, name, now))
        names.update(chosen)
        return {k: names[k] for k in wanted}

    def drop_partition_names(self, group_keys: Iterable[str]) -> int:
        """Forget the names of `group_keys` (a forgotten conversation's title goes with it)."""
        keys = sorted(set(group_keys))
        with self._write("dropping partition names") as conn:
            return sum(conn.execute("DELETE FROM partition_names WHERE group_key = ?", (k,)).rowcount
                       for k in keys)


class MemoryPartitionNames:
    """The in-memory store's part, with the same semantics."""

    def partition_names(self, group_keys: Iterable[str] | None = None) -> dict[str, str]:
        with self._read("reading partition names") as s:
            out = dict(s.partition_names)
        return out if group_keys is None else {k: out[k] for k in group_keys if k in out}

    def partition_groups(self, names: Iterable[str]) -> dict[str, str]:
        wanted = set(names)
        return {name: key for key, name in self.partition_names().items() if name in wanted}

    def name_partitions(self, wanted: Mapping[str, str]) -> dict[str, str]:
        if not wanted:
            return {}
        with self._write("naming partitions") as tx:
            names = dict(tx.s.partition_names)
            for key, name in choose(wanted, names, set(names.values())).items():
                tx.set(tx.s.partition_names, key, name)
                names[key] = name
        return {k: names[k] for k in wanted}

    def drop_partition_names(self, group_keys: Iterable[str]) -> int:
        with self._write("dropping partition names") as tx:
            return sum(tx.pop(tx.s.partition_names, k) for k in sorted(set(group_keys)))

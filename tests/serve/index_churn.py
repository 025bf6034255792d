"""A writer process for the search-consistency test: what a build does to a served project's
search index, over and over. Each round rewrites every document with new content (deleted and
re-inserted, so row ids move) and every other round drops half of them, in small batches as
`SearchIndex.update`/`sync` write them.

    python index_churn.py INDEX_PATH STOP_FILE MAX_ROUNDS

Writes the number of rounds done to STOP_FILE.rounds after each round; stops when STOP_FILE
exists or after MAX_ROUNDS rounds, and prints the number of rounds done.
"""
from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from synix_resources.search.documents import IndexDoc
from synix_resources.search.index import SearchIndex


def documents(index: SearchIndex) -> dict[str, list[IndexDoc]]:
    """The indexed documents, as IndexDocs, per collection."""
    rows = index.db.execute(
        "SELECT artifact_id, collection, layer, level, title, date, source, content, parent_ids, "
        "leaf_ids, ancestry, sources, searchable FROM docs ORDER BY id").fetchall()
    out: dict[str, list[IndexDoc]] = {}
    for r in rows:
        out.setdefault(r[1], []).append(IndexDoc(
            artifact_id=r[0], layer=r[2], level=r[3], title=r[4] or "", date=r[5], source=r[6],
            content=r[7], content_hash="", parent_ids=tuple(json.loads(r[8])),
            leaf_ids=tuple(json.loads(r[9])), ancestry=tuple(json.loads(r[10])),
            sources=tuple(json.loads(r[11])), searchable=bool(r[12])))
    return out


def main(path: str, stop_file: str, max_rounds: int) -> int:
    index = SearchIndex(path, embeddings=False)
    original = documents(index)
    rounds = 0
    try:
        while rounds < max_rounds and not Path(stop_file).exists():
            for name, docs in original.items():
                changed = [dataclasses.replace(d, content=f"{d.content} (round {rounds})",
                                               content_hash=f"round-{rounds}-{d.artifact_id}")
                           for d in docs]
                index.sync(name, changed if rounds % 2 == 0 else changed[::2], batch=3)
            rounds += 1
            Path(stop_file + ".rounds").write_text(str(rounds))
        for name, docs in original.items():  # leave the index as the build wrote it
            index.sync(name, docs)
    finally:
        index.close()
    print(rounds, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))

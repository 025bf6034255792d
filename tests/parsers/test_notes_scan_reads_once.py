"""A source scan reads each note once: the bytes it hashes for the summary cache are the bytes
it parses (a notes folder is many small files, so a second read was a third of the scan's file
work, and two reads could see two versions of a note being saved)."""
from __future__ import annotations

import hashlib
import os
import sys
from collections import Counter
from pathlib import Path

_OPENED: list[str] | None = None  # paths opened while a test watches, else None


def _audit(event: str, args: tuple) -> None:
    # An audit hook stays for the life of the process: it does nothing unless a test watches.
    if _OPENED is not None and event == "open" and isinstance(args[0], (str, os.PathLike)):
        _OPENED.append(os.fspath(args[0]))


sys.addaudithook(_audit)

NOTES = {
    "Daily/2023-09-12.md": "## Notes\n\n![[Daily.base]]\n",
    "Notes/meeting.md": '---\ndate: 2023-09-12\npeople:\n  - "[[Steph Ango]]"\n---\n- Discussed [[Emergence]]\n',
    "plain.txt": "just a line of text\nwith #tag\n",
}


def _scan(pipeline, store_path: Path, folder: Path) -> tuple[object, Counter]:
    global _OPENED
    from synix_assets.sources.reader import SourceReader
    from synix_resources.store.artifact_store import ArtifactStore

    with ArtifactStore(store_path) as store:
        _OPENED = []
        try:
            scan = SourceReader(pipeline, store).scan()
        finally:
            opened, _OPENED = _OPENED, None
    top = str(folder.resolve())
    return scan, Counter(os.path.relpath(p, top) for p in opened
                         if os.path.abspath(p).startswith(top + os.sep))


def test_a_scan_opens_each_note_once_and_caches_the_hash_of_the_bytes_it_parsed(tmp_path):
    from synix_assets.app.init import create_project
    from synix_assets.pipeline.loader import load_pipeline

    vault = tmp_path / "vault"
    for name, text in NOTES.items():
        path = vault / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
    root, _ = create_project(tmp_path / "mem", exports=[str(vault)])
    exports = root / "exports"
    # not UTF-8: one failed file, read once all the same (added after init, which refuses it)
    (exports / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))
    pipeline = load_pipeline(root / "pipeline.py")

    scan, opened = _scan(pipeline, tmp_path / "store.db", exports)
    notes = sorted(os.path.relpath(p, exports) for p in map(str, exports.rglob("*")) if os.path.isfile(p))
    assert len(notes) == 4 and sorted(opened) == notes
    assert set(opened.values()) == {1}, opened  # hashed and parsed from one read
    assert len(scan.summaries) == 3 and len(scan.failed_files) == 1
    assert "latin1.md: is not valid UTF-8" in scan.failed_files[0][1]

    from synix_resources.store.artifact_store import ArtifactStore
    with ArtifactStore(tmp_path / "store.db") as store:
        for path in exports.rglob("*.md"):
            if path.name == "latin1.md":
                continue
            st = path.stat()
            digest = store.get_meta(f"ingest:stat:{path}:{st.st_size}:{st.st_mtime_ns}")
            assert digest == hashlib.sha256(path.read_bytes()).hexdigest(), path

    again, opened_again = _scan(pipeline, tmp_path / "store.db", exports)
    assert [s.content_hash for s in again.summaries] == [s.content_hash for s in scan.summaries]
    # unchanged notes come from the cache; the failed file is read again, once
    assert opened_again == Counter({os.path.relpath(exports / "latin1.md", exports): 1}), opened_again

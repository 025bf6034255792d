"""Sources → conversations, with a per-file summary cache so an unchanged export is never reparsed.

A file's summary (its conversations' keys, content hashes and dates) is kept in the store's meta
table under the file's SHA-256; the stat triple (size, mtime_ns, path) maps to that hash so an
untouched file is not even re-hashed. Full conversations are parsed only when a transcript
actually has to be (re)built, and files are streamed, never held whole (`SourceReader.stream`).
"""
from __future__ import annotations

import errno
import hashlib
import logging
import os
import stat
from pathlib import Path
from typing import Callable, Iterable, Iterator

from synix_assets.parsers.detect import iter_conversations
from synix_assets.parsers.sniff import check_file_name
from synix_assets.parsers.textfiles import is_text_source, read_bytes
from synix_assets.parsers.model import Conversation, ParseReport, printable_path
from synix_assets.sources.live import live_conversation, live_summaries
from synix_assets.sources.model import (EXPORT_SUFFIXES, PARSER_VERSION, TEXT_SUFFIXES, VISIBLE_HIDDEN_DIRS,
                                        ConversationSummary, IngestResult, file_sha256, partition_key,
                                        summarise)
from synix_resources.errors import ExportFormatError, SourceEntrySkipped
from synix_resources.fingerprints import sha256_text

log = logging.getLogger("synix.ingest")
_SUFFIXES = (*EXPORT_SUFFIXES, *TEXT_SUFFIXES)


OnSkip = Callable[[SourceEntrySkipped], None]


def export_files(path: Path, on_skip: OnSkip | None = None) -> list[Path]:
    """Every file `iter_export_files` yields, as a list."""
    return list(iter_export_files(path, on_skip))


def _log_skip(skipped: SourceEntrySkipped) -> None:
    log.warning(skipped.one_line())


def iter_export_files(path: Path, on_skip: OnSkip | None = None) -> Iterator[Path]:
    """The export files of a source: the file itself, or the export files, notes and SpecStory
    sessions anywhere under a folder — tool history folders nest them
    (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl, ~/.gemini/tmp/<hash>/chats/session-*.json,
    Claude Code's <session>/subagents/), and a notes vault is a tree. Hidden files and folders
    (.obsidian, .git, .trash) are skipped, except SpecStory's own `.specstory`; symlinked folders
    are not followed (no loops).

    An entry that cannot be read as a file of the folder is passed to `on_skip` (default: a
    warning) and the walk goes on: a symlink loop, a broken link, a folder that cannot be
    listed, a FIFO or device, and a link (to a file or a folder) that resolves outside the
    folder given — a vault's link into ~/.ssh must not put a key into the memory.

    Yielded in Path order (part by part) while walking: one folder's listing is held at a time
    per level, never the whole tree's, so a folder of millions of notes streams."""
    skip = on_skip or _log_skip
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return  # a missing source is the pipeline's to report (`require_exports`)
    except OSError as exc:
        skip(SourceEntrySkipped(printable_path(path), _cause(exc)))
        return
    if stat.S_ISREG(mode):
        yield path
    elif stat.S_ISDIR(mode):
        top = os.path.realpath(path)
        yield from _walk(str(path), path, top.rstrip(os.sep) + os.sep, skip)
    else:
        skip(SourceEntrySkipped(printable_path(path), f"{_kind(mode)}, not a file or folder"))


# A sort key per name: the name itself where the file system is case-sensitive.
_SORT_KEY = os.path.normcase if os.path.normcase("A") != "A" else None


def _walk(folder: str, folder_path: Path, top: str, skip: OnSkip) -> Iterator[Path]:
    try:
        listing = os.scandir(folder)
    except OSError as exc:
        skip(SourceEntrySkipped(printable_path(folder_path), f"the folder cannot be listed ({_cause(exc)})"))
        return
    suffixes = _SUFFIXES
    entries: list[tuple[str, str, bool]] = []  # (sort key, name, is a folder)
    with listing:
        for entry in listing:  # scandir's entry types spare a stat per file (a vault holds thousands)
            name = entry.name
            if name.startswith("."):
                if name in VISIBLE_HIDDEN_DIRS and entry.is_dir(follow_symlinks=False):
                    entries.append((_SORT_KEY(name) if _SORT_KEY else name, name, True))
            elif entry.is_dir(follow_symlinks=False):
                entries.append((_SORT_KEY(name) if _SORT_KEY else name, name, True))
            elif entry.is_symlink():
                if _link_is_read(entry, folder_path / name, top, suffixes, skip):
                    entries.append((_SORT_KEY(name) if _SORT_KEY else name, name, False))
            elif name.lower().endswith(suffixes):
                if entry.is_file(follow_symlinks=False):
                    entries.append((_SORT_KEY(name) if _SORT_KEY else name, name, False))
                else:
                    skip(SourceEntrySkipped(printable_path(folder_path / name), _not_a_file(entry)))
    entries.sort()
    for _key, name, is_folder in entries:
        # `folder_path / name` parses only the name: cheaper than a Path from the whole string
        if is_folder:
            yield from _walk(os.path.join(folder, name), folder_path / name, top, skip)
        else:
            yield folder_path / name


def _link_is_read(entry: os.DirEntry, path: Path, top: str, suffixes: tuple[str, ...],
                  skip: OnSkip) -> bool:
    """Whether a symlink in the folder is read as one of its files: it must resolve inside the
    folder given, to a regular file with an export or note suffix. A link to a folder inside is
    not followed (its files are read where they are); anything else is skipped with one line."""
    try:
        target = os.path.realpath(entry.path, strict=True)
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        skip(SourceEntrySkipped(printable_path(path), "a broken link (its target does not exist)"))
        return False
    except OSError as exc:
        skip(SourceEntrySkipped(printable_path(path), f"the link cannot be followed ({_cause(exc)})"))
        return False
    folder = stat.S_ISDIR(mode)
    if not folder and not entry.name.lower().endswith(suffixes):
        return False  # not a file a source reads, wherever it points
    if not (target + os.sep).startswith(top):
        skip(SourceEntrySkipped(printable_path(path),
                                f"a link that leads outside the folder (to {printable_path(target)}); "
                                "copy it into the folder if it belongs in the memory"))
        return False
    if folder:
        return False
    if not stat.S_ISREG(mode):
        skip(SourceEntrySkipped(printable_path(path), f"a link to {_kind(mode)}, not a regular file"))
        return False
    return True


def _not_a_file(entry: os.DirEntry) -> str:
    try:
        return f"{_kind(entry.stat(follow_symlinks=False).st_mode)}, not a regular file"
    except OSError as exc:  # gone since the listing
        return f"it cannot be read ({_cause(exc)})"


def _cause(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "a symlink loop"
    return exc.strerror or type(exc).__name__


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "a special file"


def summary_key(pipeline, source: str, path: Path, digest: str) -> str:
    """The meta key of a file's cached parse summary. A note's id and title come from its path,
    so two notes with the same bytes are two entries."""
    named = ""
    if path.suffix.lower() in TEXT_SUFFIXES:
        root = source_root(pipeline, source)
        named = ":" + (path.relative_to(root).as_posix() if root and path.is_relative_to(root)
                       else path.name)
    return f"ingest:file:{digest}:{source}{named}:{PARSER_VERSION}"


def source_root(pipeline, source: str) -> Path | None:
    """The folder a source's notes are named relative to (None for a one-file source)."""
    src = pipeline.sources.get(source)
    if src is None:
        return None
    path = pipeline.resolve(src.path)
    return path if path.is_dir() else path.parent


def portable_name(pipeline, path: Path) -> str:
    """A file's name in a build's fingerprint: relative to the pipeline's folder when inside it,
    so a project copied or unpacked elsewhere (`synix pack`/`unpack`) is the same build."""
    base = pipeline.base_dir
    if base is not None and path.is_absolute() and path.is_relative_to(base):
        return path.relative_to(base).as_posix()
    return str(path)


class SourceReader:
    """Reads a pipeline's sources, caching parse summaries in the store's meta table."""

    def __init__(self, pipeline, store):
        self.pipeline = pipeline
        self.store = store

    def files(self, on_skip: OnSkip | None = None) -> list[tuple[str, Path, str]]:
        """(source, file, format) of every export file; an entry a folder walk skips goes to
        `on_skip` (default: a warning)."""
        out = []
        for src in self.pipeline.sources.values():
            if src.kind == "live":  # read from its inbox by `scan`, not as export files
                continue
            for f in iter_export_files(self.pipeline.resolve(src.path), on_skip):
                out.append((src.name, f, src.format))
        return out

    def scan(self, *, strict: bool = False) -> IngestResult:
        """Summaries of every conversation of every source file; a bad file is reported, not fatal
        unless `strict` (then its ExportFormatError propagates)."""
        result = IngestResult()
        # Forgotten conversations stay forgotten even if an old export holding them comes back.
        tombstones = set(self.store.get_meta("forget:tombstones") or [])
        parts = [f"tombstones:{','.join(sorted(tombstones))}"] if tombstones else []

        def skipped_entry(exc: SourceEntrySkipped) -> None:
            log.warning(exc.one_line())
            result.failed_files.append((str(exc.path), exc.one_line()))
            parts.append(f"{exc.path}:skipped")

        for source, path, fmt in self.files(skipped_entry):
            result.files.append(str(path))
            try:
                check_file_name(path)  # before its name reaches the store's meta keys
                try:
                    digest, summaries, skipped = self._summaries(source, path, fmt)
                except (PermissionError, FileNotFoundError) as exc:  # that file only
                    raise SourceEntrySkipped(printable_path(path), f"it cannot be read ({_cause(exc)})") from None
            except ExportFormatError as exc:
                if strict:
                    raise
                log.warning(exc.one_line())
                result.failed_files.append((printable_path(path), exc.one_line()))
                parts.append(f"{printable_path(path)}:failed")
                continue
            parts.append(f"{portable_name(self.pipeline, path)}:{digest}")
            result.summaries.extend(s for s in summaries if s.conversation_id not in tombstones)
            result.skipped.extend((str(path), cid, why) for cid, why in skipped)
        for src in self.pipeline.sources.values():
            if src.kind == "live":
                summaries, digest = live_summaries(self, src.name, self.pipeline.resolve(src.path))
                result.summaries.extend(s for s in summaries if s.conversation_id not in tombstones)
                parts.append(f"live:{src.name}:{digest}")
        result.fingerprint = sha256_text("\n".join(parts) + PARSER_VERSION)
        return result

    def stream(self, wanted: Iterable[tuple[str, ConversationSummary]],
               ) -> Iterator[tuple[str, Conversation]]:
        """(tag, parsed conversation) for each (tag, summary) asked for, one export file at a
        time in the file's order (live sessions first). A file is streamed, never held: one of
        its conversations is in memory at a time, however large the export.

        One export can hold several versions of one id; the content hash picks the version the
        merge rule chose, never merely the first one with that id."""
        files: dict[tuple[str, str], dict[str, list[tuple[str, ConversationSummary]]]] = {}
        for tag, summary in wanted:
            if summary.format == "live":
                yield tag, live_conversation(summary)
                continue
            files.setdefault((summary.file, summary.format or "auto", summary.source), {}).setdefault(
                summary.key, []).append((tag, summary))
        for (file, fmt, source), by_key in files.items():
            left = sum(len(v) for v in by_key.values())
            for conv in iter_conversations(file, fmt, root=source_root(self.pipeline, source)):
                candidates = by_key.get(partition_key(conv.conversation_id))
                if not candidates:
                    continue
                digest = conv.content_hash()
                for tag, summary in [c for c in candidates if c[1].content_hash == digest]:
                    candidates.remove((tag, summary))
                    left -= 1
                    yield tag, conv
                if not left:
                    break
            missing = [summary for v in by_key.values() for _, summary in v]
            if missing:
                raise ExportFormatError(
                    f"{file}: conversation {missing[0].conversation_id} vanished while building",
                    hint="the export changed during the build; run again")

    # ---- caching ----------------------------------------------------------------------------
    def _summaries(self, source: str, path: Path, fmt: str):
        st = path.stat()
        stat_key = f"ingest:stat:{path}:{st.st_size}:{st.st_mtime_ns}"
        digest = self.store.get_meta(stat_key)
        content = None  # a note's bytes, read once: hashed here, parsed below if not cached
        if digest is None:
            if is_text_source(path):
                content = read_bytes(path)
                digest = hashlib.sha256(content).hexdigest()
            else:  # an export can be large: streamed, for the hash and again for the parse
                digest = file_sha256(path)
            self.store.set_meta(stat_key, digest)
        root = source_root(self.pipeline, source)
        cache_key = summary_key(self.pipeline, source, path, digest)
        cached = self.store.get_meta(cache_key)
        if cached is not None:
            return digest, [ConversationSummary(**{**s, "file": str(path)}) for s in cached["summaries"]], \
                [tuple(x) for x in cached["skipped"]]
        # Streamed: a summary per conversation is all a scan keeps (the transcripts layer
        # streams the file again for the conversations it builds).
        report = ParseReport(path=str(path), format=fmt)  # its format is detected before the first
        summaries = [summarise(c, source, report.format or fmt)
                     for c in iter_conversations(path, fmt, report, root=root, content=content)]
        skipped = [(cid, why) for cid, why in report.skipped]
        self.store.set_meta(cache_key,
                            {"summaries": [s.__dict__ for s in summaries], "skipped": skipped})
        return digest, summaries, skipped


def dedupe(summaries: Iterable[ConversationSummary], *, dedupe: str, conflict: str,
           ) -> dict[str, list[ConversationSummary]]:
    """Group conversations by the merge's dedupe key and apply the conflict rule.

    Returns group key → chosen summaries (one, or all for keep_all)."""
    groups: dict[str, list[ConversationSummary]] = {}
    first_file: dict[str, str] = {}
    for s in summaries:
        if conflict == "keep_all":
            key = partition_key(f"{s.conversation_id}.{s.content_hash[:8]}")
            where = f"{s.source}:{s.file}"
            if first_file.setdefault(key, where) != where:
                # The same text in another export file (a byte-identical copy, say) is one more
                # version to keep, under a key of its own: only repeats within a file collapse.
                key = partition_key(f"{s.conversation_id}.{s.content_hash[:8]}.{sha256_text(where)[:8]}")
        elif dedupe == "content":
            key = f"c{s.content_hash[:16]}"
        else:
            key = s.key
        groups.setdefault(key, []).append(s)
    chosen: dict[str, list[ConversationSummary]] = {}
    for key, items in groups.items():
        unique = {s.content_hash: s for s in items}
        items = [s for s in items if unique.get(s.content_hash) is s]
        chosen[key] = items if len(items) == 1 else [pick(items, conflict)]
    return chosen


def pick(items: list[ConversationSummary], conflict: str) -> ConversationSummary:
    """The version the conflict rule keeps of conversations that are one."""
    if conflict == "prefer_first":
        return items[0]
    # prefer_latest: newest last message, then the longer conversation, then the later file
    return max(items, key=lambda s: (s.updated_at or "", s.message_count, s.file))

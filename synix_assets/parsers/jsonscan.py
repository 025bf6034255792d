"""Split a JSON export into the raw bytes of each conversation, without decoding them.

One conversation's damage (a NaN date, a lone surrogate escape, nesting 10,000 levels deep)
must cost that conversation only. A decoder that reads the file as one document stops at the
first such value and takes the whole export with it, so this scanner follows only strings and
brackets (iteratively: any depth is fine) and hands each entry's bytes over to be decoded on its
own. The file fails only when its outline is broken: cut off, a bracket closed by the wrong
kind, a missing or stray comma between entries, or data after the end.
Memory: the entry being read plus one read.
"""
from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass
from typing import IO, Iterator

# A whole string, an opening bracket, a closing bracket, or a string cut off by the read's end.
_TOKEN = re.compile(rb'("[^"\\]*(?:\\.[^"\\]*)*")|([\[{])|([\]}])|(")', re.S)
_NOT_SPACE = re.compile(rb"[^ \t\r\n]")
_OPEN_LIST, _OPEN_OBJECT = ord("["), ord("{")
_PAIR = 2  # "]" - "[" == "}" - "{" in ASCII
READ_BYTES = 4 * 1024 * 1024
LAYOUTS = ("list", "wrapper", "values")
_WRAPPER_KEY = b'"conversations"'
_NUMBER = re.compile(rb":[ \t\r\n]*(-?[0-9][0-9.eE+-]*)")


class StructureError(Exception):
    """The file's outline is broken: `what` went wrong at byte `offset` of the JSON text."""

    def __init__(self, what: str, offset: int, *, truncated: bool = False):
        super().__init__(f"{what} (near byte {offset:,})")
        self.what, self.offset, self.truncated = what, offset, truncated


@dataclass
class RawEntry:
    data: bytes
    number: int  # 1-based position among the entries
    offset: int  # where it starts in the JSON text
    depth: int  # levels of nesting: a string 0, an object 1, an object holding a list 2
    line: int | None = None  # a JSON-lines file's line number
    problem: str | None = None  # why the line cannot be an entry (cut off, not JSON)


def line_entries(stream: IO[bytes]) -> Iterator[RawEntry]:
    """Each non-blank line of a JSON-lines file as one entry. A line is its own unit: one cut
    off in the middle, or holding anything but one JSON value, is an entry with a `problem`
    (the caller skips it with one line), and the lines after it are read as ever."""
    offset = number = 0
    for line_number, raw in enumerate(stream, start=1):
        at, offset = offset, offset + len(raw)
        data = raw.strip()
        if not data:
            continue
        number += 1
        try:
            values = list(entries(io.BytesIO(data), "values"))
        except StructureError as exc:
            what = "is cut off" if exc.truncated else f"is not valid JSON ({exc.what})"
            yield RawEntry(data, number, at, 0, line_number, f"line {line_number} {what}")
            continue
        if len(values) != 1:
            yield RawEntry(data, number, at, 0, line_number,
                           f"line {line_number} holds {len(values)} JSON values, not one")
            continue
        yield RawEntry(data, number, at, values[0].depth, line_number)


def entries(stream: IO[bytes], layout: str, read_size: int = READ_BYTES) -> Iterator[RawEntry]:
    """The entries of `layout`: "list" — the items of a top-level array; "wrapper" — the items
    of the array under a top-level object's "conversations" key; "values" — each top-level
    value (JSON lines, or one object). Raises `StructureError` when the outline is broken."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, not {layout!r}")
    buf, base, eof = b"", 0, False
    pos = 0
    stack: list[int] = []
    target = 0 if layout == "values" else None  # depth whose children are the entries
    done = False  # the entries' array has closed (list, wrapper)
    closed = False  # the root value has closed (list, wrapper)
    expect_list = False  # wrapper: the last root key was "conversations"
    number = 0
    gap_from = 0  # where the bytes between entries (commas, scalar entries) begin
    after_value = False
    start: int | None = None  # where the entry being read begins
    deepest = 0
    while True:
        cut = False
        for m in _TOKEN.finditer(buf, pos):
            kind = m.lastindex
            if start is not None:  # inside an entry: the common case, kept short
                if kind == 1:
                    continue
                if kind == 2:
                    stack.append(buf[m.start()])
                    if len(stack) > deepest:
                        deepest = len(stack)
                    continue
                if kind == 3:
                    _close(stack, buf[m.start()], base + m.start())
                    if len(stack) == target:
                        number += 1
                        yield RawEntry(buf[start:m.end()], number, base + start, deepest - target)
                        start, gap_from, after_value = None, m.end(), True
                    continue
            if kind == 4:  # a string the read cut off: read on, then look at it again
                pos, cut = m.start(), True
                break
            at = m.start()
            if target is not None and not done and len(stack) == target:
                if kind == 3 and layout != "values":  # the entries' array closes
                    for scalar in _gap(buf, gap_from, at, base, after_value, layout, closing=True):
                        number += 1
                        yield RawEntry(scalar[0], number, scalar[1], 0)
                    _close(stack, buf[at], base + at)
                    done = True
                    if not stack:
                        closed, gap_from = True, m.end()
                    continue
                if kind == 3:
                    raise StructureError(f"'{chr(buf[at])}' closes nothing", base + at)
                for scalar in _gap(buf, gap_from, at, base, after_value, layout):
                    number += 1
                    yield RawEntry(scalar[0], number, scalar[1], 0)
                if kind == 1:
                    number += 1
                    yield RawEntry(m.group(1), number, base + at, 0)
                    gap_from, after_value = m.end(), True
                    continue
                start, deepest = at, len(stack) + 1
                stack.append(buf[at])
                continue
            if not stack:  # outside the root value (list, wrapper)
                if closed:
                    raise StructureError("data after the end of the JSON text", base + at)
                want = _OPEN_LIST if layout == "list" else _OPEN_OBJECT
                if kind != 2 or buf[at] != want:
                    raise StructureError(
                        "the JSON text is not " + ("a list" if layout == "list" else "an object"),
                        base + at)
                stack.append(buf[at])
                if layout == "list":
                    target, gap_from, after_value = 1, m.end(), False
                continue
            if layout == "wrapper" and len(stack) == 1:
                if kind == 1:
                    colon = _NOT_SPACE.search(buf, m.end())
                    if colon is None and not eof:
                        pos, cut = at, True
                        break
                    expect_list = (m.group(1) == _WRAPPER_KEY and colon is not None
                                   and buf[colon.start()] == ord(":"))
                    continue
                if kind == 2 and expect_list and target is None:
                    if buf[at] != _OPEN_LIST:
                        raise StructureError('the "conversations" field is not a list', base + at)
                    stack.append(buf[at])
                    target, gap_from, after_value = 2, m.end(), False
                    continue
                expect_list = False
            if kind == 2:
                stack.append(buf[at])
            elif kind == 3:
                _close(stack, buf[at], base + at)
                if not stack:  # the wrapper's root object closed
                    if target is None:
                        raise StructureError('the JSON object has no "conversations" list', base + at)
                    closed, gap_from = True, m.end()
        else:
            pos = len(buf)
        if eof:
            break
        # Keep only what is still needed: the entry being read, or the bytes between entries.
        between = closed or (target is not None and not done)
        keep = min(x for x in (pos, start, gap_from if between else None) if x is not None)
        chunk = stream.read(max(read_size, len(buf) - keep))  # grows while one token spans reads
        if not chunk:
            eof = True
            if not cut:
                break
            continue  # look once more: a string cut off at the very end is the file's end
        buf, base = buf[keep:] + chunk, base + keep
        pos -= keep
        gap_from = max(0, gap_from - keep)
        if start is not None:
            start -= keep
    end = base + len(buf)
    if cut or start is not None or stack or (layout != "values" and not closed):
        raise StructureError("the JSON text ends early", end, truncated=True)
    if layout == "values":
        for scalar in _gap(buf, gap_from, len(buf), base, after_value, layout):
            number += 1
            yield RawEntry(scalar[0], number, scalar[1], 0)
        return
    trailing = _NOT_SPACE.search(buf, gap_from)
    if trailing is not None:
        raise StructureError("data after the end of the JSON text", base + trailing.start())


def _close(stack: list[int], closer: int, offset: int) -> None:
    if not stack:
        raise StructureError(f"'{chr(closer)}' closes nothing", offset)
    opener = stack.pop()
    if closer - opener != _PAIR:
        raise StructureError(f"'{chr(closer)}' closes '{chr(opener)}'", offset)


def _gap(buf: bytes, begin: int, end: int, base: int, after_value: bool, layout: str, *,
         closing: bool = False) -> list[tuple[bytes, int]]:
    """The scalar entries (numbers, true, null, garbage) between two bracketed or string
    entries, checking the commas around them. `after_value`: an entry came just before."""
    text = buf[begin:end]
    if not text.strip():
        if layout != "values" and not closing and after_value:
            raise StructureError("a ',' is missing between two entries", base + end)
        return []
    if layout == "values":
        out, offset = [], begin
        for piece in text.split():
            offset = buf.index(piece, offset, end)
            out.append((piece, base + offset))
            offset += len(piece)
        return out
    out, offset, seen_comma = [], begin, False
    for i, piece in enumerate(text.split(b",")):
        if i:
            if not after_value:
                raise StructureError("a ',' with no entry before it", base + offset - 1)
            after_value, seen_comma = False, True
        stripped = piece.strip()
        if stripped:
            if after_value:
                raise StructureError("a ',' is missing between two entries", base + offset)
            out.append((stripped, base + offset + piece.index(stripped)))
            after_value = True
        offset += len(piece) + 1
    if closing and seen_comma and not after_value:
        raise StructureError("a ',' before the closing ']'", base + end)
    if not closing and after_value:
        raise StructureError("a ',' is missing between two entries", base + end)
    return out


def top_level_fields(data: bytes) -> Iterator[tuple[str, str | None]]:
    """(key, value) of each top-level field of one JSON object's bytes, in order, without
    decoding the rest: the value as text when it is a string or a plain number, else None.
    Tolerates any depth, damage elsewhere in the object, and a cut-off end (it just stops)."""
    depth = 0
    key: str | None = None
    for m in _TOKEN.finditer(data):
        kind = m.lastindex
        if kind == 4:
            break
        if kind == 3:
            depth -= 1
            if depth <= 0:
                break
            continue
        if depth == 1:
            if kind == 1:
                nxt = _NOT_SPACE.search(data, m.end())
                if nxt is not None and data[nxt.start()] == ord(":"):
                    if key is not None:  # its value was true, false or null
                        yield key, None
                    key = _decode_string(m.group(1))
                    number = _NUMBER.match(data, nxt.start())
                    if number:  # a number is no token of its own
                        yield key, number.group(1).decode("ascii")
                        key = None
                    continue
            if key is not None:
                yield key, _decode_string(m.group(1)) if kind == 1 else None
                key = None
        if kind == 2:
            depth += 1
    if key is not None:
        yield key, None


def field_opener(data: bytes, wanted: str) -> bytes:
    """The first byte of top-level field `wanted`'s value (`[`, `{`, `"`…) in the bytes of one
    JSON object's start, or b"" when the field is not among them."""
    depth = 0
    for m in _TOKEN.finditer(data):
        kind = m.lastindex
        if kind == 4:
            break
        if kind == 3:
            depth -= 1
            if depth <= 0:
                break
            continue
        if depth == 1 and kind == 1:
            colon = _NOT_SPACE.search(data, m.end())
            if colon is not None and data[colon.start()] == ord(":") and _decode_string(m.group(1)) == wanted:
                value = _NOT_SPACE.search(data, colon.start() + 1)
                return data[value.start():value.start() + 1] if value is not None else b""
        if kind == 2:
            depth += 1
    return b""


def object_keys(stream: IO[bytes], read_size: int = 64 * 1024) -> Iterator[str]:
    """Keys of the first top-level object of a stream, in order, read a chunk at a time (a
    wrapper object can be the whole export)."""
    buf, pos, depth, eof = b"", 0, 0, False
    while True:
        cut = False
        for m in _TOKEN.finditer(buf, pos):
            kind = m.lastindex
            if kind == 4:
                cut = True
                break
            if kind == 2:
                depth += 1
            elif kind == 3:
                depth -= 1
                if depth <= 0:
                    return
            elif depth == 1:
                nxt = _NOT_SPACE.search(buf, m.end())
                if nxt is None and not eof:
                    cut = True
                    break
                if nxt is not None and buf[nxt.start()] == ord(":"):
                    yield _decode_string(m.group(1))
            pos = m.end()
        else:
            pos = len(buf)
        if eof:
            return
        chunk = stream.read(max(read_size, len(buf) - pos))
        if not chunk:
            eof = True
            if not cut:
                return
        buf, pos = buf[pos:] + chunk, 0


def _decode_string(token: bytes) -> str:
    try:
        return json.loads(token.decode("utf-8", "replace"))
    except ValueError:
        return token[1:-1].decode("utf-8", "replace")

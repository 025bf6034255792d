"""Benchmark files → `Case`s: the sessions one memory is built from and the questions asked of it.

LoCoMo (export-formats.md §3): one case per sample; its sessions are `session_<N>`, turn ids are
the `dia_id`s, evidence is normalised (split on ';'/whitespace, leading zeros dropped, ids that do
not exist dropped and counted). LongMemEval (§4; `_s`, `_m` and `oracle` share one schema): one
case per question, its haystack sessions in haystack order; evidence sessions are
`answer_session_ids`, evidence turns the `has_answer` turns, turn ids `<session>_<1-based index>`
(assistant turns counted), as the official retrieval code names them.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Iterable

from synix_resources.errors import ExportFormatError
from synix_resources.text import is_valid_text, walk_json
from synix_resources.values import HugeInt, load_json, small_int, utc_text

LOCOMO_CATEGORIES = {"1": "multi-hop", "2": "temporal", "3": "inference", "4": "single-hop"}
# The category whose questions the design's "temporal accuracy" (000 §9.5) is measured on.
TEMPORAL_CATEGORY = {"locomo": next(c for c, name in LOCOMO_CATEGORIES.items() if name == "temporal"),
                     "longmemeval": "temporal-reasoning"}
_SESSION_KEY = re.compile(r"^session_(\d+)$")
_DIA_ID = re.compile(r"^D(\d+):0*(\d+)$")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


@dataclass(frozen=True)
class Turn:
    turn_id: str
    speaker: str   # a name (LoCoMo) or "user"/"assistant" (LongMemEval)
    role: str      # "user" | "assistant": who the turn is in the exported conversation
    text: str


@dataclass(frozen=True)
class Session:
    session_id: str
    date: str | None  # ISO-8601, UTC
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    question_id: str
    text: str
    category: str
    answer: str
    evidence_sessions: tuple[str, ...]
    evidence_turns: tuple[str, ...]
    date: str | None = None       # when the question is asked (LongMemEval)
    abstention: bool = False


@dataclass
class Case:
    """One memory to build (a LoCoMo sample, a LongMemEval haystack) and its questions."""

    case_id: str
    sessions: list[Session]
    questions: list[Question]

    def turn_session(self) -> dict[str, str]:
        return {t.turn_id: s.session_id for s in self.sessions for t in s.turns}


@dataclass
class Benchmark:
    name: str                 # "locomo" | "longmemeval" | "synixbench"
    path: str
    data_hash: str
    cases: list[Case]
    skipped_questions: int = 0
    dropped_evidence_ids: int = 0
    variant: str = ""         # LongMemEval: "s", "m", "oracle" (from the file name), else ""
    categories: dict[str, str] = field(default_factory=dict)

    @property
    def questions(self) -> int:
        return sum(len(c.questions) for c in self.cases)


def file_hash(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _read_json(path: str | Path, what: str) -> tuple[Path, object]:
    path = Path(path)
    if not path.is_file():
        raise ExportFormatError(f"{path}: no such file" if not path.exists() else f"{path}: is not a file",
                                hint=f"pass the {what} JSON file with --data")
    try:
        data, suspect = _decode(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ExportFormatError(f"{path}: not a readable {what} JSON file ({exc})",
                                hint=f"download the {what} file again") from exc
    except RecursionError as exc:  # the json module recurses once per nested array/object
        raise ExportFormatError(f"{path}: not {what} data — JSON nested too deeply to read",
                                hint=f"download the {what} file again") from exc
    problem = _unstorable(data) if suspect else None
    if problem is not None:
        raise ExportFormatError(f"{path}: not {what} data — {problem}", hint=f"download the {what} file again")
    return path, data


def _decode(text: str) -> tuple[object, bool]:
    """(the decoded file, whether it may hold a value `_unstorable` refuses): only an escaped
    surrogate decodes to a lone one, and only a second, hooked decode keeps a giant integer."""
    try:
        return json.loads(text), _SURROGATE_ESCAPE.search(text) is not None
    except json.JSONDecodeError:
        raise
    except ValueError:  # an integer longer than Python reads
        return load_json(text), True


def _unstorable(data: object) -> str | None:
    """The first value of a benchmark file nothing downstream can hold, named by its path: text
    with a lone surrogate (SQLite and the exports refuse it) or an integer too long to read."""
    for where, value, _depth in walk_json(data):
        if isinstance(value, str) and not is_valid_text(value):
            bad = next(c for c in value if "\ud800" <= c <= "\udfff")
            return f"{where}: has a lone surrogate escape \\u{ord(bad):04x}"
        if isinstance(value, HugeInt):
            return f"{where}: {value}, longer than Python reads"
    return None


def _bad(path: Path, what: str, where: str, problem: str) -> ExportFormatError:
    """The one-line error for a record of an otherwise readable benchmark file."""
    hints = {"LoCoMo": "pass locomo10.json (snap-research/LoCoMo) with --data",
             "LongMemEval": "pass longmemeval_s.json, longmemeval_m.json or longmemeval_oracle.json"}
    return ExportFormatError(f"{path}: not {what} data — {where}: {problem}", hint=hints[what])


def _no_questions(path: Path, what: str, skipped: int, narrowed: bool) -> ExportFormatError:
    """Nothing to ask: an empty run would be recorded as if it measured something."""
    why = (f"{skipped} skipped for missing evidence or text" if skipped
           else "none in the selected conversations" if narrowed else "the file has none")
    return ExportFormatError(f"{path}: no {what} question to evaluate ({why})",
                             hint="widen --conversations/--limit" if narrowed
                             else f"check that this is the {what} file you meant")


# -- LoCoMo ------------------------------------------------------------------------------------

def locomo_date(raw: str | None) -> str | None:
    """"1:56 pm on 8 May, 2023" → "2023-05-08T13:56:00Z"."""
    if not raw:
        return None
    try:
        return utc_text(datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y"))
    except ValueError:
        return None


def locomo_turn_text(turn: dict) -> str:
    text = str(turn.get("text") or "")
    if turn.get("blip_caption"):
        text += f" [shares photo: {turn['blip_caption']}]"
    return text


def normalise_evidence(raw: Iterable, valid: set[str]) -> tuple[list[str], int]:
    """Split on ';' and whitespace, parse D<s>:<t> (leading zeros dropped), keep ids that exist.
    Returns (ids, number dropped)."""
    ids, dropped = [], 0
    for item in raw or []:
        for part in re.split(r"[;\s]+", str(item)):
            if not part:
                continue
            dia = _dia_id(part)
            if dia in valid:
                if dia not in ids:
                    ids.append(dia)
            else:
                dropped += 1
    return ids, dropped


def _dia_id(part: str) -> str | None:
    """`D01:003` → `D1:3`; None when it is not a dialogue id (or numbers one too long to exist)."""
    m = _DIA_ID.match(part)
    numbers = [small_int(n) for n in m.groups()] if m else []
    if not m or any(isinstance(n, HugeInt) for n in numbers):
        return None
    return f"D{numbers[0]}:{numbers[1]}"


def locomo_samples(path: str | Path) -> tuple[Path, list[dict]]:
    path, data = _read_json(path, "LoCoMo")
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not all(isinstance(s, dict) and isinstance(s.get("conversation"), dict)
                                             for s in data):
        raise ExportFormatError(f"{path}: not LoCoMo data — expected a list of samples "
                                "with 'conversation' and 'qa'",
                                hint="pass locomo10.json (snap-research/LoCoMo) with --data")
    return path, data


def locomo_sessions(sample: dict, path: Path) -> list[Session]:
    """The sample's sessions in order (iterating `session_<N>` keys, not date keys: conv-26 has
    date keys without sessions)."""
    conv = sample["conversation"]
    speaker_a = conv.get("speaker_a")
    out = []
    numbers = {k: small_int(m.group(1)) for k in conv if (m := _SESSION_KEY.match(k))}
    huge = next((n for n in numbers.values() if isinstance(n, HugeInt)), None)
    if huge is not None:
        raise _bad(path, "LoCoMo", f"sample {sample.get('sample_id')!r}",
                   f"a session key is numbered with {huge}")
    for key, n in sorted(numbers.items(), key=lambda kv: kv[1]):
        raw = conv[key]
        if not raw:
            continue
        if not isinstance(raw, list) or not all(isinstance(t, dict) for t in raw):
            raise _bad(path, "LoCoMo", f"sample {sample.get('sample_id')!r} session_{n}",
                       "expected a list of turn objects")
        turns = []
        for i, t in enumerate(raw):
            speaker = str(t.get("speaker", ""))
            role = "user" if (speaker == speaker_a if speaker_a else i % 2 == 0) else "assistant"
            turns.append(Turn(str(t.get("dia_id", f"D{n}:{i + 1}")), speaker, role, locomo_turn_text(t)))
        out.append(Session(f"session_{n}", locomo_date(conv.get(f"session_{n}_date_time")), tuple(turns)))
    return out


def load_locomo(path: str | Path, *, conversations: Iterable[str] | None = None,
                categories: Iterable[str] = tuple(LOCOMO_CATEGORIES), limit: int | None = None) -> Benchmark:
    """Questions of `categories` (default 1–4) with valid evidence; `conversations` keeps those
    sample ids; `limit` caps the questions per sample."""
    path, samples = locomo_samples(path)
    if conversations is not None:
        wanted = set(conversations)
        samples = [s for s in samples if str(s.get("sample_id")) in wanted]
    cats = {str(c) for c in categories}
    bench = Benchmark("locomo", str(path), file_hash(path), [],
                      categories={c: LOCOMO_CATEGORIES.get(c, c) for c in sorted(cats)})
    for s_index, sample in enumerate(samples):
        sample_id = str(sample.get("sample_id") or f"sample-{s_index}")
        sessions = locomo_sessions(sample, path)
        case = Case(sample_id, sessions, [])
        turn_session = case.turn_session()
        for q_index, qa in enumerate(_locomo_qa(path, sample_id, sample)):
            category = str(qa.get("category"))
            if category not in cats:
                continue
            evidence, dropped = normalise_evidence(qa.get("evidence"), set(turn_session))
            bench.dropped_evidence_ids += dropped
            question = str(qa.get("question") or "").strip()
            if not evidence or not question:
                bench.skipped_questions += 1
                continue
            if limit is not None and len(case.questions) >= limit:
                continue
            case.questions.append(Question(
                f"{sample_id}#{q_index}", question, category, str(qa.get("answer", "")),
                tuple(dict.fromkeys(turn_session[e] for e in evidence)), tuple(evidence)))
        bench.cases.append(case)
    if not bench.questions:
        raise _no_questions(path, "LoCoMo", bench.skipped_questions,
                            narrowed=conversations is not None or limit is not None)
    return bench


def _locomo_qa(path: Path, sample_id: str, sample: dict) -> list[dict]:
    """The sample's questions, each checked to have a LoCoMo category (1–5)."""
    qa = sample.get("qa")
    if not isinstance(qa, list) or not all(isinstance(q, dict) for q in qa):
        raise _bad(path, "LoCoMo", f"sample {sample_id!r}", "no 'qa' list of question objects")
    for q_index, q in enumerate(qa):
        category = q.get("category")
        if isinstance(category, bool) or str(category) not in {"1", "2", "3", "4", "5"}:
            raise _bad(path, "LoCoMo", f"sample {sample_id!r} question {q_index}",
                       f"category {str(category)[:40]!r} is not 1-5")
        evidence = q.get("evidence")
        if evidence is not None and not isinstance(evidence, list):
            raise _bad(path, "LoCoMo", f"sample {sample_id!r} question {q_index}",
                       f"evidence {str(evidence)[:40]!r} is not a list of dialogue ids (D1:3)")
    return qa


# -- LongMemEval -------------------------------------------------------------------------------

LONGMEMEVAL_TYPES = ("single-session-user", "single-session-assistant", "single-session-preference",
                     "temporal-reasoning", "knowledge-update", "multi-session")


def longmemeval_date(raw: str | None) -> str | None:
    """"2023/05/20 (Sat) 02:21" → "2023-05-20T02:21:00Z"."""
    if not raw:
        return None
    text = re.sub(r"\s*\([A-Za-z]{3}\)\s*", " ", str(raw)).strip()
    for fmt in ("%Y/%m/%d %H:%M", "%Y/%m/%d"):
        try:
            return utc_text(datetime.strptime(text, fmt))
        except ValueError:
            continue
    return None


def _variant(path: Path) -> str:
    name = path.name.lower()
    for v in ("oracle", "_m", "_s"):
        if v in name:
            return v.strip("_")
    return ""


def load_longmemeval(path: str | Path, *, limit: int | None = None,
                     include_abstention: bool = False) -> Benchmark:
    """One case per question (its haystack is its memory). Abstention (`_abs`) questions have no
    evidence and are excluded from retrieval, as in the official evaluation."""
    path, data = _read_json(path, "LongMemEval")
    if not isinstance(data, list) or not all(isinstance(x, dict) and "haystack_sessions" in x for x in data):
        raise ExportFormatError(f"{path}: not LongMemEval data — expected a list of instances "
                                "with 'question' and 'haystack_sessions'",
                                hint="pass longmemeval_s.json, longmemeval_m.json or longmemeval_oracle.json")
    bench = Benchmark("longmemeval", str(path), file_hash(path), [], variant=_variant(path),
                      categories={t: t for t in LONGMEMEVAL_TYPES})
    for index, item in enumerate(data):
        if limit is not None and len(bench.cases) >= limit:
            break
        qid = str(item.get("question_id") or f"q{index}")
        abstention = qid.endswith("_abs")
        text = str(item.get("question") or "").strip()
        if (abstention and not include_abstention) or not text:  # no text: nothing to ask, as in LoCoMo
            bench.skipped_questions += 1
            continue
        ids, dates = _lme_list(path, qid, item, "haystack_session_ids"), _lme_list(path, qid, item, "haystack_dates")
        sessions, gold_turns = [], []
        for s_index, raw in enumerate(_lme_sessions(path, qid, item)):
            sid = str(ids[s_index]) if s_index < len(ids) else f"session-{s_index}"
            turns = []
            for t_index, t in enumerate(raw):
                role = "assistant" if t.get("role") == "assistant" else "user"
                turn = Turn(f"{sid}_{t_index + 1}", role, role, str(t.get("content") or ""))
                turns.append(turn)
                if t.get("has_answer"):
                    gold_turns.append(turn.turn_id)
            sessions.append(Session(sid, longmemeval_date(dates[s_index] if s_index < len(dates) else None),
                                    tuple(turns)))
        # oracle files list sessions unsorted; a memory is built in time order
        sessions.sort(key=lambda s: s.date or "")
        known = {s.session_id for s in sessions}
        gold_sessions = tuple(s for s in _lme_list(path, qid, item, "answer_session_ids") if str(s) in known)
        if not gold_sessions and not abstention:
            bench.skipped_questions += 1
            continue
        # evidence turns are the `has_answer` turns of the evidence sessions
        gold_turns = [t for t in gold_turns if t.rsplit("_", 1)[0] in set(map(str, gold_sessions))]
        question = Question(qid, text,
                            str(item.get("question_type") or "unknown"), str(item.get("answer", "")),
                            tuple(map(str, gold_sessions)), tuple(gold_turns),
                            longmemeval_date(item.get("question_date")), abstention)
        bench.cases.append(Case(qid, sessions, [question]))
    if not bench.questions:
        raise _no_questions(path, "LongMemEval", bench.skipped_questions, narrowed=False)
    return bench


def _lme_list(path: Path, qid: str, item: dict, key: str) -> list:
    """A list field of the instance (missing = empty), or the one-line refusal naming it."""
    value = item.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _bad(path, "LongMemEval", f"question {qid!r}", f"'{key}' is {str(value)[:40]!r}, not a list")
    return value


def _lme_sessions(path: Path, qid: str, item: dict) -> list[list[dict]]:
    """The instance's haystack sessions, each checked to be a list of turn objects."""
    raw = item.get("haystack_sessions")
    if not isinstance(raw, list):
        raise _bad(path, "LongMemEval", f"question {qid!r}", "'haystack_sessions' is not a list")
    for s_index, session in enumerate(raw):
        if not isinstance(session, list):
            raise _bad(path, "LongMemEval", f"question {qid!r} session {s_index}", "expected a list of turns")
        for t_index, turn in enumerate(session):
            if not isinstance(turn, dict) or not isinstance(turn.get("content", ""), (str, type(None))):
                raise _bad(path, "LongMemEval", f"question {qid!r} session {s_index} turn {t_index}",
                           "expected an object with 'role' and text 'content'")
    return raw

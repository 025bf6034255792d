"""`synix forget`: remove a conversation (or a whole export file) and everything built from it.

A journaled operation, under the project's build lock:

plan     resolve the target to conversation ids, the export files holding them (links and files
         outside the project are never written through), every artifact derived from them
         through provenance (superseded versions included), their fold checkpoints past the
         forgotten item, Dagster runs and partitions naming them and the LLM-cache entries whose
         input derived from them; write all of it to `.synix/forget.journal.json` (fsynced)
         before anything is deleted.
phases   store, index, cache, dagster, exports, internal, rebuild, restore, purge, verify — each
         idempotent and recorded in the journal when done, so a kill or an error at any moment
         is finished by a rerun of `synix forget` (with or without the id) or by the next
         `synix run`, which finishes a pending forget before building.
verify   the raw bytes of every file Synix writes are searched for the forgotten artifact ids and
         distinctive lines of the conversations; only then is the journal deleted and success
         reported.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any, Protocol

from synix_resources.process.locking import project_lock
from synix_assets.forget import dagster as dagster_phases
from synix_assets.forget import files
from synix_assets.forget import journal as journaling
from synix_assets.forget import phases
from synix_assets.forget import plan as planning
from synix_assets.project import ProjectPaths
from synix_resources.errors import BuildFailed, StoreError
from synix_resources.settings import settings

log = logging.getLogger("synix.forget")
# restore before rebuild: the rebuild's definitions would otherwise find the wiped assets with no
# record and warn of a `dagster asset wipe` that forget itself did
PHASES = ("store", "index", "cache", "dagster", "exports", "internal", "restore", "rebuild",
          "purge", "verify")


class Rebuild(Protocol):
    """The build function the rebuild phase calls (`synix run`'s `run_build`): it is passed in,
    so forget does not import the builder that finishes pending forgets."""

    def __call__(self, paths: ProjectPaths, *, llm_config: dict | None = None) -> Any: ...


_active: set[str] = set()  # projects this process is forgetting in (the rebuild must not recurse)
_active_lock = threading.Lock()


@dataclass
class ForgetReport:
    target: str | None
    dry_run: bool
    conversation_ids: list[str] = field(default_factory=list)
    artifacts: list[dict] = field(default_factory=list)  # {"id", "layer", "group_key", "current"}
    files_deleted: list[str] = field(default_factory=list)
    files_rewritten: list[str] = field(default_factory=list)
    links_removed: list[dict] = field(default_factory=list)  # {"link", "points_to"}
    files_outside: list[dict] = field(default_factory=list)  # {"path", "points_to"}: untouched
    dagster_runs: list[str] = field(default_factory=list)
    index_docs_removed: int = 0
    cache_entries_removed: int = 0
    rebuild: dict | None = None
    rebuild_error: str | None = None
    purged: list[str] = field(default_factory=list)
    verified_files: int = 0
    resumed: bool = False  # finished a forget an earlier, interrupted call had started
    finished_pending: list[str] = field(default_factory=list)  # targets of pending forgets finished first
    nothing_pending: bool = False
    already_forgotten: bool = False

    def to_json(self) -> dict:
        return dict(self.__dict__)


# --- public API -------------------------------------------------------------------------------

def forget(paths: ProjectPaths, target: str | None = None, dry_run: bool = False, *,
           llm_config: dict | None = None, rebuild: Rebuild) -> ForgetReport:
    """Forget `target` (a conversation id or an export file path); `dry_run` only lists. A
    pending forget (interrupted earlier) is finished first; with no target, only that.
    `rebuild` builds the project again without the forgotten data."""
    paths = paths.on_branch("main")  # a conversation is forgotten by every branch at once
    if paths.on_postgres:
        raise StoreError("synix forget works on the SQLite store only: it proves the deletion "
                         "by reading the raw database files, which a PostgreSQL server keeps to "
                         "itself (WAL, replicas, backups)",
                         hint="see docs/postgres.md: forgetting on a PostgreSQL store")
    pipeline = paths.load_pipeline()
    paths.state_dir.mkdir(parents=True, exist_ok=True)
    with project_lock(paths.lock, timeout_s=settings().lock_timeout_s), _forgetting(paths):
        pending = journaling.load(paths)
        if dry_run:
            return _dry_run(paths, pipeline, pending, target)
        finished = _finish(paths, pipeline, pending, llm_config, rebuild) if pending else None
        if target is None:
            return finished or ForgetReport(None, False, nothing_pending=True)
        if finished is not None and _covers(pending, target):
            return finished
        journal = planning.plan(paths, pipeline, target)
        if journal is None:
            report = ForgetReport(target, False, conversation_ids=[target], already_forgotten=True)
        else:
            journaling.save(paths, journal)  # durable before anything is deleted
            report = _finish(paths, pipeline, journal, llm_config, rebuild)
        if finished is not None:
            report.finished_pending = [finished.target]
        return report


def _dry_run(paths: ProjectPaths, pipeline, pending: dict | None, target: str | None) -> ForgetReport:
    if pending is not None and (target is None or _covers(pending, target)):
        report = _report_of(pending)
    elif target is None:
        report = ForgetReport(None, True, nothing_pending=True)
    else:
        journal = planning.plan(paths, pipeline, target)
        report = _report_of(journal) if journal else ForgetReport(
            target, True, conversation_ids=[target], already_forgotten=True)
        report.finished_pending = [pending["target"]] if pending else []
    report.dry_run = True
    return report


def finish_pending_forget(paths: ProjectPaths, *, llm_config: dict | None = None,
                          rebuild: Rebuild) -> ForgetReport | None:
    """Finish a forget that was interrupted (called first thing by every build, which passes
    itself as `rebuild`); None if none is pending or this process is already forgetting in this
    project."""
    if not journaling.journal_path(paths).exists() or _is_active(paths):
        return None
    report = forget(paths, None, llm_config=llm_config, rebuild=rebuild)
    log.warning("finished the interrupted forget of %s before building", report.target)
    return report


def pending_forget(paths: ProjectPaths) -> str | None:
    """The target of a pending forget, if any."""
    journal = journaling.load(paths)
    return journal["target"] if journal else None


class _forgetting:
    def __init__(self, paths: ProjectPaths):
        self.key = str(paths.root)

    def __enter__(self):
        with _active_lock:
            _active.add(self.key)

    def __exit__(self, *exc):
        with _active_lock:
            _active.discard(self.key)


def _is_active(paths: ProjectPaths) -> bool:
    with _active_lock:
        return str(paths.root) in _active


def _covers(journal: dict, target: str) -> bool:
    return target == journal["target"] or target in journal["conversation_ids"]


def _report_of(journal: dict) -> ForgetReport:
    actions = [files.FileAction.from_json(f) for f in journal["files"]]
    results = journal.get("results", {})
    return ForgetReport(
        target=journal["target"], dry_run=False, conversation_ids=journal["conversation_ids"],
        artifacts=journal["artifacts"],
        files_deleted=[a.path for a in actions if a.action == files.DELETE],
        files_rewritten=[a.path for a in actions if a.action == files.REWRITE],
        links_removed=[{"link": a.path, "points_to": a.points_to} for a in actions
                       if a.action == files.UNLINK],
        files_outside=[{"path": a.path, "points_to": a.points_to} for a in actions
                       if a.action == files.OUTSIDE],
        dagster_runs=journal.get("dagster_runs", []),
        index_docs_removed=results.get("index_docs_removed", 0),
        cache_entries_removed=results.get("cache_entries_removed", 0),
        rebuild=results.get("rebuild"), rebuild_error=results.get("rebuild_error"),
        purged=results.get("purged", []), verified_files=results.get("verified_files", 0))


# --- phases -----------------------------------------------------------------------------------

def _finish(paths: ProjectPaths, pipeline, journal: dict, llm_config: dict | None,
            rebuild: Rebuild) -> ForgetReport:
    resumed = bool(journal.get("done")) or journal.get("attempts", 0) > 0
    journal["attempts"] = journal.get("attempts", 0) + 1
    journaling.save(paths, journal)
    # looked up through the modules at each call, so a phase replaced there is the one that runs
    steps = {"store": phases._phase_store, "index": phases._phase_index,
             "cache": phases._phase_cache, "dagster": dagster_phases._phase_dagster,
             "exports": phases._phase_exports, "internal": phases._phase_internal,
             "rebuild": lambda p, pl, j: _phase_rebuild(p, j, llm_config, rebuild),
             "restore": dagster_phases._phase_restore, "purge": phases._phase_purge,
             "verify": phases._phase_verify}
    for phase in PHASES:
        if phase in journal.get("done", []):
            continue
        results = steps[phase](paths, pipeline, journal) or {}
        journaling.mark_done(paths, journal, phase, **results)
    report = _report_of(journal)
    report.resumed = resumed
    journaling.discard(paths)
    return report


def _phase_rebuild(paths: ProjectPaths, journal: dict, llm_config: dict | None,
                   rebuild: Rebuild) -> dict:
    try:
        return {"rebuild": rebuild(paths, llm_config=llm_config).to_json(), "rebuild_error": None}
    except BuildFailed as err:  # other partitions failing must not stop the purge
        return {"rebuild": err.report.to_json() if err.report else None,
                "rebuild_error": err.one_line()}

"""Cheaper Dagster event writes on a SQLite DAGSTER_HOME.

Measured on this machine class: a partition materialized in a range run costs two events (planned
and materialized), and on Dagster's default SQLite storage each event opens an engine, commits
with a full fsync and closes the last connection to the file, which checkpoints the WAL — about
50 ms per event. Three public levers remove most of that:

- the consolidated event log (one `event_log.db` instead of a shard per run), set in dagster.yaml;
- `PRAGMA synchronous=NORMAL` on Dagster's SQLite files (WAL stays crash-safe for the process;
  only a power cut can drop the last events — Synix's own store, the authority on what was
  built, keeps full durability), set on each connection SQLAlchemy opens to a Dagster file;
- one long-lived connection per Dagster database, so closing a per-event connection is no longer
  the last close that forces a WAL checkpoint;
- Synix's event log storage (dagster_defs/event_log.py, named in dagster.yaml): Dagster's
  consolidated SQLite event log with a pooled engine and one transaction per event or batch;

Speed may not cost liveness: Dagster's UI learns of new events by watching `event_log.db` itself
(watchdog), which a WAL write does not touch, so with no checkpoint a live run page froze after
STEP_START. A background thread checkpoints each kept database whose WAL changed, at most every
CHECKPOINT_EVERY_S (PASSIVE: it never waits for a writer), so the file the UI watches changes
within about a second of each event while events still commit without one fsync each.

Dagster's per-partition ASSET_MATERIALIZATION_PLANNED events are kept where a partition may still
fail: they are what lets Dagster mark the partitions of a failed step as failed rather than
missing. A `synix run` whose work graph already built a layer without a failure launches that
layer's run with Dagster's public switch DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS on
(`one_planned_event`): one planned event carrying the partition subset instead of one per
partition, half the events of a bulk build.
"""
from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections import OrderedDict
import contextlib
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import event
from sqlalchemy.engine import Engine

from synix_assets.dagster_defs.instance_files import INSTANCE_YAML
from synix_assets.dagster_defs.vocabulary import CONVERSATIONS
from synix_resources.folders import remove_inside

PLANNED_SUBSET_ENV = "DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS"

_homes: set[str] = set()
# Homes being created in a staging folder (create_databases): written without any fsync, synced
# once when complete; a staging folder left half-made is thrown away, never used.
_staging: set[str] = set()
# Kept connections per Dagster home, most recently used last. Bounded: a process that builds
# many projects (the live server's tenants, a test session) would otherwise hold every home's
# files open, and SQLite keeps the descriptors of connections closed meanwhile until the last
# connection to that file closes.
KEPT_HOMES = 4
_keepers: OrderedDict[str, dict[str, sqlite3.Connection]] = OrderedDict()
_lock = threading.Lock()
CHECKPOINT_EVERY_S = 1.0
_checkpointer: list[threading.Thread] = []


def _in_a_home(path: str) -> bool:
    return any(path.startswith(home) for home in _homes)


def _in_staging(path: str) -> bool:
    return any(path.startswith(home) for home in _staging)


@event.listens_for(Engine, "do_connect")
def _connect(dialect, _record, cargs, cparams):
    """Open Dagster's SQLite connections here, with synchronous=NORMAL: the file is known from
    the connect arguments, so no connection has to ask SQLite which file it opened (Dagster opens
    a new connection several times per event)."""
    if not _homes or dialect.name != "sqlite" or not cargs or not isinstance(cargs[0], str) \
            or not _in_a_home(cargs[0]):
        return None  # SQLAlchemy connects as usual
    conn = dialect.loaded_dbapi.connect(*cargs, **cparams)
    # Dagster creates a schema in a couple of hundred transactions, each synced to disk at NORMAL:
    # seconds on a busy disk, for databases create_databases syncs once when they are complete
    conn.execute("PRAGMA synchronous=OFF" if _in_staging(cargs[0]) else "PRAGMA synchronous=NORMAL")
    return conn


def tune(dagster_home: Path) -> None:
    """Apply the levers above for this DAGSTER_HOME in this process (idempotent). Called before
    Dagster opens its databases."""
    home = str(Path(dagster_home).resolve())
    with _lock:
        _homes.add(home)
    keep_open(dagster_home)


def keep_open(dagster_home: Path) -> None:
    """Hold one idle connection to each existing Dagster database of this home (and of at most
    KEPT_HOMES - 1 other homes, the most recently used)."""
    home = Path(dagster_home).resolve()
    with _lock:
        kept = _keepers.setdefault(str(home), {})
        _keepers.move_to_end(str(home))
        for path in home.rglob("*.db"):
            key = str(path)
            if key not in kept:
                conn = sqlite3.connect(key, check_same_thread=False)
                # A connection that has run nothing holds no WAL lock and would not count.
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
                kept[key] = conn
        while len(_keepers) > KEPT_HOMES:
            _, old = _keepers.popitem(last=False)
            for conn in old.values():
                conn.close()
        if not _checkpointer:
            thread = threading.Thread(target=_checkpoint_loop, name="synix-dagster-checkpoint", daemon=True)
            _checkpointer.append(thread)
            thread.start()


def _checkpoint_loop() -> None:
    seen: dict[str, float] = {}  # database → mtime of its WAL when last checkpointed
    while True:
        time.sleep(CHECKPOINT_EVERY_S)
        checkpoint_changed(seen)


def checkpoint_changed(seen: dict[str, float]) -> None:
    """Checkpoint (PASSIVE) every kept database whose WAL changed since `seen` says."""
    with _lock:
        kept = [(path, conn) for dbs in _keepers.values() for path, conn in dbs.items()]
    for path, conn in kept:
        try:
            stamp = os.stat(path + "-wal").st_mtime
        except OSError:  # no WAL yet (or the home was removed)
            continue
        if seen.get(path) == stamp:
            continue
        with _lock:
            if not any(conn is c for dbs in _keepers.values() for c in dbs.values()):
                continue  # evicted (closed) meanwhile
            try:
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            except sqlite3.Error:  # busy or removed: the next round tries again
                continue
        seen[path] = stamp


STAGING_PREFIX = ".dagster-new-"


def create_databases(dagster_home: Path) -> None:
    """Create the SQLite databases of a new Dagster home with Synix's default settings in a
    staging folder and move each into place at once. Dagster creates a schema statement by
    statement; a build stopped meanwhile (the work graph's calls are already going out while
    Dagster loads, so a Ctrl-C or a kill can land there) would leave a database without its
    tables, which every later instance refuses. A home with other settings (PostgreSQL) or with
    databases already is left to Dagster."""
    import dagster as dg

    home = Path(dagster_home).resolve()
    for stale in home.parent.glob(STAGING_PREFIX + "*"):
        if not _alive(stale.name[len(STAGING_PREFIX):]):  # left by a process that was killed
            remove_inside(stale, home.parent, ignore_errors=True)
    cfg = home / "dagster.yaml"
    if not cfg.is_file() or cfg.read_text(encoding="utf-8") != INSTANCE_YAML or any(home.rglob("*.db")):
        return
    staging = home.parent / f"{STAGING_PREFIX}{os.getpid()}"
    staging.mkdir()
    try:
        (staging / "dagster.yaml").write_text(INSTANCE_YAML, encoding="utf-8")
        with _lock:
            _homes.add(str(staging))
            _staging.add(str(staging))
        before = os.environ.get("DAGSTER_HOME")
        os.environ["DAGSTER_HOME"] = str(staging)
        try:
            with dg.DagsterInstance.get() as instance:
                instance.get_dynamic_partitions(CONVERSATIONS)
        finally:
            os.environ["DAGSTER_HOME"] = before if before is not None else str(home)
            with _lock:
                _homes.discard(str(staging))
                _staging.discard(str(staging))
        for db in sorted(staging.rglob("*.db")):
            with contextlib.closing(sqlite3.connect(db)) as conn:  # nothing left in a WAL
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            _fsync(db)  # on disk whole before it is linked in (it was written unsynced)
            target = home / db.relative_to(staging)
            target.parent.mkdir(parents=True, exist_ok=True)
            # in place at once, and never over a database another process made meanwhile
            with contextlib.suppress(FileExistsError):
                os.link(db, target)
    finally:
        remove_inside(staging, home.parent, ignore_errors=True)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _alive(pid: str) -> bool:
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:  # another user's process
        return True
    return True


@contextmanager
def one_planned_event(enabled: bool):
    """Within (when `enabled`): runs created in this process log one planned event per asset for
    their partition range. Dagster reads the switch from the environment when it creates a run."""
    if not enabled:
        yield
        return
    before = os.environ.get(PLANNED_SUBSET_ENV)
    os.environ[PLANNED_SUBSET_ENV] = "true"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(PLANNED_SUBSET_ENV, None)
        else:
            os.environ[PLANNED_SUBSET_ENV] = before

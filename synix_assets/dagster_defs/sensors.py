"""Export-folder sensor: keeps the whole memory current while the Dagster daemon runs.

Every tick first syncs the instance with the store (partitions, first-time records, orphans: see
records.py), so any Dagster home shows the real state. Then it looks at the export files. Cursor:
per file its size, mtime and content hash. A file is read only once it has settled: the same size
and mtime on two consecutive ticks, or untouched for `SETTLE_SECONDS`, or — a .json or .zip
export, at first sight — whole by its own format (the JSON parses, the zip's directory and CRCs
check: a copy cut short never does), and (a .jsonl session a tool appends to) its last line
complete — so an export that is still being copied, or a session still being written, is never
half-read; a session that grows is read again once it settles. When files changed it observes the export folder (files and
conversation counts), registers the new conversation and period partitions, and launches one
`synix_build_all` run per branch whose pipeline reads a changed file (main's, and
`<branch>__synix_build_all` for each other branch): Synix's own plan then rebuilds exactly the affected conversations, months
or topics, core, the search index and the context document (docs/dagster.md explains why this
beats Dagster's own partition mappings here). The run key is derived from the changed content, so
a repeated tick cannot launch the same build twice.
"""

import json
import time
import zipfile
import zlib

import dagster as dg

from synix_assets.dagster_defs.automation import automates_all, automation_on
from synix_assets.dagster_defs.checks import check_evaluation
from synix_assets.dagster_defs.graph import Names
from synix_assets.dagster_defs.partitions import partition_keys
from synix_assets.dagster_defs.records import (register_partitions, rerecorded_note, sync_instance,
                                               wipe_orphans)
from synix_assets.dagster_defs.vocabulary import (BRANCH_TAG, EXPORTS_SENSOR, TRIGGER_EXPORTS_SENSOR,
                                                 TRIGGER_TAG)
from synix_assets.engine.context import BuildContext
from synix_assets.engine.layers import is_source_merge, plan_all, plan_layer
from synix_assets.engine.periods import period_of
from synix_assets.project import MAIN
from synix_assets.project.branches import branch_names
from synix_assets.sources.model import file_sha256
from synix_assets.sources.reader import SourceReader
from synix_resources.errors import LLMConfigError
from synix_resources.fingerprints import sha256_text
from synix_resources.llm.resource import LLMResource
from synix_resources.store.resource import ArtifactStoreResource

SETTLE_SECONDS = 5.0
# Dagster's daemon looks at sensors every 5 s (its loop) and skips one whose last tick began less
# than this interval ago: at 5, a loop that comes a moment early skips to the next one (ticks 10 s
# apart); at 3 every loop ticks, so a new export waits 0-5 s for its tick. An idle tick costs a
# store sync and a stat per export file (measured at 10,000 conversations: docs/benchmarks.md).
INTERVAL_SECONDS = 3
SENSOR_NAME = EXPORTS_SENSOR
DEFINITIONS_KEY = "__definitions__"  # cursor entry: each branch's code versions at the last tick


def _last_line_complete(path) -> bool:
    """A session a tool appends to line by line (.jsonl) is mid-write while its last line has no
    newline yet: reading it then would build a transcript from half a line."""
    if path.suffix.lower() != ".jsonl":
        return True
    with path.open("rb") as fh:
        if fh.seek(0, 2) == 0:
            return True
        fh.seek(-1, 2)
        return fh.read(1) == b"\n"


def _whole(path) -> bool:
    """A fresh .json or .zip export whose copy has finished, told by its format: any cut-short
    prefix of a JSON array or object (every export is one) fails to parse, and a cut-short zip
    has no central directory (or fails its CRCs). Then it need not wait for the next tick to
    look settled."""
    suffix = path.suffix.lower()
    try:
        if suffix == ".json":
            with path.open("rb") as fh:
                fh.seek(max(0, fh.seek(0, 2) - 64))
                if not fh.read().rstrip().endswith((b"]", b"}")):
                    return False  # mid-copy for sure: no need to parse what is there so far
                fh.seek(0)
                json.load(fh)
            return True
        if suffix == ".zip":
            with zipfile.ZipFile(path) as zf:
                return zf.testzip() is None
    except (ValueError, zipfile.BadZipFile, zlib.error, OSError, EOFError, RuntimeError, NotImplementedError):
        return False  # not whole yet (or never valid: read once settled, which reports it)
    return False


def _abandoned(prev: dict | None, st, now: float) -> bool:
    """A .jsonl whose last line stays cut short: unchanged since the last tick and untouched for
    `SETTLE_SECONDS`, so no tool is still writing it (a crash cut it). The parser reads the whole
    lines and reports the cut one; waiting for a newline that never comes would hide the rest."""
    return bool(prev and prev.get("size") == st.st_size and prev.get("mtime") == st.st_mtime_ns
                and now - st.st_mtime_ns / 1e9 >= SETTLE_SECONDS)


def _settled(prev: dict | None, size: int, mtime_ns: int, now: float, path=None) -> bool:
    if prev and prev.get("size") == size and prev.get("mtime") == mtime_ns:
        return True
    return now - mtime_ns / 1e9 >= SETTLE_SECONDS or (path is not None and _whole(path))


def changed_files(readers: list[SourceReader], cursor: dict, now: float) -> tuple[dict, list]:
    """(new cursor, [(path, sha)] of settled files whose content is new or changed, and
    [(path, "removed")] of files gone since the last tick), over the export files every reader
    (one per branch) reads."""
    new_cursor, changed = {}, []
    files = {str(path): path for reader in readers for _, path, _ in reader.files()}
    for name, path in sorted(files.items()):
        prev = cursor.get(name)
        try:
            st = path.stat()
            entry = {"size": st.st_size, "mtime": st.st_mtime_ns,
                     "sha": prev.get("sha") if prev else None}
            if not _settled(prev, st.st_size, st.st_mtime_ns, now, path) or not (
                    _last_line_complete(path) or _abandoned(prev, st, now)):
                entry["sha"] = None  # still being written: look again next tick
            elif not (prev and prev.get("sha") and prev["size"] == st.st_size
                      and prev["mtime"] == st.st_mtime_ns):
                entry["sha"] = file_sha256(path)
                if not prev or prev.get("sha") != entry["sha"]:
                    changed.append((name, entry["sha"]))
        except FileNotFoundError:
            # gone between the listing and the read (moved or deleted mid-tick): a removal, not
            # a failed tick
            if prev and prev.get("sha"):
                changed.append((name, "removed"))
            continue
        new_cursor[name] = entry
    # a deleted export is a change too: its conversations leave the memory at the next build
    changed += [(name, "removed") for name, prev in sorted(cursor.items())
                if name not in files and prev.get("sha")]
    return new_cursor, changed


def _reads(graph, reader: SourceReader, paths_changed: set[str]) -> bool:
    """Whether a branch reads any of the changed (or removed) export files."""
    if paths_changed & {str(path) for _, path, _ in reader.files()}:
        return True
    roots = [str(graph.pipeline.resolve(src.path)) for src in graph.pipeline.sources.values()]
    return any(p.startswith(root) for p in paths_changed for root in roots)


def _observations(pipeline, scan, names: Names, seen: set) -> list[dg.AssetObservation]:
    out = []
    for name, src in pipeline.sources.items():
        if names.source(name) in seen:
            continue  # an export folder main (or another branch) reads too: observed once
        seen.add(names.source(name))
        root = str(pipeline.resolve(src.path))
        files = [f for f in scan.files if f.startswith(root)]
        convs = [s for s in scan.summaries if s.source == name]
        out.append(dg.AssetObservation(asset_key=names.source(name), metadata={
            "files": len(files), "conversations": len({s.conversation_id for s in convs}),
            "messages": sum(s.message_count for s in convs),
            "unreadable_files": len([f for f, _ in scan.failed_files if f.startswith(root)]),
            "file_list": dg.MetadataValue.json(sorted(files)[:200])}))
    return out


def new_partitions(pipeline, ctx, scan) -> dict[str, list[str]]:
    """Conversation and period partitions (Dagster's keys: a new conversation is named here) the
    build will need, registered before it starts so the UI shows them (as missing) at once."""
    out: dict[str, list[str]] = {}
    dates: dict[str, str | None] = {}
    for layer in pipeline.layer_order():
        if is_source_merge(pipeline, layer):
            plan = plan_layer(ctx, layer, scan, None)
            out[layer] = partition_keys(ctx.store, pipeline, layer, plan.stale_keys, plan)
            dates.update(plan.dates)
        elif pipeline.partitioning(layer) == "period":
            period = pipeline.steps[layer].config["period"]
            out[layer] = sorted({period_of(d, period) for d in dates.values() if d})
    return out


def file_digest(path) -> str:
    return sha256_text(path.read_text(encoding="utf-8")) if path.exists() else ""


def export_sensor(graphs, build_jobs: dict, asset_keys, *, whole: bool = True,
                  running: bool = True) -> dg.SensorDefinition:
    """`graphs`: every branch's BranchGraph (build.py); `build_jobs`: each branch's
    synix_build_all job. A changed export file launches a build of every branch reading it.
    `whole`: the definitions hold every branch, so assets outside `asset_keys` are orphans.
    `running`: on by default (off when scale.toml says a deployment drives builds)."""
    loaded = {g.names.branch: file_digest(g.paths.pipeline_file) for g in graphs}

    @dg.sensor(name=SENSOR_NAME, minimum_interval_seconds=INTERVAL_SECONDS,
               jobs=list(build_jobs.values()),
               default_status=dg.DefaultSensorStatus.RUNNING if running else dg.DefaultSensorStatus.STOPPED,
               description="Watches the export folders of every branch's pipeline; on a new or "
                           "changed export it builds the whole memory of each branch reading it "
                           "(affected conversations, months/topics, core, search index, context "
                           "document) with that branch's synix_build_all job.")
    def _sensor(context: dg.SensorEvaluationContext, store: ArtifactStoreResource, llm: LLMResource):
        st = store.get_store()
        current = [g for g in graphs if file_digest(g.paths.pipeline_file) == loaded[g.names.branch]]
        for g in current:
            synced = sync_instance(context.instance, g.pipeline, st.on_branch(g.names.branch),
                                   g.versions, g.names, g.paths)
            if synced["partitions_renamed"]:
                context.log.info(
                    f"moved {synced['partitions_renamed']} conversation partition(s) of "
                    f"{g.names.branch} from export ids to readable keys, recording "
                    f"{synced['materializations_recorded']} materialization(s) from the Synix store")
            elif note := rerecorded_note(synced, g.names.branch):
                context.log.warning(note)
            elif synced["partitions_added"]:
                context.log.info(f"synced Dagster with the Synix store ({g.names.branch}): {synced}")
        known = {g.names.branch for g in graphs} - {MAIN}
        if len(current) < len(graphs) or \
                set(branch_names(graphs[0].paths, snapshots=False)) - {MAIN} != known:
            # older definitions (a pipeline.py changed, a branch came or went): their asset list
            # must not wipe anything, least of all a new branch's assets
            context.log.info("a pipeline.py or the branches changed since the definitions "
                             "loaded: reload the code location to sync the new assets")
        elif whole:
            wiped = wipe_orphans(context.instance, set(asset_keys))
            if wiped:
                context.log.info(f"wiped assets no pipeline defines: {[k.to_user_string() for k in wiped]}")
        cursor = json.loads(context.cursor) if context.cursor else {}
        checked = cursor.pop(DEFINITIONS_KEY, None)
        readers = {g.names.branch: SourceReader(g.pipeline, st.on_branch(g.names.branch)) for g in graphs}
        new_cursor, changed = changed_files(list(readers.values()), cursor, time.time())
        has_files = bool(new_cursor)
        versions = {g.names.branch: sha256_text(json.dumps(g.versions, sort_keys=True))[:16] for g in current}
        new_cursor[DEFINITIONS_KEY] = versions
        cursor_text = json.dumps(new_cursor, sort_keys=True)
        if not changed:
            # reloaded definitions with other code versions (a prompt or pipeline edit): the
            # up-to-date checks say at once what a build would now redo
            edited = [g for g in current if checked is not None
                      and checked.get(g.names.branch) != versions[g.names.branch]]
            events = [e for g in edited for e in _check_events(context, g, readers[g.names.branch], llm)]
            if events:
                context.log.info(f"definitions changed: re-evaluated the up-to-date checks of "
                                 f"{', '.join(g.names.branch for g in edited)}")
            return dg.SensorResult(cursor=cursor_text, asset_events=events,
                                   skip_reason=None if has_files or events else "no export files yet")
        paths_changed = {p for p, _ in changed}
        automated = automation_on(context.instance)
        requests, events, seen = [], [], set()
        for g in graphs:
            reader = readers[g.names.branch]
            if not _reads(g, reader, paths_changed):
                continue
            events += _branch_tick(context, g, reader, llm, seen)
            if automated:  # the partitions are registered: the automation sensors take it from here
                continue
            requests.append(dg.RunRequest(
                run_key=sha256_text(json.dumps([g.names.branch, *sorted(changed)]))[:24],
                job_name=build_jobs[g.names.branch].name,
                tags={TRIGGER_TAG: TRIGGER_EXPORTS_SENSOR, BRANCH_TAG: g.names.branch}))
        context.log.info(f"{len(changed)} export file(s) changed: " + (
            "partitions registered; automation is on, so its sensors build" if automated else
            f"building {', '.join(r.tags[BRANCH_TAG] for r in requests)}"))
        return dg.SensorResult(run_requests=requests, asset_events=events, cursor=cursor_text)

    return _sensor


def _branch_tick(context, graph, reader: SourceReader, llm: LLMResource, seen: set) -> list:
    """One branch's part of a tick with changed exports: observe its export folders, register
    the partitions its build will need, and report what Synix will rebuild (until the build
    finishes, the checks say so, e.g. on core)."""
    pipeline, names = graph.pipeline, graph.names
    ctx = BuildContext(pipeline, reader.store, llm=None, paths=graph.paths, reader=reader)
    scan = reader.scan()
    for _, err in scan.failed_files:
        context.log.warning(err)
    new = new_partitions(pipeline, ctx, scan)
    if automates_all(context.instance, {names.layer(n) for n in [*pipeline.steps, *pipeline.projections]}):
        # the first automation run builds the whole memory and registers the periods it builds
        # as it launches their runs; registered now, a new month would be requested at once by
        # the months' own sensor (newly missing), a second run racing the build
        new = {layer: keys for layer, keys in new.items() if is_source_merge(pipeline, layer)}
    register_partitions(context.instance, pipeline, new, names)
    return [*_observations(pipeline, scan, names, seen), *_check_events(context, graph, reader, llm, ctx, scan)]


def _check_events(context, graph, reader: SourceReader, llm: LLMResource, ctx=None, scan=None) -> list:
    """Every layer's `synix_up_to_date` check as Synix's plan has it now."""
    pipeline, names = graph.pipeline, graph.names
    ctx = ctx or BuildContext(pipeline, reader.store, llm=None, paths=graph.paths, reader=reader)
    try:
        ctx.llm = llm.get_client()
    except LLMConfigError as exc:  # a build reports it; the tick still launches it
        context.log.warning(exc.one_line())
        return []
    plans = plan_all(ctx, scan if scan is not None else reader.scan())
    return [check_evaluation(ctx, l, names.layer(l), plans[l]) for l in pipeline.layer_order()]

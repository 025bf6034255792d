"""Branches of a project: create, list, switch, diff, promote (with undo), delete, gc.

A branch is a pipeline definition (`.synix/branches/<name>/pipeline.py`, a copy of its parent's
at creation, then edited) plus its own pointers to current artifacts in the shared store and its
own projections. Artifacts are shared: building a branch reuses every artifact whose
materialization key some branch already built. Promote makes main serve a branch's memory: the
store moves main's pointers in one transaction (recording a journal), then the file steps
(pipeline.py, projections, the `main@previous` snapshot) are finished from that journal, so a
crash at any point leaves main as it was or finishes into the promoted state on the next command.
"""
from __future__ import annotations

import difflib
import os
import sqlite3
from pathlib import Path

from synix_assets.app.branch_files import (branch_files, definition_files, promote_definition,
                                           write_atomic, write_definition)
from synix_assets.engine.build_scope import drop_undeclared_layers
from synix_assets.project import CURRENT_BRANCH_FILE, MAIN, ProjectPaths
from synix_assets.project.branches import require_branch
from synix_resources.errors import BranchError
from synix_resources.fingerprints import sha256_text
from synix_resources.folders import new_folder, remove_inside
from synix_resources.names import check_branch
from synix_resources.process.locking import project_lock
from synix_resources.settings import settings
from synix_resources.store.branches import PREVIOUS

PROMOTE_JOURNAL = "promote:pending"
SNAPSHOT = MAIN + PREVIOUS


def write_branch_pipeline(paths: ProjectPaths, text: str) -> None:
    """Replace a branch's pipeline.py, keeping the old file if the new one does not load."""
    if paths.branch == MAIN:
        raise BranchError("main's pipeline.py is edited directly", hint="name a branch")
    require_branch(paths, paths.branch)
    before = paths.pipeline_file.read_bytes()
    write_atomic(paths.pipeline_file, text.encode("utf-8"))
    try:
        paths.load_pipeline()
    except BaseException:
        write_atomic(paths.pipeline_file, before)
        raise


def _copy_sqlite(src: Path, dst: Path) -> None:
    """Copy a live SQLite file through the backup API: readers of `dst` see the old or the new
    database, never a mix, and no stale WAL is left to replay."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(str(src)) as source, sqlite3.connect(str(dst)) as target:
        source.backup(target)
    source.close()
    target.close()


# --- create / list / switch / delete -------------------------------------------------------


def create_branch(paths: ProjectPaths, name: str, *, from_branch: str | None = None,
                  pipeline_file: str | Path | None = None, template: str | None = None) -> dict:
    """Instant: copies the parent's pointers and pipeline file (or `pipeline_file`, or a bundled
    `template`'s: `synix init --template`'s); no artifact, no LLM call. The names are checked
    before anything is written, and a failure removes only the branch folder this call made."""
    check_branch(name, new=True)
    if template is not None:
        if pipeline_file is not None:
            raise BranchError("give --pipeline or --template, not both",
                              hint="--template names a bundled pipeline, --pipeline your own file")
        from synix_assets.app.init import template_file
        pipeline_file = template_file(template)
    parent = paths.on_branch(from_branch or paths.branch)
    source_file = Path(pipeline_file).expanduser().resolve() if pipeline_file else parent.pipeline_file
    if not source_file.is_file():
        raise BranchError(f"pipeline file {source_file} does not exist",
                          hint="give an existing file to --pipeline")
    target = paths.on_branch(name)
    with project_lock(paths.lock, timeout_s=settings().lock_timeout_s):
        with paths.open_store() as store:
            if store.branch_info(name) is not None:
                raise BranchError(f"branch {name!r} already exists",
                                  hint=f"pick another name or `synix branch delete {name}`")
            files = branch_files(parent, Path(pipeline_file).expanduser().resolve() if pipeline_file else None)
            text = files["pipeline.py"]
            taken = BranchError(f"{target.branch_dir} exists but is not a registered branch",
                                hint="move it aside, or pick another name")
            with new_folder(target.branch_dir, paths.branches_dir, taken=taken):
                write_definition(target.branch_dir, files)
                pipeline = target.load_pipeline()  # a broken file fails here, not at the first run
                info = store.create_branch(name, from_branch=parent.branch,
                                           info={"pipeline_sha": sha256_text(text.decode("utf-8", "replace")),
                                                 "from_file": str(source_file)})
                drop_undeclared_layers(store.on_branch(name), pipeline)
    return {"branch": name, "from": info.parent, "pipeline": str(target.pipeline_file),
            "created_at": info.created_at}


def list_branches(paths: ProjectPaths) -> list[dict]:
    current = paths.branch
    out = []
    with paths.open_store() as store:
        for info in store.branches():
            view = store.on_branch(info.name)
            layers = view.layers()
            runs = view.list_runs(limit=1)
            out.append({"name": info.name, "current": info.name == current,
                        "parent": info.parent, "created_at": info.created_at or None,
                        "pipeline": str(paths.on_branch(info.name).pipeline_file),
                        "artifacts": sum(v["artifacts"] for v in layers.values()),
                        "layers": {k: v["artifacts"] for k, v in layers.items()},
                        "last_run": ({"run_id": runs[0].run_id, "status": runs[0].status,
                                      "started_at": runs[0].started_at} if runs else None),
                        "built": view.get_meta("build:fingerprint") is not None})
    return out


def switch_branch(paths: ProjectPaths, name: str) -> dict:
    check_branch(name)
    require_branch(paths, name)
    marker = paths.state_dir / CURRENT_BRANCH_FILE
    if name == MAIN:
        marker.unlink(missing_ok=True)
    else:
        write_atomic(marker, name.encode("utf-8"))
    return {"branch": name}


def delete_branch(paths: ProjectPaths, name: str) -> dict:
    """Drops the branch's pointers and projections; its artifacts wait for `gc`."""
    check_branch(name)
    if name == MAIN:
        raise BranchError("cannot delete main", hint="promote another branch instead")
    with project_lock(paths.lock, timeout_s=settings().lock_timeout_s):
        with paths.open_store() as store:
            pointers = store.delete_branch(name)
        remove_inside(paths.on_branch(name).branch_dir, paths.branches_dir, ignore_errors=True)
    if paths.branch == name or (paths.state_dir / CURRENT_BRANCH_FILE).exists() and \
            (paths.state_dir / CURRENT_BRANCH_FILE).read_text().strip() == name:
        (paths.state_dir / CURRENT_BRANCH_FILE).unlink(missing_ok=True)
    return {"branch": name, "pointers_removed": pointers,
            "hint": "run `synix gc` to remove artifacts no branch uses any more"}


def gc(paths: ProjectPaths, *, dry_run: bool = False) -> dict:
    """Removes artifacts that no branch points at (nor builds on); never a referenced one."""
    with project_lock(paths.lock, timeout_s=settings().lock_timeout_s):
        with paths.open_store() as store:
            doomed = store.unreferenced()
            by_layer: dict[str, int] = {}
            for art in store.get_many(doomed):
                by_layer[art.layer] = by_layer.get(art.layer, 0) + 1
            removed = 0 if dry_run else store.delete(doomed)
    return {"dry_run": dry_run, "unreferenced": len(doomed), "removed": removed,
            "by_layer": by_layer}


# --- diff --------------------------------------------------------------------------------


def _step_versions(paths: ProjectPaths) -> dict[str, dict]:
    from synix_assets.engine.llm_identity import llm_identity

    pipeline = paths.load_pipeline()
    identity = llm_identity()
    out = {}
    for layer in pipeline.layer_order():
        step = pipeline.steps[layer]
        out[layer] = {"kind": step.kind, "from": list(step.from_),
                      "version": pipeline.version(layer, "" if step.kind == "merge" else identity)}
    for name, proj in pipeline.projections.items():
        out[name] = {"kind": proj.kind, "from": list(proj.from_) if isinstance(proj.from_, tuple)
                     else [proj.from_], "version": sha256_text(repr(sorted(vars(proj).items())))}
    return out


def diff_branch(paths: ProjectPaths, name: str, *, base: str = MAIN) -> dict:
    """Changed steps (by step version) and, per layer, added/removed/changed records."""
    require_branch(paths, name)
    require_branch(paths, base)
    mine, theirs = _step_versions(paths.on_branch(base)), _step_versions(paths.on_branch(name))
    steps = []
    for step in sorted(set(mine) | set(theirs)):
        a, b = mine.get(step), theirs.get(step)
        if a is None:
            steps.append({"step": step, "change": "added", "kind": b["kind"]})
        elif b is None:
            steps.append({"step": step, "change": "removed", "kind": a["kind"]})
        elif a != b:
            steps.append({"step": step, "change": "changed", "kind": b["kind"],
                          "what": [k for k in ("kind", "from", "version") if a[k] != b[k]]})
    with paths.open_store() as store:
        layers = [_layer_diff(store, d, base, name, in_base=d.layer in mine, in_branch=d.layer in theirs)
                  for d in store.diff_branches(base, name) if d.layer in mine or d.layer in theirs]
    # the design's `diff.changed_steps`: the layers whose definition or records differ, and
    # those built from one whose definition does (their output changes once the branch runs)
    pipeline = paths.on_branch(name).load_pipeline()
    differs = {s["step"] for s in steps} | {l["layer"] for l in layers
                                             if l["added"] or l["removed"] or l["changed"]}
    differs |= {d for s in steps if s["step"] in pipeline.steps for d in pipeline.downstream(s["step"])}
    order = [s for s in [*theirs, *(s for s in mine if s not in theirs)]
             if s in pipeline.steps or (s in mine and s not in pipeline.projections)]
    return {"base": base, "branch": name, "steps": steps, "layers": layers,
            "changed_steps": [s for s in order if s in differs]}


def _layer_diff(store, d, base: str, name: str, *, in_base: bool, in_branch: bool) -> dict:
    """A layer only one pipeline declares is wholly added or removed, whatever pointers the
    branch inherited from its parent."""
    if not in_branch:
        return {"layer": d.layer, "added": [], "changed": [], "shared": 0,
                "removed": sorted(store.on_branch(base).current_index(d.layer))}
    if not in_base:
        return {"layer": d.layer, "removed": [], "changed": [], "shared": 0,
                "added": sorted(store.on_branch(name).current_index(d.layer))}
    return {"layer": d.layer, "added": d.added, "removed": d.removed,
            "changed": [{"group_key": g, "base": x, "branch": y} for g, x, y in d.changed],
            "shared": d.shared}


def diff_record(paths: ProjectPaths, name: str, record: str, *, base: str = MAIN) -> dict:
    """A unified text diff of one record against its counterpart (same layer and group) on base."""
    with paths.open_store() as store:
        art = store.get(record)
        theirs = store.on_branch(name).current(art.layer, art.group_key)
        mine = store.on_branch(base).current(art.layer, art.group_key)
    a = mine.content if mine else ""
    b = theirs.content if theirs else ""
    lines = list(difflib.unified_diff(a.splitlines(), b.splitlines(),
                                      fromfile=f"{base}:{art.layer}/{art.group_key}",
                                      tofile=f"{name}:{art.layer}/{art.group_key}", lineterm=""))
    return {"layer": art.layer, "group_key": art.group_key,
            "base_id": mine.artifact_id if mine else None,
            "branch_id": theirs.artifact_id if theirs else None,
            "identical": a == b, "diff": "\n".join(lines)}


# --- promote -------------------------------------------------------------------------------


def _projection_files(paths: ProjectPaths) -> list[tuple[str, Path]]:
    """(kind, path) of every file the branch's projections write."""
    pipeline = paths.load_pipeline()
    files = []
    for proj in pipeline.projections.values():
        if proj.kind == "search_index":
            files.append(("sqlite", paths.search))
        else:
            files.append(("file", paths.output_file(pipeline, proj.path)))
    return list(dict.fromkeys(files))


def _snapshot_dir(paths: ProjectPaths) -> Path:
    return paths.on_branch(SNAPSHOT).branch_dir


def _staging_dir(paths: ProjectPaths) -> Path:
    return paths.branches_dir / f"{SNAPSHOT}.staging"


def _stage_snapshot(paths: ProjectPaths) -> None:
    """Main's pipeline.py and projection files, copied aside before main changes."""
    main = paths.on_branch(MAIN)
    staging = _staging_dir(paths)
    remove_inside(staging, paths.branches_dir, ignore_errors=True)  # left by an interrupted promote
    staging.mkdir(parents=True, mode=0o700)
    write_definition(staging, definition_files(main))
    snap = ProjectPaths(main.root, SNAPSHOT)
    pipeline = main.load_pipeline()
    for kind, src in _projection_files(main):
        if not src.exists():
            continue
        rel = (snap.search if kind == "sqlite" else
               snap.output_file(pipeline, src)).relative_to(snap.branch_dir)
        if kind == "sqlite":
            _copy_sqlite(src, staging / rel)
        else:
            write_atomic(staging / rel, src.read_bytes())


def promote_branch(paths: ProjectPaths, name: str, *, force: bool = False) -> dict:
    """main serves `name`'s memory: pipeline, current artifacts and projections. No LLM call.
    Undo with `promote_branch(paths, "main@previous")`."""
    if name == MAIN:
        raise BranchError("main cannot be promoted into itself", hint="name another branch")
    source = paths.on_branch(name)
    with project_lock(paths.lock, timeout_s=settings().lock_timeout_s):
        finish_pending_promote(paths)
        with paths.open_store() as store:
            if store.branch_info(name) is None:
                raise BranchError(f"no branch {name!r}", hint="see `synix branch list`")
            built = store.on_branch(name).get_meta("build:fingerprint") is not None
        missing = None if built or force or name == SNAPSHOT else _unfinished(source)
        if missing:
            raise BranchError(f"branch {name!r} has no complete build to promote ({missing})",
                              hint=f"run `synix run --branch {name}` first (or pass --force)")
        source.load_pipeline()  # refuse a broken pipeline before anything moves
        _stage_snapshot(paths)
        with paths.open_store() as store:
            moved = store.promote(name, journal={"source": name, "phase": "db"})
        finish_pending_promote(paths)
    return {"promoted": name, "undo": f"synix branch promote {SNAPSHOT}", **moved}


def _unfinished(paths: ProjectPaths) -> str | None:
    """What the branch's memory still lacks according to its plan (None: nothing). Complete is
    a fact about its artifacts and projections, not about how its last build was invoked: a
    `run(from_layer=..., full=True)` records no whole-build fingerprint yet leaves it complete."""
    from synix_assets.app.plan import make_plan

    plan = make_plan(paths, compare=False)
    parts = []
    for layer, est in plan.layers.items():
        counts = [f"{n} {what}" for what, n in (("to build", est.stale), ("to retire", est.retire),
                                                ("blocked", est.blocked), ("failed", est.failed)) if n]
        if counts:
            parts.append(f"{layer}: {', '.join(counts)}")
    parts += [f"projection {name} stale" for name, p in plan.projections.items() if p["stale"]]
    return "; ".join(parts) or None


def finish_pending_promote(paths: ProjectPaths) -> bool:
    """Finish the file steps of a promote whose store transaction committed; True if one was
    pending. Each step is idempotent, so an interrupted finish is simply run again."""
    main = paths.on_branch(MAIN)
    with main.open_store() as store:
        journal = store.get_meta(PROMOTE_JOURNAL)
        if journal is None:
            return False
        source = paths.on_branch(journal["source"])
        if journal["phase"] == "db":
            # The source's files are intact until the snapshot swap below, even when the source
            # is main@previous itself (the new snapshot waits in the staging folder).
            for kind, src in _projection_files(source):
                rel = src.relative_to(source.branch_dir)
                dst = main.search if kind == "sqlite" else main.root / rel
                if src.exists():
                    if kind == "sqlite":
                        _copy_sqlite(src, dst)
                    else:
                        write_atomic(dst, src.read_bytes())
            promote_definition(main, source)
            journal["phase"] = "files"
            store.set_meta(PROMOTE_JOURNAL, journal)
        if journal["phase"] == "files":
            _show_in_dagster(main, store)
            staging, snap = _staging_dir(paths), _snapshot_dir(paths)
            if staging.exists():
                remove_inside(snap, paths.branches_dir, ignore_errors=True)
                os.replace(staging, snap)
            store.delete_meta(PROMOTE_JOURNAL)
    return True


def _show_in_dagster(main: ProjectPaths, store) -> None:
    """Record main's moved pointers in the project's Dagster instance (no build ran, so nothing
    else would): the UI then shows the promoted memory on main's assets, fresh where `synix
    plan` says so. Recording twice (a finish run again) only adds identical events."""
    if not (main.dagster_home / "history").exists():
        return
    from synix_assets.orchestration.promote import record_promote

    record_promote(main, store, store.pointers(SNAPSHOT), store.pointers(MAIN))

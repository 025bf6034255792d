"""`synix purge` (the design's §11.3; `synix forget` is its older name) as a use case: delete a
source record — a conversation, a whole export file, or a source record named by its id — with
everything derived from it, the memory rebuilt without it by `synix run`'s own build (the forget
package below takes the build as an argument, so it never imports this floor)."""
from __future__ import annotations

from pathlib import Path

from synix_assets.app.query import checked_ref, open_store
from synix_assets.app.run import run_build
from synix_assets.forget import ForgetReport
from synix_assets.forget import forget as forget_with
from synix_assets.project import ProjectPaths
from synix_resources.errors import ArtifactNotFound


def forget(paths: ProjectPaths, target: str | None = None, dry_run: bool = False, *,
           llm_config: dict | None = None) -> ForgetReport:
    """Forget `target` (a conversation id or an export file path); `dry_run` only lists; no
    target finishes a forget that was interrupted."""
    return forget_with(paths, target, dry_run, llm_config=llm_config, rebuild=run_build)


def purge(paths: ProjectPaths, target: str | None = None, dry_run: bool = False, *,
          llm_config: dict | None = None) -> ForgetReport:
    """`forget`, where `target` may also be a source record's id (or a unique prefix of it): the
    conversation that record holds is what is deleted. A derived record names several sources,
    so it is refused with their ids."""
    return forget(paths, source_target(paths, target), dry_run, llm_config=llm_config)


def source_target(paths: ProjectPaths, target: str | None) -> str | None:
    """The conversation id or file a purge target names (a record id becomes its conversation)."""
    if target is None or Path(target).expanduser().exists() or not paths.has_store():
        return target
    checked_ref(target, "record id, conversation id or export file")
    with open_store(paths.on_branch("main")) as store:
        found = store.find(target)
        if found is None:
            return target  # a conversation id (or nothing: the forget says so)
        if found.parent_ids:
            leaves = store.leaves(found.artifact_id)
            raise ArtifactNotFound(
                f"record {found.artifact_id} ({found.layer}) is derived from {len(leaves)} source "
                "record(s); purge deletes a source record and everything derived from it",
                hint="purge one of its sources: " + ", ".join(l.artifact_id for l in leaves[:5]))
        return str(found.metadata.get("meta.chat.conversation_id") or found.group_key)

"""Where every file of one branch of a Synix project is: `ProjectPaths(root, branch)`.

A project is a folder with a pipeline.py, its exports and its `.synix/` state. Main's pipeline.py
and projections sit where they always did; another branch keeps its own pipeline.py and
projections under `.synix/branches/<name>/` and shares the store, exports and LLM cache.

Where the state lives is deployment, not memory architecture, so it is not in pipeline.py: the
store is `.synix/synix.db` unless `.synix/config.toml` says `store = "postgresql://…"` (written
by `synix init --store`, config.py) or SYNIX_STORE_PATH names another file or URL. With a
PostgreSQL store, the LLM cache and the build lock live in the same database (docs/postgres.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from synix_assets.project.config import CONFIG_FILE, project_config
from synix_resources.errors import PipelineDefinitionError, ProjectNotFound
from synix_resources.names import MAIN, check_branch
from synix_resources.settings import settings
from synix_resources.store.dialect import is_postgres_url

if TYPE_CHECKING:
    from synix_assets.pipeline.spec import PipelineSpec

PIPELINE_FILE = "pipeline.py"
CURRENT_BRANCH_FILE = "current_branch"


@dataclass(frozen=True)
class ProjectPaths:
    root: Path
    branch: str = MAIN

    def __post_init__(self):
        # A str root works as a Path; a branch name is checked here because it becomes a folder.
        object.__setattr__(self, "root", Path(self.root))
        check_branch(self.branch)

    def on_branch(self, name: str) -> "ProjectPaths":
        return ProjectPaths(self.root, name)

    @property
    def branch_dir(self) -> Path:
        """Where a branch keeps its pipeline.py and projections (main: the project folder)."""
        return self.root if self.branch == MAIN else self.branches_dir / self.branch

    @property
    def branches_dir(self) -> Path:
        return self.state_dir / "branches"

    @property
    def pipeline_file(self) -> Path:
        """Main's: pipeline.py, or the script a pipeline was declared in (`.synix/config.toml`
        says `pipeline = "memory.py"`, written when that script first acted); a branch's: its
        own pipeline.py."""
        if self.branch == MAIN:
            return main_pipeline_file(self.root)
        return self.branch_dir / PIPELINE_FILE

    def output_file(self, pipeline, path: str | Path) -> Path:
        """Where a projection's file (e.g. context.md) goes: as the pipeline says on main; under
        the branch's folder otherwise, so a branch never overwrites main's files."""
        resolved = pipeline.resolve(Path(path))
        if self.branch == MAIN:
            return resolved
        try:
            return self.branch_dir / resolved.relative_to(self.root)
        except ValueError:  # an absolute path outside the project
            return self.branch_dir / resolved.name

    def open_store(self, **kwargs):
        from synix_resources.store.artifact_store import ArtifactStore

        return ArtifactStore(self.store, branch=self.branch, **kwargs)

    def load_pipeline(self) -> PipelineSpec:
        from synix_assets.pipeline.loader import load_pipeline

        return load_pipeline(self.pipeline_file, base_dir=self.root)

    @property
    def state_dir(self) -> Path:
        return self.root / ".synix"

    @property
    def store(self) -> Path | str:
        """The store's SQLite file, or its PostgreSQL URL (a str)."""
        env = settings().store_path
        if env:
            return env if is_postgres_url(env) else Path(env)
        configured = project_config(self.root).get("store")
        if configured:
            return configured if is_postgres_url(configured) else self.root / configured
        return self.state_dir / "synix.db"

    @property
    def on_postgres(self) -> bool:
        return is_postgres_url(self.store)

    def has_store(self) -> bool:
        """Whether a store was created here yet (its file, or its tables in the database)."""
        if not self.on_postgres:
            return Path(self.store).exists()
        from synix_resources.store.postgres import store_exists

        return store_exists(self.store)

    @property
    def search(self) -> Path:
        return self.state_dir / "search.db" if self.branch == MAIN else self.branch_dir / "search.db"

    @property
    def memory_log(self) -> Path:
        """The branch's memory-ops log: what agents wrote, replayed by every build."""
        return self.state_dir / "memory_ops.db" if self.branch == MAIN else self.branch_dir / "memory_ops.db"

    @property
    def ledger(self) -> Path:
        """The evidence ledger (design 003's L1), one per project: evidence is what happened,
        the same whichever branch reads it."""
        return self.state_dir / "ledger.db"

    @property
    def llm_cache(self) -> Path | str:
        """The response cache's SQLite file, or the PostgreSQL store's URL (same database)."""
        return self.store if self.on_postgres else self.state_dir / "llm_cache.db"

    @property
    def vector_cache(self) -> Path | None:
        """A vectors file the search index shares with other indexes: `vector_cache` in
        `.synix/config.toml` (an eval's scratch projects name their project's, so the build's
        Dagster run, which knows only the folder, finds it too); None: the index embeds every
        text it does not hold itself."""
        configured = project_config(self.root).get("vector_cache")
        return self.root / configured if configured else None

    @property
    def internal(self) -> Path:
        return self.state_dir / "internal"

    @property
    def dagster_home(self) -> Path:
        return self.state_dir / "dagster"

    @property
    def lock(self) -> Path | str:
        """The build lock's file, or the PostgreSQL store's URL (an advisory lock there)."""
        return self.store if self.on_postgres else self.state_dir / "build.lock"


def main_pipeline_file(root: Path) -> Path:
    """pipeline.py, or the script `.synix/config.toml` names as `pipeline` (checked: a file
    name without NUL characters, naming no folder)."""
    config = project_config(root)
    if "pipeline" not in config:
        return Path(root) / PIPELINE_FILE
    configured = config["pipeline"]
    where = Path(root) / ".synix" / CONFIG_FILE
    fix = 'set it to the script that declares the pipeline, e.g. pipeline = "memory.py", or remove the line'
    if not isinstance(configured, str) or not configured.strip():
        raise PipelineDefinitionError(f"{where}: pipeline = {configured!r} is not a file name", hint=fix)
    if "\x00" in configured:
        raise PipelineDefinitionError(f"{where}: pipeline = {configured!r} holds a NUL character", hint=fix)
    path = Path(configured) if Path(configured).is_absolute() else (Path(root) / configured).resolve()
    if path.is_dir():
        raise PipelineDefinitionError(f"{where}: pipeline = {configured!r} names a folder ({path}), "
                                      "not a Python file", hint=fix)
    return path


def is_project(folder: Path) -> bool:
    """A folder with a pipeline.py, or the state of a pipeline declared in a script there."""
    return (folder / PIPELINE_FILE).is_file() or bool(
        (folder / ".synix" / CONFIG_FILE).is_file() and "pipeline" in project_config(folder))


def current_branch(root: Path) -> str:
    """The branch commands use when none is named (`synix branch switch` sets it)."""
    try:
        name = (root / ".synix" / CURRENT_BRANCH_FILE).read_text(encoding="utf-8").strip()
    except OSError:
        return MAIN
    return name or MAIN


def find_project(start: str | Path | None = None, branch: str | None = None) -> ProjectPaths:
    """The project containing `start` (default: the current directory), searching upwards, on
    `branch` (default: the project's current branch)."""
    here = Path(start).expanduser().resolve() if start else Path.cwd().resolve()
    if here.is_file():
        here = here.parent
    for folder in (here, *here.parents):
        if is_project(folder):
            return ProjectPaths(folder, branch or current_branch(folder))
    raise ProjectNotFound(
        f"no {PIPELINE_FILE} in {here} or its parents",
        hint="run `synix init DIR --from EXPORT` to create a project, or pass -p/--project DIR")

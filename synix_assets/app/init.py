"""Create a Synix project folder: pipeline.py, exports/, and the Dagster wiring."""
from __future__ import annotations

import shutil
from pathlib import Path

from synix_assets.dagster_defs.storage import write_dotenv, write_instance_yaml
from synix_resources.errors import ExportFormatError, SynixError
from synix_resources.private import private_dir

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DEMO_EXPORTS = Path(__file__).resolve().parent.parent / "demo"
TEMPLATES = ("monthly", "topical", "live")

DEFINITIONS_PY = '''"""Dagster entry point of this Synix project (used by `dagster dev` and `synix ui`)."""
from pathlib import Path

from synix_assets.dagster_defs.build import build_defs

defs = build_defs(Path(__file__).resolve().parent)
'''

WORKSPACE_YAML = """# Dagster workspace of this Synix project. Start the UI with `synix ui`, or `dagster dev` in
# this folder (its .env points DAGSTER_HOME at .synix/dagster). Whole build from the CLI:
#   dagster job execute -f definitions.py -j synix_build_all
load_from:
  - python_file:
      relative_path: definitions.py
      location_name: synix
"""



def template_file(template: str) -> Path:
    if template not in TEMPLATES:
        raise SynixError(f"unknown template {template!r}", hint=f"use one of {', '.join(TEMPLATES)}")
    return EXAMPLES / f"{template}.py"


def template_text(template: str) -> str:
    return template_file(template).read_text(encoding="utf-8")


def demo_exports() -> list[Path]:
    return sorted(p for p in DEMO_EXPORTS.iterdir() if p.suffix in (".json", ".jsonl", ".zip"))


def init_project(root: str | Path, *, exports: list[str | Path] = (), template: str = "monthly",
                 force: bool = False, store: str | None = None,
                 dagster_storage: str | None = None) -> Path:
    """Create the project folder; refuses to overwrite an existing pipeline.py unless `force`.
    `store` / `dagster_storage`: PostgreSQL URLs for Synix's store and Dagster's storage
    (default: SQLite files under .synix/)."""
    from synix_assets.project import postgres_setup

    root = Path(root).expanduser().resolve()
    text = template_text(template)
    for url, option in ((store, "--store"), (dagster_storage, "--dagster-storage")):
        if url is not None:
            postgres_setup.check_postgres_url(url, option)
    for export in exports:
        if not (Path(export).is_file() or Path(export).is_dir()):
            raise ExportFormatError(f"export {export} does not exist",
                                    hint="give the path of a conversations.json, export .zip or .jsonl, "
                                         "or of a notes folder")
    if (root / "pipeline.py").exists() and not force:
        raise SynixError(f"{root / 'pipeline.py'} already exists",
                         hint="choose a new folder, or pass --force to overwrite the pipeline file")
    private_dir(root / "exports")  # copies of the user's chats
    private_dir(root / ".synix")  # memory, audit and prompts: for the user alone
    private_dir(root / ".synix" / "dagster")
    for export in exports:
        src = Path(export)
        dest = root / "exports" / src.name
        if dest.exists() and dest.resolve() != src.resolve():
            dest = root / "exports" / f"{src.stem}-{len(list((root / 'exports').iterdir()))}{src.suffix}"
        if src.is_dir():  # a notes folder or SpecStory history: its notes, not its settings
            _copy_notes(src, dest)
        else:
            shutil.copy2(src, dest)
    (root / "pipeline.py").write_text(text, encoding="utf-8")
    if dagster_storage is not None:
        postgres_setup.write_dagster_storage(root / ".synix" / "dagster", dagster_storage)
    if store is not None:
        postgres_setup.write_store_url(root, store)
    write_dagster_files(root, force=True)
    (root / ".gitignore").write_text(".synix/\n.env\n.tmp_dagster_home_*/\n", encoding="utf-8")
    return root


def _copy_notes(src: Path, dest: Path) -> None:
    from synix_assets.sources.reader import export_files

    for path in export_files(src):
        target = dest / path.relative_to(src)
        private_dir(target.parent)
        shutil.copy2(path, target)


def create_project(directory: str | Path, *, exports: tuple[str, ...] | list[str] = (),
                   template: str = "monthly", demo: bool = False, force: bool = False,
                   store: str | None = None,
                   dagster_storage: str | None = None) -> tuple[Path, list[Path]]:
    """`synix init`: check each given export's format first, so a bad one fails naming the file
    rather than at the first build; add the bundled demo exports when `demo`. Returns the project
    root and the exports copied into it."""
    from synix_assets.parsers.detect import detect_format

    from synix_assets.sources.reader import export_files

    sources = [Path(e) for e in exports]
    for src in sources:
        if src.is_file():
            detect_format(src)
        elif src.is_dir():
            found = export_files(src)
            if not found:
                raise ExportFormatError(f"{src}: the folder holds no exports or notes",
                                        hint="give a folder of .md/.txt notes, a .specstory/history "
                                             "folder, or an export file")
            for path in found:
                detect_format(path)
    if demo:
        sources += demo_exports()
    root = init_project(directory, exports=sources, template=template, force=force,
                        store=store, dagster_storage=dagster_storage)
    return root, sources


def describe_project(root: Path, *, template: str, exports: int,
                     dagster_storage: str | None) -> dict:
    """What `synix init --json` prints about the new project."""
    from synix_assets.project import ProjectPaths
    from synix_resources.store.postgres import display_url

    paths = ProjectPaths(root)
    return {"project": str(root), "template": template, "exports": exports,
            "store": display_url(str(paths.store)),
            "dagster_yaml": str(paths.dagster_home / "dagster.yaml"),
            "dagster_storage": "postgresql" if dagster_storage else "sqlite"}


def write_dagster_files(root: str | Path, *, force: bool = False) -> None:
    """definitions.py, workspace.yaml, the Dagster home's dagster.yaml and the `.env` pointing
    DAGSTER_HOME at it; existing definitions/workspace files are kept unless `force`."""
    root = Path(root)
    for name, text in (("definitions.py", DEFINITIONS_PY), ("workspace.yaml", WORKSPACE_YAML)):
        if force or not (root / name).exists():
            (root / name).write_text(text, encoding="utf-8")
    home = root / ".synix" / "dagster"
    write_instance_yaml(home)
    write_dotenv(root, home)


def switch_template(root: str | Path, template: str) -> None:
    """Replace the project's pipeline.py with a bundled template (used by the demo)."""
    (Path(root) / "pipeline.py").write_text(template_text(template), encoding="utf-8")

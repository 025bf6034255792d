"""Create a Synix project folder: pipeline.py, exports/, and the Dagster wiring."""
from __future__ import annotations

import logging
import os
import re
import shutil
import stat
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator

from synix_assets.dagster_defs.instance_files import write_dotenv, write_instance_yaml
from synix_assets.pipeline.steps import FORMATS
from synix_resources.errors import ExportFormatError, SourceEntrySkipped, SynixError
from synix_resources.folders import new_folder, remove_inside
from synix_resources.private import private_dir
from synix_resources.values import utc_text

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DEMO_EXPORTS = Path(__file__).resolve().parent.parent / "demo"
TEMPLATES = ("monthly", "topical", "live", "synapse", "syke")
# Formats of coding agents whose history folder keeps growing: read in place, never copied.
SESSION_FORMATS = frozenset({"claude-code", "codex-cli", "gemini-cli"})
EXPORT_FORMATS = tuple(f for f in FORMATS if f != "auto")  # what `synix init --format` accepts
OnSkip = Callable[[SourceEntrySkipped], None]
log = logging.getLogger("synix.init")

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

# `dg` (dg dev, dg check defs, dg list defs, dg launch) finds a project by this table; the
# project's "root module" is definitions.py itself, which is also its defs module.
PYPROJECT_TOML = """# Makes this folder a `dg` project: `dg dev`, `dg check defs`, `dg list defs`, `dg launch`.
[tool.dg]
directory_type = "project"

[tool.dg.project]
root_module = "definitions"
defs_module = "definitions"
code_location_target_module = "definitions"
code_location_name = "synix"
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
                 dagster_storage: str | None = None, read_in_place: list[str | Path] = (),
                 on_skip: OnSkip | None = None, format: str | None = None) -> Path:
    """Create the project folder; refuses to overwrite an existing pipeline.py unless `force`.
    `exports`: files and folders copied into exports/ (a folder: the files a source would read,
    in their subfolders; an entry the walk skips goes to `on_skip`). `read_in_place`: tool
    history folders added as sources where they are. `store` / `dagster_storage`: PostgreSQL
    URLs for Synix's store and Dagster's storage (default: SQLite files under .synix/).
    `format`: the format the export sources name (default "auto": each file's is detected).

    Everything is checked before anything is written, and a failure while writing removes what
    this call made (the folder, or what it put into an empty one): never a half-made project."""
    from synix_assets.project import postgres_setup

    root = Path(root).expanduser().resolve()
    text = template_text(template)
    for url, option in ((store, "--store"), (dagster_storage, "--dagster-storage")):
        if url is not None:
            postgres_setup.check_postgres_url(url, option)
    for export in (*exports, *read_in_place):
        check_export(export)
    text = watch_folders(text, [Path(f).expanduser().resolve() for f in read_in_place], template,
                         format or "auto")
    text = stamp_created_at(text)
    _check_target(root, force)
    with _made_by_this_call(root):
        _write_project(root, text, exports, store, dagster_storage, on_skip)
    return root


def stamp_created_at(text: str) -> str:
    """The template with `created_at=` (now, UTC) in its `Pipeline(...)` call: the design's
    pipeline field (§3.1), fixed in the file so every load reads the same moment."""
    stamp = utc_text(datetime.now(timezone.utc))
    return re.sub(r"^(pipeline = Pipeline\([^)\n]*?)\)", rf'\1, created_at="{stamp}")', text, count=1,
                  flags=re.MULTILINE)


def check_export(export: str | Path) -> None:
    """An export given to `--from` must be a regular file or a folder: a FIFO or device
    (/dev/zero) would be read for ever."""
    try:
        mode = os.stat(export).st_mode
    except FileNotFoundError:
        raise ExportFormatError(f"export {export} does not exist",
                                hint="give the path of a conversations.json, export .zip or .jsonl, "
                                     "a notes folder, or a tool history folder such as ~/.codex/sessions") from None
    except OSError as exc:
        raise ExportFormatError(f"export {export} cannot be read ({exc.strerror})",
                                hint="check the path and its permissions") from None
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise ExportFormatError(f"export {export} is not a regular file or folder (a device, FIFO or socket)",
                                hint="give an export file (conversations.json, .zip, .jsonl) or a folder")


def _check_target(root: Path, force: bool) -> None:
    """A project is made in a new folder, an empty one, or (with `force`) an existing project:
    never into the file system's root or a folder of other files."""
    if root == Path(root.anchor):
        raise SynixError(f"{root} is the file system's root, not a project folder",
                         hint="give a new folder, e.g. `synix init mem`")
    if (root / "pipeline.py").exists():
        if not force:
            raise SynixError(f"{root / 'pipeline.py'} already exists",
                             hint="choose a new folder, or pass --force to overwrite the pipeline file")
        return
    if root.exists() and not root.is_dir():
        raise SynixError(f"{root} exists and is not a folder", hint="give a new folder")
    if root.is_dir() and not _is_empty(root) and not (root / ".synix").is_dir():
        raise SynixError(f"{root} is not empty and is not a Synix project",
                         hint="give a new or empty folder, e.g. `synix init mem`")


@contextmanager
def _made_by_this_call(root: Path) -> Iterator[None]:
    """Removes what the block made if it raises: the folders it created (the first missing one
    of `root`'s chain), or the entries it put into `root` when `root` was empty. An existing
    project (`--force`) is left as it is."""
    first_missing = None
    for folder in (root, *root.parents):
        if folder.exists():
            break
        first_missing = folder
    if first_missing is not None:
        with new_folder(first_missing, first_missing.parent, taken=SynixError(
                f"{first_missing} appeared while the project was being made", hint="run `synix init` again")):
            yield
        return
    if not _is_empty(root):  # an existing project, written over with --force
        yield
        return
    try:
        yield
    except BaseException:
        for entry in os.listdir(root):
            remove_inside(root / entry, root, ignore_errors=True)
        raise


def _is_empty(folder: Path) -> bool:
    with os.scandir(folder) as entries:
        return next(entries, None) is None


def _write_project(root: Path, text: str, exports, store, dagster_storage, on_skip) -> None:
    from synix_assets.project import postgres_setup

    private_dir(root / "exports")  # copies of the user's chats
    private_dir(root / ".synix")  # memory, audit and prompts: for the user alone
    private_dir(root / ".synix" / "dagster")
    for export in exports:
        src = Path(export)
        dest = root / "exports" / src.name
        if dest.exists() and dest.resolve() != src.resolve():
            dest = root / "exports" / f"{src.stem}-{len(list((root / 'exports').iterdir()))}{src.suffix}"
        if src.is_dir():  # a notes folder or SpecStory history: its notes, not its settings
            _copy_folder(src, dest, on_skip)
        else:
            shutil.copy2(src, dest)
    (root / "pipeline.py").write_text(text, encoding="utf-8")
    if dagster_storage is not None:
        postgres_setup.write_dagster_storage(root / ".synix" / "dagster", dagster_storage)
    if store is not None:
        postgres_setup.write_store_url(root, store)
    write_dagster_files(root, force=True)
    (root / ".gitignore").write_text(".synix/\n.env\n.tmp_dagster_home_*/\n", encoding="utf-8")


def _copy_folder(src: Path, dest: Path, on_skip: OnSkip | None) -> None:
    from synix_assets.sources.reader import iter_export_files

    for path in iter_export_files(src, on_skip):
        target = dest / path.relative_to(src)
        private_dir(target.parent)
        shutil.copy2(path, target)


_EXPORTS_SOURCE = 'pipeline.source("exports", path="exports", format="auto")\n'
_EXPORTS_MERGE = 'from_=["exports"]'


def watch_folders(text: str, folders: list[Path], template: str, format: str = "auto") -> str:
    """pipeline.py with one more source per tool history folder given to `--from`, every export
    source naming `format`. A folder is read where it is, never copied: the export sensor then
    sees each session as the tool writes it (a session is read once it settles and rebuilt when
    it grows)."""
    if not folders and format == "auto":
        return text
    if _EXPORTS_SOURCE not in text or (folders and _EXPORTS_MERGE not in text):
        raise SynixError(f"the {template} template has no export source to add a folder or a format to",
                         hint="use --template monthly or topical with a folder in --from or --format")
    names = ["history" if i == 0 else f"history_{i + 1}" for i in range(len(folders))]
    sources = "".join(f"pipeline.source({name!r}, path={str(folder)!r}, format=\"{format}\")\n"
                      for name, folder in zip(names, folders))
    exports = _EXPORTS_SOURCE.replace('format="auto"', f'format="{format}"')
    text = text.replace(_EXPORTS_SOURCE, exports + sources, 1)
    if not folders:
        return text
    return text.replace(_EXPORTS_MERGE, "from_=" + repr(["exports", *names]).replace("'", '"'), 1)


def create_project(directory: str | Path, *, exports: tuple[str, ...] | list[str] = (),
                   template: str = "monthly", demo: bool = False, force: bool = False,
                   store: str | None = None, dagster_storage: str | None = None,
                   format: str | None = None) -> tuple[Path, dict[Path, str]]:
    """`synix init`: check each given export's format first, so a bad one fails naming the file
    rather than at the first build; add the bundled demo exports when `demo`. A folder whose
    files are all coding-agent sessions (`SESSION_FORMATS`: ~/.codex/sessions, ~/.gemini/tmp,
    ~/.claude/projects) is read in place, since those sessions keep growing; any other folder
    (notes, a .specstory history, exports) is copied. An entry of a folder that is not read (a
    symlink loop, a link leading outside the folder: `iter_export_files`) is one warning line.
    `format`: every export must be in it (an empty one is taken to be), and pipeline.py's
    sources name it instead of "auto". Returns the project root and each export or folder it
    reads with the format found there (a folder's formats joined by ", ")."""
    sources = [Path(e) for e in exports]
    for src in sources:
        check_export(src)
    seen: set[str] = set()

    def skip_once(skipped: SourceEntrySkipped) -> None:  # each folder is walked twice
        if str(skipped.path) not in seen:
            seen.add(str(skipped.path))
            log.warning(skipped.one_line())

    found = {src: _formats(src, format, skip_once) for src in sources}
    in_place = [src for src in sources if src.is_dir() and found[src] <= SESSION_FORMATS]
    copied = [src for src in sources if src not in in_place]
    if demo:
        copied += demo_exports()
        found.update({src: _formats(src, format, skip_once) for src in demo_exports()})
    root = init_project(directory, exports=copied, template=template, force=force,
                        store=store, dagster_storage=dagster_storage, read_in_place=in_place,
                        on_skip=skip_once, format=format)
    return root, {src: ", ".join(sorted(found[src])) for src in [*copied, *in_place]}


def _formats(src: Path, told: str | None, on_skip: OnSkip) -> set[str]:
    """The formats of an export file or of the files a source would read in a folder; with
    `told`, each must be that one (a file that says otherwise fails naming both)."""
    from synix_assets.parsers.detect import detect_format
    from synix_assets.sources.reader import export_files

    if src.is_file():
        files = [src]
    else:
        files = export_files(src, on_skip)
        if not files:
            raise ExportFormatError(f"{src}: the folder holds no exports, sessions or notes",
                                    hint="give a folder of .md/.txt notes, a .specstory/history folder, "
                                         "a tool history folder such as ~/.codex/sessions, or an export file")
    formats = set()
    for path in files:
        fmt = detect_format(path, told)
        if told is not None and fmt != told:
            raise ExportFormatError(f"{path} looks like a {fmt} export, not {told}",
                                    hint=f"pass --format {fmt}, or leave --format out to detect each file's")
        formats.add(fmt)
    return formats


def describe_project(root: Path, *, template: str, formats: dict[Path, str],
                     dagster_storage: str | None) -> dict:
    """What `synix init --json` prints about the new project."""
    from synix_assets.project import ProjectPaths
    from synix_resources.store.postgres import display_url

    paths = ProjectPaths(root)
    return {"project": str(root), "template": template, "exports": len(formats),
            "formats": {str(src): fmt for src, fmt in formats.items()},
            "store": display_url(str(paths.store)),
            "dagster_yaml": str(paths.dagster_home / "dagster.yaml"),
            "dagster_storage": "postgresql" if dagster_storage else "sqlite"}


def write_dagster_files(root: str | Path, *, force: bool = False) -> None:
    """definitions.py, workspace.yaml, the Dagster home's dagster.yaml and the `.env` pointing
    DAGSTER_HOME at it, and the pyproject.toml that lets `dg` run there; existing files are kept
    unless `force` (a pyproject.toml of the user's own is never replaced)."""
    root = Path(root)
    if not (root / "pyproject.toml").exists():
        (root / "pyproject.toml").write_text(PYPROJECT_TOML, encoding="utf-8")
    for name, text in (("definitions.py", DEFINITIONS_PY), ("workspace.yaml", WORKSPACE_YAML)):
        if force or not (root / name).exists():
            (root / name).write_text(text, encoding="utf-8")
    home = root / ".synix" / "dagster"
    write_instance_yaml(home)
    write_dotenv(root, home)


def switch_template(root: str | Path, template: str) -> None:
    """Replace the project's pipeline.py with a bundled template (used by the demo)."""
    (Path(root) / "pipeline.py").write_text(template_text(template), encoding="utf-8")

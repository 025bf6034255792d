"""The files that define a branch's pipeline, and how they are copied when a branch is made and
when one is promoted.

A branch of a `synix init` project is one file, `.synix/branches/<name>/pipeline.py`: a copy of
its parent's, to which overrides made from Python are appended. A script that declares a
pipeline and then acts on it (`pipeline.run()`) cannot be copied that way: loading it stops at
its first action (pipeline.loader.DeclarationEnds), so anything appended would never run. Its
branch keeps the script as `declaration.py` and a `pipeline.py` that loads that declaration,
takes over the script's names (its prompt functions and imports), then applies the overrides.

Promoting into such a project never writes over the user's script: main's definition becomes
`.synix/main/` (the branch's files), recorded as the project's pipeline file in
`.synix/config.toml`, with the script as it was then (`superseded`). The script's own
`pipeline`, acting again (the rest of the same run, or the script run again unchanged), acts on
main's promoted definition; once the script is edited it is main's definition again.
"""
from __future__ import annotations

import os
from pathlib import Path

from synix_assets.pipeline.loader import load_declaration
from synix_assets.project import PIPELINE_FILE, ProjectPaths
from synix_assets.project.config import SUPERSEDED, script_mark, set_project_config

DECLARATION = "declaration.py"
PROMOTED_DIR = "main"
WRAPPER = '''"""Branch pipeline of {script}: its declaration as it was when the branch was made ({decl},
beside this file), then this branch's overrides (appended below)."""
from synix_assets.pipeline.loader import declared

_declaration = declared(__file__, {decl!r})
globals().update(_declaration.names())  # the script's prompt functions, imports and constants
pipeline = _declaration.pipeline
'''


def write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def definition_files(paths: ProjectPaths) -> dict[str, bytes]:
    """name → content of the files defining this branch's pipeline (pipeline.py first)."""
    file = paths.pipeline_file
    files = {PIPELINE_FILE: file.read_bytes()}
    declaration = file.parent / DECLARATION
    # only inside .synix/: next to a user's own script a declaration.py is the user's file
    if file.name == PIPELINE_FILE and file.parent != paths.root and declaration.is_file():
        files[DECLARATION] = declaration.read_bytes()
    return files


def branch_files(parent: ProjectPaths, source_file: Path | None = None) -> dict[str, bytes]:
    """The files a new branch starts from: the parent's (or `source_file`'s, a file the user
    named), wrapped when the source is a script that acts on its pipeline."""
    if source_file is None:
        files = definition_files(parent)
        source_file = parent.pipeline_file
        if DECLARATION in files:
            return files
    else:
        files = {PIPELINE_FILE: source_file.read_bytes()}
    if load_declaration(source_file, base_dir=parent.root).action is None:
        return files
    return {PIPELINE_FILE: WRAPPER.format(script=source_file.name, decl=DECLARATION).encode("utf-8"),
            DECLARATION: files[PIPELINE_FILE]}


def write_definition(folder: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        write_atomic(folder / name, data)
    if DECLARATION not in files:
        (folder / DECLARATION).unlink(missing_ok=True)


def promote_definition(main: ProjectPaths, source: ProjectPaths) -> None:
    """Main's definition becomes `source`'s: main's pipeline.py is replaced, or, when main is
    declared in a user's script (or was promoted before), `.synix/main/` is (the script is kept)."""
    files = definition_files(source)
    own = main.root / PIPELINE_FILE
    if main.pipeline_file == own and DECLARATION not in files:
        write_atomic(own, files[PIPELINE_FILE])
        return
    folder = main.state_dir / PROMOTED_DIR
    if not main.pipeline_file.resolve().is_relative_to(main.state_dir.resolve()):
        # the user's own file stops defining main: remembered as it is now, so that running it
        # again unchanged does not put the pre-promotion definition back
        set_project_config(main.root, SUPERSEDED, script_mark(main.root, main.pipeline_file))
    write_definition(folder, files)
    set_project_config(main.root, "pipeline", str((folder / PIPELINE_FILE).relative_to(main.root)))

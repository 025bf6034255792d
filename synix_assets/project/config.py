"""A project's deployment settings: `.synix/config.toml` (where the store lives, written by
`synix init --store`, postgres_setup.py), kept out of pipeline.py because they are not memory
architecture."""
from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path

from synix_resources.errors import StoreError

CONFIG_FILE = "config.toml"
# The code location of another Dagster project the memory's assets are served from (the Synix
# component of a `dg` project): runs a build launches are re-executed there
CODE_LOCATION = "code_location"
# The user's script that defined main until a branch was promoted, as it was then (script_mark)
SUPERSEDED = "superseded"


def project_config(root: Path) -> dict:
    """`.synix/config.toml` of the project (deployment settings), {} when there is none."""
    path = Path(root) / ".synix" / CONFIG_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise StoreError(f"{path} is not valid TOML: {err}",
                         hint='fix it, e.g. store = "postgresql://user@host/db"') from err


def script_mark(root: Path, script: Path) -> str:
    """A script by its name in the project and its exact content: a promote records the one it
    replaces as main's definition, and running that script again unchanged acts on the promoted
    definition instead of putting the old one back (python_api/project.superseded)."""
    root, script = Path(root).resolve(), Path(script).resolve()
    name = str(script.relative_to(root)) if script.is_relative_to(root) else str(script)
    return f"{name} sha256:{hashlib.sha256(script.read_bytes()).hexdigest()}"


def set_project_config(root: Path, key: str, value: str | None) -> Path:
    """Set one deployment setting in `.synix/config.toml` (None removes it), keeping the others
    (0600: the store URL there may hold a password)."""
    import os

    import tomli_w

    state = Path(root) / ".synix"
    state.mkdir(parents=True, exist_ok=True)
    path = state / CONFIG_FILE
    config = {k: v for k, v in {**project_config(root), key: value}.items() if v is not None}
    tmp = path.with_name(f".{CONFIG_FILE}.tmp-{os.getpid()}")
    tmp.write_text("# This project's deployment settings (docs/configuration.md).\n" + tomli_w.dumps(config),
                   encoding="utf-8")
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    return path

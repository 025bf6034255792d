"""A project's deployment settings: `.synix/config.toml` (where the store lives, written by
`synix init --store`, postgres_setup.py), kept out of pipeline.py because they are not memory
architecture."""
from __future__ import annotations

import tomllib
from pathlib import Path

from synix_resources.errors import StoreError

CONFIG_FILE = "config.toml"


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


def set_project_config(root: Path, key: str, value: str) -> Path:
    """Set one deployment setting in `.synix/config.toml`, keeping the others (0600: the store
    URL there may hold a password)."""
    import os

    import tomli_w

    state = Path(root) / ".synix"
    state.mkdir(parents=True, exist_ok=True)
    path = state / CONFIG_FILE
    config = {**project_config(root), key: value}
    tmp = path.with_name(f".{CONFIG_FILE}.tmp-{os.getpid()}")
    tmp.write_text("# This project's deployment settings (docs/configuration.md).\n" + tomli_w.dumps(config),
                   encoding="utf-8")
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    return path

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

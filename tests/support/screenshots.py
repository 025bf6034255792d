"""Where a test's screenshot goes: docs/ when SYNIX_DOCS_SCREENSHOTS=1 (refreshing the ones the
docs show), else the test's own temporary folder, so a test run leaves the repository as it was."""
from __future__ import annotations

import os
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"


def shot_path(tmp: Path, name: str) -> Path:
    return DOCS / name if os.environ.get("SYNIX_DOCS_SCREENSHOTS") == "1" else tmp / name

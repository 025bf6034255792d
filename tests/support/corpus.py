"""The real-data corpus beside the repository, `../shared` (third-party exports and the LoCoMo dev
half in `data/`, the design document in `design/`): read in place, never copied into the repository.

A test that reads it is marked `corpus` (or asks for the `shared_data` fixture, which marks it):
on a clone alone it is skipped with `SKIP_REASON`; where the corpus must be present (CI=true, as
.ci/run sets it, or `pytest --require-corpus`) a missing corpus or any skipped corpus test fails
(tests/conftest.py)."""
from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CORPUS = (REPO.parent / "shared").resolve()
DATA = CORPUS / "data"
DESIGN = CORPUS / "design"

SKIP_REASON = (f"needs the real-data corpus ../shared/data (absent at {DATA}; "
               f"put the shared folder beside the repository to run it)")


def present() -> bool:
    """Whether the corpus folders the tests read are there."""
    return DATA.is_dir() and DESIGN.is_dir()


def required(env: dict[str, str], option: bool) -> bool:
    """Whether a corpus test may not be skipped: under CI (CI=true, which CI services and .ci/run
    set) or with `--require-corpus`."""
    return option or env.get("CI", "").strip().lower() in ("true", "1", "yes")

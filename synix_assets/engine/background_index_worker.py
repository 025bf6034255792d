"""The process of engine/background_index.py: told the build and its search indexes, it loads
what writing them needs, waits for the go (every layer stored), then runs the same
`projections.write_search_index` a projection step runs and answers what each did, one JSON
line each, on its own copy of stdout."""
from __future__ import annotations

import sys
from pathlib import Path

from synix_assets.engine import projections
from synix_assets.engine.background_index import GO
from synix_assets.engine.context import BuildContext
from synix_assets.project import ProjectPaths
from synix_resources.process import helper
from synix_resources.search import index  # noqa: F401  (loaded before the go: the slow import)


def _serve(job: dict, answers) -> None:
    """The background process: wait for the go, then sync each index and answer what it did."""
    if sys.stdin.readline().strip() != GO:
        return  # the build stopped before every layer was stored
    paths = ProjectPaths(Path(job["root"]), job["branch"])
    store = paths.open_store()
    try:
        ctx = BuildContext(paths.load_pipeline(), store, None, paths, run_id=job["run_id"])
        for name in job["names"]:
            try:
                result = projections.write_search_index(ctx, name)
                answer = {"name": name, "changed": result.changed, "detail": result.detail,
                          "key": store.get_meta(f"projection:{name}:key")}
            except Exception as exc:  # reported to the build, which writes the index itself
                answer = {"name": name, "error": f"{type(exc).__name__}: {exc}"}
            helper.answer(answers, answer)
    finally:
        store.close()


if __name__ == "__main__":
    _serve(*helper.become_helper())

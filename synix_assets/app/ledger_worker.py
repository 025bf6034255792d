"""The helper process of a build's evidence-ledger feed (app/ledger.py `begin_synthesis`): the
same `feed` the build would run, over the project's own pipeline and store, answering the
ledger's high-water mark (or the one-line error that stopped it) in one JSON line."""
from __future__ import annotations

from pathlib import Path

from synix_assets.app.ledger import open_ledger
from synix_assets.project import ProjectPaths
from synix_assets.sources.evidence import feed
from synix_resources.errors import SynixError
from synix_resources.process import helper


def _serve(job: dict, answers) -> None:
    paths = ProjectPaths(Path(job["root"]), job["branch"])
    try:
        store = paths.open_store()
        try:
            with open_ledger(paths) as ledger:
                report = feed(paths.load_pipeline(), store, ledger)
                helper.answer(answers, {"high_water": ledger.high_water(), "report": report.to_json()})
        finally:
            store.close()
    except (SynixError, OSError) as exc:  # told to the build, which warns and goes on
        helper.answer(answers, {"error": exc.one_line() if isinstance(exc, SynixError) else str(exc)})


if __name__ == "__main__":
    _serve(*helper.become_helper())

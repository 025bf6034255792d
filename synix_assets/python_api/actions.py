"""What a pipeline (main) and a branch can do from Python: the application layer's use cases,
called with the branch's `ProjectPaths` and answered with the objects of results.py. Each method
is one `synix` command with the same name (tests/python_api/test_python_cli_parity.py holds them to the
same results)."""
from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence, overload

from synix_assets.project import ProjectPaths
from synix_assets.python_api.evidence import EvidenceActions
from synix_assets.python_api.memories import MemoryActions
from synix_assets.python_api.reading import Hit, Lineage, Reader, SearchResults
from synix_assets.python_api.results import EvalResult, Plan, SyncReport
from synix_assets.pipeline.records import Record
from synix_resources.errors import EvalError

if TYPE_CHECKING:  # imported where used: reading a memory does not load the build
    from synix_assets.app.run import BuildReport

BENCHMARKS = ("locomo", "longmemeval", "synixbench", "meme")


class Actions(MemoryActions, EvidenceActions, ABC):
    """Mixed into `Pipeline` and `PipelineBranch`; `_paths(action)` gives the branch to act on."""

    @abstractmethod
    def _paths(self, action: str) -> ProjectPaths:
        """The branch an action works on (a pipeline also registers its script project here)."""

    # ---- build ------------------------------------------------------------------------------

    def pack(self, path: str | Path) -> dict[str, Any]:
        """Write the whole project (pipeline, exports, store, search index, evidence ledger,
        agent memories, config) into one portable SQLite file; `synix unpack` makes it a project
        again elsewhere."""
        from synix_assets.app.portable import pack

        return pack(self._paths("pack"), path).to_json()

    def plan(self, *, full: bool = False, batch: bool = False) -> Plan:
        """What `run()` would rebuild and cost (`synix plan`); `full=True` prices rebuilding
        everything. On a branch that reprocesses everything, or costs more than main, a
        CostWarning is issued (§4.8)."""
        from synix_assets.app.plan import make_plan

        paths = self._paths("plan")
        return Plan(make_plan(paths, batch=batch, full=full).to_json(), full=full).warn()

    def sync(self) -> SyncReport:
        """The declared pipeline against the one last synced or built (`synix sync`, §4.4.1)."""
        from synix_assets.app.sync import sync

        return SyncReport(sync(self._paths("sync")))

    def pull(self, source: str | None = None) -> dict[str, Any]:
        """Pull the conversations changed on the services of the api sources (or of `source`)
        into their mirror folders (`synix pull`); the next run builds them."""
        from synix_assets.app.pull import pull_sources

        return pull_sources(self._paths("pull"), source)

    def run(self, step: str | None = None, *, from_: str | None = None, full: bool = False,
            replay: bool = False, batch: bool = False) -> BuildReport:
        """Build (`synix run`): everything that changed; `step` builds that step and what it
        needs; `from_` that step and everything after it; `full` ignores materialization keys;
        `replay` answers LLM calls from the response cache only. Returns the build report
        (`.to_json()` is `synix run --json`); a failed build raises BuildFailed with it."""
        from synix_assets.app.plan import require_exports
        from synix_assets.app.run import run_build

        paths = self._paths("run")
        require_exports(paths.load_pipeline())
        return run_build(paths, select=step, from_layer=from_, full=full, replay=replay, batch=batch)

    # ---- read -------------------------------------------------------------------------------

    def search(self, query: str, *, step: str | Sequence[str] | None = None, mode: str = "fts",
               exact: bool = False, limit: int = 10, since: str | None = None,
               until: str | None = None, leaves: bool = False, period: str | None = None,
               conversation: str | None = None, as_of: str | None = None) -> SearchResults:
        """Search the memory (`synix search`, §4.6): `step` picks the altitude (a step or a
        list of them; unscoped, every step and the transcripts rank together, a record that
        narrowly covers a lower hit returned instead of it, docs/search.md; `.passages`: the
        conversations' own matched messages);
        `mode` fts | semantic | hybrid; `exact` matches the words literally; `leaves` ranks the
        source messages themselves. Filters (§6.1): `since`/`until` bound the record's date
        (YYYY[-MM[-DD]] or an ISO date-time, inclusive); `period` is its period ("2024-03");
        `conversation` keeps the records built from that conversation id. `as_of` (ISO
        date/time): `.memories` holds the agent memories held then; records dated up to then."""
        from synix_assets.app.query import search_view

        paths = self._paths("search")
        if as_of is not None:
            from synix_assets.app.memory.agent import memories_as_of

            memories, when = memories_as_of(paths, query, as_of, limit)
            until = until or when
        layers = [step] if isinstance(step, str) else list(step) if step else None
        view = search_view(paths, query, layers=layers, mode=mode, exact=exact, limit=limit,
                           since=since, until=until, trees=False, leaves=leaves, period=period,
                           conversation=conversation)
        if as_of is not None:
            view.update(memories=memories, as_of=when)
        return SearchResults(view, Reader(paths))

    def get(self, record_id: str) -> Record:
        """One record (`synix get`) with content, metadata, provenance and audit; `.lineage()`."""
        return Reader(self._paths("get")).get(record_id)

    def lineage(self, record_id: str) -> Lineage:
        """The provenance tree of a record down to the source transcripts (`synix lineage`)."""
        return Reader(self._paths("lineage")).lineage(record_id)

    def stats(self) -> dict[str, Any]:
        """Records per step (`synix stats`)."""
        from synix_assets.app.stats import stats

        return stats(self._paths("stats"))

    def status(self) -> dict[str, Any]:
        """Per step: records, stale, blocked, failed, last build (`synix status`)."""
        from synix_assets.app.status import project_status

        return project_status(self._paths("status"))

    @overload
    def runs(self, run_id: None = None, *, limit: int = 20) -> list[dict[str, Any]]: ...

    @overload
    def runs(self, run_id: str, *, limit: int = 20) -> dict[str, Any]: ...

    def runs(self, run_id: str | None = None, *,
             limit: int = 20) -> list[dict[str, Any]] | dict[str, Any]:
        """Recent builds, newest first, or one build's per-step statistics (`synix runs`)."""
        from synix_assets.app.query import runs_view

        view = runs_view(self._paths("runs"), run_id, limit=limit)
        return view["runs"] if run_id is None else view

    def ask(self, question: str, *, offline: bool | None = None, model: str | None = None,
            max_steps: int = 8) -> dict[str, Any]:
        """An answer citing record ids and source conversations (`synix ask`); without a model
        configured (or offline=True) the best evidence, no generated answer."""
        from synix_assets.app.memory import MemoryService
        from synix_assets.serve.ask import ask

        svc = MemoryService(self._paths("ask"))
        try:
            return ask(svc, question, model=model, max_steps=max_steps, offline=offline)
        finally:
            svc.close()

    # ---- measure ----------------------------------------------------------------------------

    def eval(self, benchmark: str = "locomo", *, data: str | Path | None = None,
             conversations: Sequence[str] | None = None, limit: int | None = None,
             modes: Sequence[str] = ("hybrid",), baselines: Sequence[str] = (),
             progress: bool | Callable[[Any], None] = True) -> EvalResult:
        """Measure this pipeline's memory on a benchmark (`synix eval`): locomo and longmemeval
        read `data` (default: the SYNIX_LOCOMO_DATA / SYNIX_LONGMEMEVAL_DATA setting). The run is
        recorded beside `synix eval report`'s. `progress`: True prints the builds and questions
        with an ETA on stderr, as the CLI does; False is silent; a function gets each
        `synix_assets.eval.progress.Progress`."""
        from synix_assets.eval.data import load_locomo, load_longmemeval
        from synix_assets.eval.progress import Printer
        from synix_assets.eval.results import results_path
        from synix_assets.eval.runner import EvalSettings, run_eval
        from synix_resources.settings import settings

        if benchmark not in BENCHMARKS:
            raise EvalError(f"unknown benchmark {benchmark!r}", hint=f"use one of {', '.join(BENCHMARKS)}")
        paths = self._paths("eval")
        if benchmark == "synixbench":
            from synix_assets.eval.synixbench import run_synixbench

            report = run_synixbench(paths, branch=paths.branch, results_db=results_path(paths.state_dir))
            return EvalResult(report, mode=report["mode"])
        if benchmark == "meme":  # generated (seed 7, as `synix eval meme`): no data, modes or baselines
            from synix_assets.eval.meme_run import run_meme, scratch_dir

            say = (lambda line: print(line, file=sys.stderr, flush=True)) if progress is True \
                else (progress or (lambda line: None))
            return EvalResult(dict(run_meme(scratch_dir(paths, 7), progress=say), branch=paths.branch), mode="fts")
        data = data or (settings().locomo_data if benchmark == "locomo" else settings().longmemeval_data)
        if not data:
            env = "SYNIX_LOCOMO_DATA" if benchmark == "locomo" else "SYNIX_LONGMEMEVAL_DATA"
            raise EvalError(f"no {benchmark} data file given",
                            hint=f"pass data='…/{benchmark}.json' or set {env}")
        bench = (load_locomo(data, conversations=conversations, limit=limit) if benchmark == "locomo"
                 else load_longmemeval(data, limit=limit))
        settings_ = EvalSettings(modes=tuple(modes), systems=("memory", *baselines),
                                 qa_mode="hybrid" if "hybrid" in modes else modes[0])
        notify = Printer(lambda line: print(line, file=sys.stderr, flush=True)) if progress is True \
            else (progress or None)
        result = run_eval(bench, project=paths, branch=paths.branch, settings=settings_,
                          results_db=results_path(paths.state_dir), progress=notify)
        return EvalResult(result, mode=settings_.qa_mode)


__all__ = ["Actions", "BENCHMARKS", "Hit"]

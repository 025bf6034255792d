"""The pull sensor: the `api` sources of every branch's pipeline pulled on their schedule.

Each tick (at most every `every` seconds of the most eager api source) pulls each source's
changed conversations into its mirror folder (sources/api.py; an unchanged conversation is never
fetched again, an interrupted pull resumes). It launches no run itself: the mirror is an export
folder, so the exports sensor, which watches it like any other, sees the new files on its next
tick and launches `synix_build_all` for every branch that reads them — one road to a build, with
its partition registration and run keys. A service that cannot be reached is the tick's skip
reason (one line); the next tick tries again.
"""
from __future__ import annotations

import dagster as dg

from synix_assets.sources.pulling import pull_pipeline
from synix_assets.dagster_defs.vocabulary import API_SENSOR
from synix_resources.errors import SynixError


def api_pipelines(graphs) -> list:
    """The branch pipelines with an api source, each mirror folder pulled through one of them."""
    seen, out = set(), []
    for graph in graphs:
        mirrors = {graph.pipeline.resolve(s.path) for s in graph.pipeline.sources.values() if s.kind == "api"}
        if mirrors - seen:
            out.append(graph.pipeline)
            seen |= mirrors
    return out


def api_sensors(graphs, *, running: bool = True) -> list[dg.SensorDefinition]:
    """The pull sensor, when some pipeline has an api source (else none)."""
    pipelines = api_pipelines(graphs)
    if not pipelines:
        return []
    every = min(s.every for p in pipelines for s in p.sources.values() if s.kind == "api")

    @dg.sensor(name=API_SENSOR, minimum_interval_seconds=every,
               default_status=dg.DefaultSensorStatus.RUNNING if running else dg.DefaultSensorStatus.STOPPED,
               description="Pulls the conversations changed on the services of the api sources into "
                           "their mirror folders; the exports sensor builds what it fetched.")
    def pull_sensor(context: dg.SensorEvaluationContext):
        lines = []
        for pipeline in pipelines:
            try:
                pulled = pull_pipeline(pipeline)
            except SynixError as err:  # unreachable, refused, or not the protocol: said, retried next tick
                context.log.warning(err.one_line())
                lines.append(err.one_line())
                continue
            lines += [f"{s['source']}: {s['fetched']} fetched, {s['unchanged']} unchanged"
                      + (" (resumed)" if s["resumed"] else "") for s in pulled["sources"]]
        return dg.SkipReason("; ".join(lines) + " — the exports sensor builds what was fetched")

    return [pull_sensor]

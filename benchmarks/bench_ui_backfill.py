"""A UI backfill of the whole memory group beside `synix run`, on the same project.

Two copies of one project (a generated export of N conversations over 6 months, the fake LLM
provider with SYNIX_FAKE_LATENCY_S per call), both built by `synix run`, then the same
episode-prompt edit in both (every episode, month, the core and both projections to rebuild):

- copy A: `synix run`, timed;
- copy B: a real `dagster dev` (export sensor stopped first, so only the backfill builds), then
  the backfill "Materialize all" on the `memory` group launches — the webserver's
  `launchPartitionBackfill` mutation with the group's assets and every partition of its root
  (`transcripts`), as the UI's dialog sends it after "All" — timed from the mutation to the
  backfill's COMPLETED_SUCCESS, and to the moment its last run ended (the memory current).

Then both stores must hold the same current artifacts. Prints one JSON line.

    python benchmarks/bench_ui_backfill.py [N]        # default 99
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.dagster.live import BIN, DagsterDev, clean_env, edit_episode_prompt, synix  # noqa: E402

from synix_assets.app.init import init_project  # noqa: E402
from synix_assets.dagster_defs.vocabulary import EXPORTS_SENSOR  # noqa: E402

GROUP_ASSETS = ("transcripts", "episodes", "monthly", "core", "memory_index", "synix_context")
def env() -> dict:
    return clean_env(SYNIX_FAKE_LATENCY_S=os.environ.get("SYNIX_FAKE_LATENCY_S", "0.05"))


def run_synix(root: Path, *args: str) -> float:
    t0 = time.monotonic()
    out = subprocess.run([str(BIN / "synix"), "-p", str(root), *args], env=env(), capture_output=True,
                         text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    return time.monotonic() - t0


def current(root: Path) -> dict:
    from synix_resources.store.artifact_store import ArtifactStore

    with ArtifactStore(root / ".synix" / "synix.db") as store:
        return {layer: {k: r.artifact_id for k, r in store.current_index(layer).items()}
                for layer in ("transcripts", "episodes", "monthly", "core")}


def backfill(dev: DagsterDev) -> dict:
    t0 = time.monotonic()
    wall0 = time.time()
    bid = dev.launch_backfill(list(GROUP_ASSETS), dev.partition_keys("transcripts"))
    while time.monotonic() - t0 < 900:
        b = dev.backfill(bid)
        if b["status"] not in ("REQUESTED", "CANCELING"):
            runs = b["runs"]
            ends = [r["endTime"] for r in runs if r["endTime"]]
            starts = [r["startTime"] for r in runs if r["startTime"]]
            return {"backfill_status": b["status"], "backfill_s": round(time.monotonic() - t0, 1),
                    "first_run_start_s": round(min(starts) - wall0, 1) if starts else None,
                    "last_run_end_s": round(max(ends) - wall0, 1) if ends else None,
                    "runs": sorted(r["jobName"] for r in runs)}
        time.sleep(0.5)
    raise SystemExit(f"backfill {bid} not done after 900 s: {dev.output()[-3000:]}")


def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        export = Path(tmp) / "conversations.json"
        subprocess.run([sys.executable, str(REPO / "benchmarks" / "generate_exports.py"), "--n", str(n),
                        "--months", "6", "--out", str(export)], check=True, capture_output=True)
        roots = [init_project(Path(tmp) / name, exports=[export]) for name in ("a", "b")]
        cold = [run_synix(r, "run") for r in roots]
        for r in roots:
            edit_episode_prompt(r)
        cli_s = run_synix(roots[0], "run")
        b = roots[1]
        stop = subprocess.run([str(BIN / "dagster"), "sensor", "stop", EXPORTS_SENSOR], cwd=b, env=env(),
                              capture_output=True, text=True, timeout=300)
        assert stop.returncode == 0, stop.stderr[-2000:]
        dev = DagsterDev(b, env=env()).wait_serving()
        try:
            time.sleep(10)  # the daemon up and the code location loaded
            ui = backfill(dev)
        finally:
            dev.stop()
        same = current(roots[0]) == current(b)
        left = synix(b, "plan", "--json")
        print(json.dumps({"conversations": n, "synix_run_cold_s": [round(c, 1) for c in cold],
                          "synix_run_after_prompt_edit_s": round(cli_s, 1), **ui,
                          "same_artifacts": same,
                          "plan_after_backfill_nothing_to_do": json.loads(left.stdout)["nothing_to_do"]
                          if left.returncode == 0 else left.stderr[-300:]}), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 99)

"""The in-memory store answers as the SQLite store does: the same seeded random sequence of
writes (puts, revivals, adopts, retires, deletes, branches, promotes, meta, failures, runs,
checkpoints) goes to a real SQLite file and to a memory store, and after every step each write's
result and every read on main and on the current branch must be equal (times compared as
present or not, messages with the location replaced)."""
from __future__ import annotations

import dataclasses
import json
import random

import pytest

from synix_resources.store.artifact_store import ArtifactStore
from synix_resources.store.records import Artifact, CurrentRef, Failure, LineageNode, Run

LAYERS, GROUPS, KEYS = ["t", "e"], ["a", "b", "c"], ["k1", "k2", "k3"]
BRANCHES = ["main", "b1", "b2", "main@previous"]


def comparable(x, location: str):
    """A result with creation times reduced to what both stores must agree on."""
    if isinstance(x, Artifact):
        fields = {**dataclasses.asdict(x), "created_at": None, "superseded_at": x.is_current}
        return json.dumps(fields, sort_keys=True, default=str)
    if isinstance(x, CurrentRef):
        return (x.artifact_id, x.materialization_key, x.content_hash)
    if isinstance(x, Failure):
        return (x.run_id, x.layer, x.group_key, x.error)
    if isinstance(x, Run):
        return (x.run_id, x.status, x.dagster_run_id, x.finished_at is None, x.stats, x.branch)
    if isinstance(x, LineageNode):
        return (comparable(x.artifact, location), [comparable(p, location) for p in x.parents])
    if dataclasses.is_dataclass(x):  # BranchInfo, LayerDiff, Checkpoint
        return comparable({k: v for k, v in dataclasses.asdict(x).items() if k != "created_at"},
                          location)
    if isinstance(x, dict):
        return {str(k): comparable(v, location) for k, v in x.items() if k != "last_built"}
    if isinstance(x, (list, tuple, set)):
        items = [comparable(v, location) for v in x]
        return sorted(items, key=repr) if isinstance(x, set) else items
    return x.replace(location, "<store>") if isinstance(x, str) else x


def outcome(store, location, call):
    try:
        return "ok", comparable(call(store), location)
    except Exception as err:  # the error itself is what is compared
        return type(err).__name__, str(err).replace(location, "<store>")


def random_write(rnd: random.Random, ids: list[str]):
    """One write, its arguments drawn now so both stores get the very same call."""
    kind = rnd.choice(["put"] * 6 + ["put_many", "branch", "promote"] * 2 + [
        "adopt", "retire", "delete", "delete_branch", "meta", "failure", "run", "checkpoint"])
    layer, group, key = rnd.choice(LAYERS), rnd.choice(GROUPS), rnd.choice(KEYS)
    parents = rnd.sample(ids, min(len(ids), rnd.randint(0, 2))) if rnd.random() < 0.6 else []
    if kind == "put":
        item = dict(layer=layer, group_key=group, materialization_key=key,
                    content=f"c{rnd.randint(0, 3)}", parents=parents, run_id=rnd.choice([None, "r1"]),
                    metadata=rnd.choice([{}, {"meta.time.created_at": f"2024-0{rnd.randint(1, 3)}"},
                                         {"speaker": rnd.choice("xy"), "n": rnd.randint(0, 2)}]),
                    audit=rnd.choice([None, {"model": "m", "cost_usd": rnd.choice([0, 0.5]),
                                             "input_tokens": 3, "request_id": "q"}]))
        return lambda s: s.put(**item)
    if kind == "put_many":
        items = [dict(layer=rnd.choice(LAYERS), group_key=rnd.choice(GROUPS), content="m",
                      materialization_key=rnd.choice(KEYS), parents=parents[:1])
                 for _ in range(rnd.randint(0, 4))]
        if rnd.random() < 0.2:
            items.append(dict(layer="e", group_key="z", materialization_key="k", content="x",
                              parents=["t-missing"]))
        return lambda s: s.put_many(items)
    if kind == "delete" and ids:
        victim = rnd.choice(ids)
        return lambda s: s.delete([victim, *(a.artifact_id for a in s.descendants(victim))]
                                  if s.find(victim) else [victim])
    name, value = rnd.choice(BRANCHES), rnd.randint(0, 3)
    new_name, parent = rnd.choice(["b1", "b2", "main@previous"]), rnd.choice(["main", "main", "b1"])
    meta_key = rnd.choice(["build:fingerprint", "layer:version:t", "ingest:x"])
    return {
        "adopt": lambda s: s.adopt(layer, group, key),
        "retire": lambda s: s.retire(layer, GROUPS[:value]),
        "delete": lambda s: s.delete([]),
        "branch": lambda s: s.create_branch(new_name, from_branch=parent, info={"n": value}),
        "promote": lambda s: s.promote(name, journal={"n": value} if value else None),
        "delete_branch": lambda s: s.delete_branch(name),
        "meta": lambda s: s.set_meta(meta_key, value) if value else s.delete_meta(meta_key),
        "failure": lambda s: (s.record_failure("r1", layer, group, "boom") if value
                              else s.clear_failure(layer, group)),
        "run": lambda s: (s.start_run("p", ["t"], run_id=f"r{value}", dagster_run_id="d")
                          if value < 2 else s.finish_run("r1", "completed", {"n": value})),
        "checkpoint": lambda s: (s.put_checkpoint("f", "v", value, "fp", {"s": value}) if value
                                 else s.clear_checkpoints("f")),
    }[kind]


def reads(ids: list[str]):
    calls = [lambda s: s.layers(), lambda s: s.pointers(), lambda s: s.unreferenced(),
             lambda s: s.branches(), lambda s: s.failures(), lambda s: s.list_runs(),
             lambda s: s.checkpoints("f", "v"), lambda s: s.get_meta("build:fingerprint"),
             lambda s: s.get_meta("promote:pending"), lambda s: s.ordered_ids(LAYERS),
             lambda s: s.ordered_ids(["t"], newest_first=False, since="2024-02"),
             lambda s: s.ordered_ids(["t"], meta={"speaker": "x", "n": 1}),
             lambda s: s.built_in_run("r1"), lambda s: s.keys_built_in_run("r1"),
             lambda s: s.current_costs("t"), lambda s: s.diff_branches("main", "b1")]
    for layer in LAYERS:
        calls += [lambda s, l=layer: s.current_index(l), lambda s, l=layer: s.list_layer(l, True),
                  lambda s, l=layer: s.list_layer(l), lambda s, l=layer: s.outlines(l),
                  lambda s, l=layer: s.current_count(l)]
        calls += [lambda s, l=layer, g=group: (s.history(l, g), s.current(l, g))
                  for group in GROUPS]
    for aid in ids[-5:]:
        calls += [lambda s, a=aid: (s.get(a), s.lineage(a, 2), s.leaves(a), s.descendants(a)),
                  lambda s, a=aid: (s.find(a[:8]), s.find(a[-10:]), s.parents(a))]
    return calls


@pytest.mark.parametrize("seed", [1, 2])
def test_memory_store_answers_every_call_as_the_sqlite_store_does(tmp_path, seed):
    rnd = random.Random(seed)
    locations = [str(tmp_path / "synix.db"), "memory:"]
    stores = [ArtifactStore(location) for location in locations]
    ids: list[str] = []
    for step in range(150):
        write, branch = random_write(rnd, ids), rnd.choice(BRANCHES)
        results = [outcome(s.on_branch(branch), loc, write) for s, loc in zip(stores, locations)]
        assert results[0] == results[1], (step, branch)
        ids = [a.artifact_id for layer in LAYERS for a in stores[0].list_layer(layer, True)]
        for view in {"main", branch}:
            for n, call in enumerate(reads(ids)):
                answers = [outcome(s.on_branch(view), loc, call)
                           for s, loc in zip(stores, locations)]
                assert answers[0] == answers[1], (step, view, n)
    for s in stores:
        s.close()

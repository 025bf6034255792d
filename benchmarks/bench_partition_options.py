"""How big Dagster's partition space gets for the two ways of keeping months exact (docs/dagster.md):
conversation layers partitioned per conversation (what Synix uses), or month × conversation
(`MultiPartitionsDefinition`) so a month maps to its own conversations only.

    python benchmarks/bench_partition_options.py 5000 36
"""
from __future__ import annotations

import json
import sys
import time
import warnings

import dagster as dg


def main(conversations: int, months: int) -> None:
    warnings.simplefilter("ignore")
    instance = dg.DagsterInstance.ephemeral()
    convs = [f"conv-{i:06d}" for i in range(conversations)]
    periods = [f"{2020 + m // 12}-{m % 12 + 1:02d}" for m in range(months)]
    instance.add_dynamic_partitions("conversations", convs)
    instance.add_dynamic_partitions("months", periods)
    single = dg.DynamicPartitionsDefinition(name="conversations")
    multi = dg.MultiPartitionsDefinition({"month": dg.DynamicPartitionsDefinition(name="months"),
                                          "conversation": dg.DynamicPartitionsDefinition(name="conversations")})
    out = {}
    for name, part in (("per_conversation", single), ("month_x_conversation", multi)):
        t0 = time.perf_counter()
        keys = part.get_partition_keys(dynamic_partitions_store=instance)
        out[name] = {"partition_keys": len(keys), "that_can_exist": conversations,
                     "enumerate_s": round(time.perf_counter() - t0, 3)}
    print(json.dumps(out))


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]] or [5000, 36]
    main(*args)

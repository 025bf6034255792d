"""Rich rendering of the report dicts. Colour by altitude: 0 dim, 1 blue, 2 green, 3 gold.

Rich's Console drops colour for NO_COLOR and for pipes; progress bars are only drawn on a TTY.
The parts: `text` (terminal safety), `output` (consoles, colours, numbers), `progress`, `build`
(run, plan, status) and `read` (search, lineage, get, runs, ask). Their public names are this
package's, so callers write `render.safe(...)`, `render.console()`.
"""
from __future__ import annotations

from synix_assets.cli.render.text import markup, plain, safe
from synix_assets.cli.render.output import (LEVEL_STYLE, console, error_line, level_style,
                                            make_table, money, num)
from synix_assets.cli.render.progress import BarProgress, PlainProgress
from synix_assets.cli.render.build import (EXTRACTIVE_NOTE, failures, plan_table, provider_line,
                                           run_summary, skipped_inputs, stats_table, status_table)
from synix_assets.cli.render.read import (TREE_CHILDREN, add_tree, artifact_details, ask_result,
                                          lineage_tree, run_details, runs_table, search_results)

__all__ = ["markup", "plain", "safe",
           "LEVEL_STYLE", "console", "error_line", "level_style", "make_table", "money", "num",
           "BarProgress", "PlainProgress",
           "EXTRACTIVE_NOTE", "failures", "plan_table", "provider_line", "run_summary",
           "skipped_inputs", "stats_table", "status_table",
           "TREE_CHILDREN", "add_tree", "artifact_details", "ask_result", "lineage_tree",
           "run_details", "runs_table", "search_results"]

"""What `dg scaffold defs synix_assets.component.SynixMemoryComponent <folder>` writes: the
component's defs.yaml (every attribute explained), a starter pipeline.py (the `monthly` template
`synix init` uses) and an exports/ folder for the chat exports, kept out of git with the state."""
from __future__ import annotations

from pathlib import Path

import dagster as dg

DEFS_YAML = """\
type: {type_name}

attributes:
  # The memory's pipeline (episodes, monthly rollups, core memory, search index), relative to
  # this file; drop chat exports (ChatGPT, Claude, Claude Code) into exports/ next to it.
  pipeline: pipeline.py
  # Where the memory keeps its state (.synix/: store, LLM cache); default: the pipeline's folder.
  # project: .
  # The artifact store on PostgreSQL instead of SQLite in .synix/synix.db:
  # store: postgresql://USER@HOST/DATABASE
  # The model; default: anthropic when ANTHROPIC_API_KEY is set, else the offline extractive
  # summariser (SYNIX_LLM_PROVIDER / SYNIX_LLM_MODEL, when set, win).
  # llm_provider: anthropic
  # llm_model: claude-sonnet-4-6
"""

EXPORTS_GITIGNORE = """\
# Chat exports (ChatGPT, Claude, Claude Code; .json, .jsonl, .zip) go in this folder.
# They are private: git keeps the folder, not them.
*
!.gitignore
"""

# the memory's state: the store, the LLM cache, the build lock (never in git)
STATE_GITIGNORE = ".synix/\n"


class MemoryScaffolder(dg.Scaffolder):
    def scaffold(self, request: dg.ScaffoldRequest) -> None:
        from synix_assets.app.init import template_text

        folder = Path(request.target_path)
        folder.mkdir(parents=True, exist_ok=True)
        if request.scaffold_format == "yaml" and not request.append:
            (folder / "defs.yaml").write_text(DEFS_YAML.format(type_name=request.type_name),
                                              encoding="utf-8")
        else:  # component.py, or a further document in an existing defs.yaml: Dagster's own
            dg.scaffold_component(request, {"pipeline": "pipeline.py"})
        _write_new(folder / "pipeline.py", template_text("monthly"))
        _write_new(folder / ".gitignore", STATE_GITIGNORE)
        (folder / "exports").mkdir(exist_ok=True)
        _write_new(folder / "exports" / ".gitignore", EXPORTS_GITIGNORE)


def _write_new(path: Path, text: str) -> None:
    """A user's own file is never replaced (scaffolding into a folder that has one)."""
    if not path.exists():
        path.write_text(text, encoding="utf-8")

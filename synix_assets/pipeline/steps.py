"""Declarations a pipeline is made of: sources, steps (layers) and projections."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal

from synix_assets.pipeline.prompts import PromptFunction, TemplateFile

StepKind = Literal["merge", "transform", "aggregate", "fold", "agent", "window_fold", "loops", "identity", "facts"]
# The tools an agent step's model may call (Syke's): reads to orient, the five writes of the
# memory-ops log, and write_map (the map document the step stores).
SYKE_READ_TOOLS = ("get_map", "search_memories", "get_memory", "follow_links", "get_memory_history")
SYKE_WRITE_TOOLS = ("create_memory", "update_memory", "supersede_memory", "deactivate_memory",
                    "create_link", "write_map")
SYKE_TOOLS = SYKE_READ_TOOLS + SYKE_WRITE_TOOLS
PERIODS = ("month", "week", "quarter")
FORMATS = ("auto", "chatgpt", "claude", "claude-code", "codex-cli", "gemini-cli", "openwebui", "copilot-chat",
           "cursor", "notes")
# The design's names for the formats (§3.4 `meta.source.type`), accepted wherever a format is named,
# and the names people give them (Cursor sessions arrive as SpecStory Markdown; a vault of notes).
FORMAT_ALIASES = {**{f"{name}-export": name for name in FORMATS if name != "auto"},
                  "specstory": "cursor", "copilot": "copilot-chat", "open-webui": "openwebui",
                  "obsidian": "notes", "markdown": "notes", "codex": "codex-cli", "gemini": "gemini-cli"}
# `stream` is the design's name (§3.1) for what the live inbox is; `api`: pulled from a service
SOURCE_KINDS = ("exports", "live", "stream", "api")
API_SERVICES = ("openwebui",)  # the services an api source can pull from (sources/api.py)
API_EVERY_S = 900  # an api source's default pull interval (seconds)
API_MIRROR = Path(".synix") / "api"  # an api source's default mirror folder: .synix/api/<source>
LIVE_INBOX = Path(".synix") / "live" / "inbox.db"  # a live source's default inbox
PII_MODES = (None, "flag", "detect", "redact")
FUZZY_THRESHOLD = 0.8  # merge(dedupe="fuzzy"): the share of shingles that makes two conversations one


@dataclass
class Source:
    name: str
    path: Path
    format: str = "auto"
    kind: str = "exports"  # exports: files of a folder; live: the sessions of a live inbox
    window: int = 0  # live only: >0 keeps a working window of that many turns (synapse)
    url: str = ""  # api only: the service's base URL
    every: int = 0  # api only: seconds between pulls of the pull sensor


@dataclass
class Step:
    name: str
    kind: StepKind
    from_: tuple[str, ...]
    prompt: PromptFunction | TemplateFile | None = None
    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    system: str | None = None
    description: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    # transform only: called on each output before it is stored (pipeline/validators.py); kept
    # out of `config` (a function is no data) and versioned by its source in `version_inputs`
    validate: Callable[..., Any] | None = None

    @property
    def upstream(self) -> str:
        """The single input of a transform, aggregate or fold."""
        return self.from_[0]


@dataclass
class SearchIndexProjection:
    name: str
    from_: tuple[str, ...]
    embeddings: bool = False
    kind: str = "search_index"


@dataclass
class ContextDocProjection:
    name: str
    from_: str
    path: Path
    budget_tokens: int = 4000
    kind: str = "context_doc"


Projection = SearchIndexProjection | ContextDocProjection

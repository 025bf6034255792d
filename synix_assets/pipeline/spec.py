"""The pipeline a user's `pipeline.py` declares, as data (`PipelineSpec`; the `Pipeline` that
file imports from synix_assets.pipeline.api is this class plus `.branch()`).

    pipeline = Pipeline("personal-memory", agent="sam")
    pipeline.source("exports", path="exports")
    pipeline.merge("transcripts", from_=["exports"])
    pipeline.transform("episodes", from_="transcripts", prompt=episode_summary)
    pipeline.aggregate("monthly", from_="episodes", period="month", prompt=monthly_rollup)
    pipeline.fold("core", from_="monthly", prompt=core_memory)
    pipeline.search_index("memory-index", from_=["episodes", "monthly", "core"])
    pipeline.context_doc("context", from_="core", path="context.md", budget_tokens=4000)

The design's spellings work too: `source(..., file="chatgpt.json", format="chatgpt-export")`,
`merge(..., dedupe="artifact_id")`, `artifact(name, from_=..., surface="search"|"projection")`
(or its earlier name `output(...)`),
and a transform, aggregate or fold that reads a source directly (the source's conversations
become the layer `<source>-conversations`, declared for it).

Relative paths resolve against `base_dir` (the folder of the pipeline file), never the
current working directory.
"""
from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Self, Sequence
from urllib.parse import urlsplit

from synix_assets.pipeline import file_reads, validation, validators
from synix_assets.pipeline.fact_rules import RULES_VERSION, parse_rules
from synix_assets.pipeline.prompts import PromptFunction, TemplateFile, prompt_identity
from synix_assets.pipeline.steps import (API_EVERY_S, API_MIRROR, API_SERVICES, FORMAT_ALIASES, FORMATS, FUZZY_THRESHOLD, LIVE_INBOX, PERIODS, SOURCE_KINDS, PII_MODES, SYKE_TOOLS, ContextDocProjection,
                                         Projection, SearchIndexProjection, Source, Step)
from synix_assets.pipeline.toml_io import pipeline_from_toml, pipeline_to_toml
from synix_resources.errors import InvalidTime, PipelineDefinitionError
from synix_resources.fingerprints import step_version
from synix_resources.names import check_layer, check_project
from synix_resources.values import as_utc, instant, utc_text

# A projection's `on_update` hook: a function given one dict, or the URL a JSON POST goes to.
OnUpdate = Callable[[dict[str, Any]], Any] | str


# What the engine, compiler and doors ask of a spec (order, levels, versions, paths), not what a
# script declares or does: `synix.Pipeline` keeps them out of help() and dir().
ENGINE_METHODS = frozenset({"layer_order", "level", "partitioning", "downstream", "upstream",
                            "llm_settings", "version_inputs", "version", "resolve"})


class PipelineSpec:
    def __init__(self, name: str, *, agent: str = "", description: str = "",
                 model: str | None = None, temperature: float = 0.3, max_tokens: int = 1024,
                 base_dir: str | Path | None = None, created_at: str | datetime | None = None):
        """`created_at`: when the pipeline was created (design §3.1), an ISO 8601 date or
        date-time (or a datetime), kept as UTC `YYYY-MM-DDTHH:MM:SSZ`; `synix init` writes it
        into the pipeline.py it generates. It describes the pipeline only: no step version or
        key reads it, so adding or changing it rebuilds nothing."""
        self.name = check_project(name)
        self.agent = agent
        self.description = description
        self.created_at = _created_at(created_at)
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.base_dir = Path(base_dir).resolve() if base_dir else None
        self.sources: dict[str, Source] = {}
        self.steps: dict[str, Step] = {}
        self.projections: dict[str, Projection] = {}
        # layers declared for a step that reads a source directly: layer → source
        self.implicit: dict[str, str] = {}
        # projection → its `on_update` hook (a callable or an http(s) URL). Kept beside the
        # projections, not in them: a hook changes no output, so nothing that versions or
        # compares projections (build fingerprint, sync, branch diff) sees it.
        self.on_update: dict[str, OnUpdate] = {}

    # ---- declarations -------------------------------------------------------------------
    def source(self, name: str, *, path: str | Path | None = None, file: str | Path | None = None,
               format: str = "auto", kind: str = "exports", window: int = 0, url: str | None = None,
               every: int = API_EVERY_S) -> Source:
        """`kind="exports"`: the export files in folder `path`, or the one export `file`;
        `kind="live"`: the closed sessions of the project's live inbox (`path` defaults to
        .synix/live/inbox.db; docs/live.md). `format`: auto, chatgpt, claude, claude-code,
        codex-cli, gemini-cli, openwebui, copilot-chat, cursor (SpecStory Markdown), notes (a
        Markdown/text notes folder, e.g. an Obsidian vault), or the aliases in `FORMAT_ALIASES`
        (the design's chatgpt-export, claude-export, claude-code-export…). `window` (live only):
        keep the last `window` turns of each session verbatim and fold older ones into a rolling
        summary, with open loops and identity facts in the brief's Tier 1 (the synapse template).
        `kind="stream"`: the design's name (§3.1) for the same live inbox (kept as `live`).
        `kind="api"`: conversations pulled from the service at `url` (format "openwebui": an Open
        WebUI server) every `every` seconds by the pull sensor, into the mirror folder `path`
        (default .synix/api/<name>) the build reads like an export folder (sources/api.py)."""
        self._check_new_name(name)
        if window and (kind != "live" or not isinstance(window, int) or window < 2):
            raise PipelineDefinitionError(f"source '{name}': window={window!r} needs kind=\"live\" and "
                                          "a whole number of turns of at least 2", hint="e.g. window=12")
        if file is not None:
            if path is not None:
                raise PipelineDefinitionError(f"source '{name}': give path= (a folder) or file= (one export), not both")
            path = file
        format = FORMAT_ALIASES.get(format, format)
        if kind not in SOURCE_KINDS:
            raise PipelineDefinitionError(f"source '{name}': unknown kind {kind!r}",
                                          hint=f"use one of {', '.join(SOURCE_KINDS)}")
        if kind == "stream":  # the design's word for a live inbox: one thing, one name in the spec
            kind = "live"
        if kind == "api":
            return self._api_source(name, path, format, url, every)
        if url is not None:
            raise PipelineDefinitionError(f"source '{name}': url= is for kind=\"api\" only",
                                          hint='add kind="api", or remove url=')
        if kind == "live":
            src = Source(name, Path(path or LIVE_INBOX).expanduser(), "live", "live", window)
            self.sources[name] = src
            return src
        if path is None:
            raise PipelineDefinitionError(f"source '{name}': no path",
                                          hint='give the export folder, e.g. path="exports"')
        if format not in FORMATS:
            raise PipelineDefinitionError(
                f"source '{name}': unknown format {format!r}", hint=f"use one of {', '.join(FORMATS)}")
        src = Source(name, Path(path).expanduser(), format)
        self.sources[name] = src
        return src

    def _api_source(self, name: str, path: str | Path | None, format: str, url: str | None,
                    every: int) -> Source:
        service = "openwebui" if format == "auto" else format
        if service not in API_SERVICES:
            raise PipelineDefinitionError(f"source '{name}': kind=\"api\" cannot pull format {format!r}",
                                          hint=f"use format= one of {', '.join(API_SERVICES)}")
        parts = urlsplit(url or "")
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise PipelineDefinitionError(f"source '{name}': kind=\"api\" needs url= the service's http(s) address",
                                          hint='e.g. url="http://localhost:3000"')
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise PipelineDefinitionError(f"source '{name}': every={every!r} must be a whole number of seconds ≥ 1",
                                          hint=f"e.g. every={API_EVERY_S}")
        src = Source(name, Path(path or API_MIRROR / name).expanduser(), service, "api", url=url or "",
                     every=every)
        self.sources[name] = src
        return src

    def merge(self, name: str, *, from_: Sequence[str], dedupe: str = "metadata_match",
              fields: Sequence[str] = ("conversation_id",), conflict: str = "prefer_latest",
              pii: str | None = None, description: str = "", threshold: float | None = None) -> Step:
        """`dedupe="fuzzy"`: conversations matched by id as with "metadata_match", and also
        near-duplicates under different ids (the same chat exported twice with an edit, or by two
        tools) merged when at least `threshold` (default 0.8) of the shorter one's 5-word
        shingles are in the other (synix_assets/sources/fuzzy.py); the transcript lists the ones
        merged into it (`meta.custom.duplicates`)."""
        if isinstance(from_, str):
            raise PipelineDefinitionError(
                f"step '{name}' (merge): from_ must be a list of sources or layers",
                hint=f'write from_=["{from_}"]')
        dedupe = {"artifact_id": "content"}.get(dedupe, dedupe)  # the design's name for it
        if dedupe not in ("content", "metadata_match", "fuzzy"):
            raise PipelineDefinitionError(f"step '{name}' (merge): unknown dedupe {dedupe!r}",
                                          hint='use "artifact_id" (exact content), "metadata_match" or "fuzzy"')
        if conflict not in ("prefer_latest", "prefer_first", "keep_all"):
            raise PipelineDefinitionError(f"step '{name}' (merge): unknown conflict {conflict!r}",
                                          hint='use "prefer_latest", "prefer_first" or "keep_all"')
        config: dict[str, Any] = {"dedupe": dedupe, "fields": list(fields), "conflict": conflict,
                                  "pii": _pii(name, pii)}
        if threshold is not None and dedupe != "fuzzy":
            raise PipelineDefinitionError(f"step '{name}' (merge): threshold= is for dedupe=\"fuzzy\" only",
                                          hint='add dedupe="fuzzy", or remove threshold=')
        if dedupe == "fuzzy":  # only here, so the config (and version) of every other merge is as before
            threshold = FUZZY_THRESHOLD if threshold is None else threshold
            if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 < threshold <= 1:
                raise PipelineDefinitionError(f"step '{name}' (merge): threshold={threshold!r} must be a "
                                              "number above 0 and at most 1", hint="e.g. threshold=0.8")
            config["threshold"] = float(threshold)
        return self._add(Step(name, "merge", tuple(from_), description=description, config=config))

    def transform(self, name: str, *, from_: str, prompt: PromptFunction | TemplateFile,
                  model: str | None = None, temperature: float | None = None,
                  max_tokens: int | None = None, system: str | None = None,
                  pii: str | None = None, description: str = "",
                  validate: Callable[..., Any] | None = None) -> Step:
        """One output record per input record. `validate`: called on each output (a `Record`)
        before it is stored; None/True keeps it, `Flag("why")` keeps it marked, False or a reason
        (a str) refuses it — the partition is recorded as failed and retried by the next build,
        while the layers above build from what is there (pipeline/validators.py, design §10.2).
        The validator's source is part of the step version: changing it rebuilds the layer."""
        if validate is not None and not callable(validate):
            raise PipelineDefinitionError(
                f"step '{name}' (transform): validate={validate!r} is not a function",
                hint="pass a function taking the output Record, e.g. validate=is_valid_summary")
        step = Step(name, "transform", self._reads(name, "transform", from_), prompt, model,
                    temperature, max_tokens, system, description, {"pii": _pii(name, pii)},
                    validate=validate)
        if validate is not None:
            validators.identity(validate)  # a validator without readable source fails here, not mid-build
        return self._add(step)

    def aggregate(self, name: str, *, from_: str, prompt: PromptFunction | TemplateFile,
                  period: str | None = None, topics: Sequence[str] | str | None = None,
                  topic_limit: int = 12, model: str | None = None,
                  temperature: float | None = None, max_tokens: int | None = None,
                  system: str | None = None, pii: str | None = None, description: str = "") -> Step:
        if (period is None) == (topics is None):
            raise PipelineDefinitionError(
                f"step '{name}' (aggregate): give exactly one of period= or topics=",
                hint='e.g. period="month" or topics=["career", "health"]')
        if period is not None and period not in PERIODS:
            raise PipelineDefinitionError(f"step '{name}' (aggregate): unknown period {period!r}",
                                          hint=f"use one of {', '.join(PERIODS)}")
        if isinstance(topics, str) and topics != "auto":
            raise PipelineDefinitionError(f"step '{name}' (aggregate): topics must be a list or \"auto\"",
                                          hint=f'write topics=["{topics}"]')
        if topics is not None and not isinstance(topics, str) and not list(topics):
            raise PipelineDefinitionError(f"step '{name}' (aggregate): topics list is empty",
                                          hint='name at least one topic or use topics="auto"')
        config = {"period": period, "topics": topics if isinstance(topics, str) or topics is None
                  else list(topics), "topic_limit": topic_limit, "pii": _pii(name, pii)}
        return self._add(Step(name, "aggregate", self._reads(name, "aggregate", from_), prompt, model,
                              temperature, max_tokens, system, description, config))

    def fold(self, name: str, *, from_: str, prompt: PromptFunction | TemplateFile,
             order_key: str = "group_key", checkpoint_every: int = 6, max_state_tokens: int = 8000,
             model: str | None = None, temperature: float | None = None,
             max_tokens: int | None = None, system: str | None = None,
             pii: str | None = None, description: str = "") -> Step:
        if checkpoint_every < 1:
            raise PipelineDefinitionError(f"step '{name}' (fold): checkpoint_every must be ≥ 1")
        if max_state_tokens < 100:
            raise PipelineDefinitionError(f"step '{name}' (fold): max_state_tokens must be ≥ 100")
        config = {"order_key": order_key, "checkpoint_every": checkpoint_every,
                  "max_state_tokens": max_state_tokens, "pii": _pii(name, pii)}
        return self._add(Step(name, "fold", self._reads(name, "fold", from_), prompt, model,
                              temperature, max_tokens, system, description, config))

    def agent_step(self, name: str, *, from_: str, prompt: PromptFunction | TemplateFile,
              tools: Sequence[str] | str = "syke", max_turns: int = 10, budget_tokens: int = 60_000,
              batch_size: int = 10, model: str | None = None, temperature: float | None = None,
              max_tokens: int | None = None, system: str | None = None,
              description: str = "") -> Step:
        """An LLM with tools (Syke's synthesis loop) over the records of `from_`: each batch of
        new records (`batch_size`) is one loop of at most `max_turns` model turns and
        `budget_tokens` tokens, in which the model orients on the map, writes agent memories
        and links (the branch's memory-ops log) and rewrites the map. docs/templates.md."""
        chosen = list(SYKE_TOOLS) if tools == "syke" else list(tools)
        unknown = [t for t in chosen if t not in SYKE_TOOLS] if not isinstance(tools, str) or \
            tools == "syke" else [tools]
        if unknown or not chosen:
            raise PipelineDefinitionError(f"step '{name}' (agent): unknown tools {unknown or chosen}",
                                          hint=f'use tools="syke" or a list of {", ".join(SYKE_TOOLS)}')
        for what, value, least in (("max_turns", max_turns, 1), ("budget_tokens", budget_tokens, 1000),
                                   ("batch_size", batch_size, 1)):
            if not isinstance(value, int) or value < least:
                raise PipelineDefinitionError(f"step '{name}' (agent): {what} must be an integer ≥ {least}")
        config = {"tools": chosen, "max_turns": max_turns, "budget_tokens": budget_tokens,
                  "batch_size": batch_size}
        return self._add(Step(name, "agent", self._reads(name, "agent", from_), prompt, model,
                              temperature, max_tokens, system, description, config))

    def window_fold(self, name: str, *, from_: str, prompt: PromptFunction | TemplateFile,
                    window: int = 12, model: str | None = None, max_tokens: int | None = None,
                    description: str = "") -> Step:
        """The Synapse rolling summary: per conversation, the last `window` turns stay verbatim
        and each older turn is folded into the summary exactly once (docs/templates.md)."""
        if not isinstance(window, int) or window < 2:
            raise PipelineDefinitionError(f"step '{name}' (window_fold): window must be an integer ≥ 2")
        return self._add(Step(name, "window_fold", self._reads(name, "window_fold", from_), prompt, model,
                              None, max_tokens, None, description, {"window": window}))

    def open_loops(self, name: str, *, from_: str, prompt: PromptFunction | TemplateFile,
                   model: str | None = None, max_tokens: int | None = None, description: str = "") -> Step:
        """Open loops (commitments, todos, questions; open / reinforced / completed, with their
        evidence turns) and the facts each turn states, one call per conversation (rules offline)."""
        return self._add(Step(name, "loops", self._reads(name, "loops", from_), prompt, model, None,
                              max_tokens, None, description, {}))

    def identity_facts(self, name: str, *, from_: str, description: str = "") -> Step:
        """Identity facts replayed from the readings of an `open_loops` layer (no call)."""
        return self._add(Step(name, "identity", self._reads(name, "identity", from_),
                              description=description))

    def facts(self, name: str, *, from_: str, prompt: PromptFunction | TemplateFile,
              implies: Sequence[str] | None = None, model: str | None = None,
              max_tokens: int | None = None, description: str = "") -> Step:
        """Temporal facts about entities (the user, people, projects, places, tools), each valid
        from the turn that states it until a later turn contradicts it (invalidated, never
        deleted), citing its turns; one call per conversation (rules offline). `implies`: declared
        rules "attr=value -> attr=value" (e.g. "employer=Acme -> office=Lisbon"): the implied
        fact holds exactly while its premise does (docs/templates.md, "Temporal facts")."""
        parse_rules(name, implies)
        config = {"rules": RULES_VERSION, **({"implies": list(implies)} if implies else {})}
        return self._add(Step(name, "facts", self._reads(name, "facts", from_), prompt, model, None,
                              max_tokens, None, description, config))

    def search_index(self, name: str, *, from_: Sequence[str], embeddings: bool = False,
                     on_update: OnUpdate | None = None) -> SearchIndexProjection:
        """`embeddings=True` also computes vectors for semantic/hybrid search (needs the
        `synix[embeddings]` extra; without it search falls back to full text with a notice).
        `on_update`: called (a callable) or POSTed to (an http(s) URL) after a build changed
        the index, with what changed (docs/architecture.md, "Projection hooks")."""
        self._check_new_name(name)
        layers = (from_,) if isinstance(from_, str) else tuple(from_)
        proj = SearchIndexProjection(name, layers, embeddings)
        self._set_hook(name, on_update)
        self.projections[name] = proj
        return proj

    def context_doc(self, name: str, *, from_: str, path: str | Path = "context.md",
                    budget_tokens: int = 4000, on_update: OnUpdate | None = None) -> ContextDocProjection:
        """`on_update`: as for search_index, after a build rewrote the document."""
        self._check_new_name(name)
        if not isinstance(from_, str):
            raise PipelineDefinitionError(f"projection '{name}' (context_doc): from_ must name one layer")
        if budget_tokens < 50:
            raise PipelineDefinitionError(f"projection '{name}' (context_doc): budget_tokens must be ≥ 50")
        proj = ContextDocProjection(name, from_, Path(path), budget_tokens)
        self._set_hook(name, on_update)
        self.projections[name] = proj
        return proj

    def artifact(self, name: str, *, from_: str | Sequence[str], surface: str,
                 **options: Any) -> Projection:
        """The design's spelling of a projection: `surface="search"` is a search index over the
        layers of `from_` (options: embeddings=), `surface="projection"` the context document
        of one layer (options: path= (default `<name>.md`), budget_tokens=)."""
        if surface == "search":
            return self.search_index(name, from_=from_, **options)
        if surface == "projection":
            options.setdefault("path", f"{name}.md")
            return self.context_doc(name, from_=from_, **options)  # type: ignore[arg-type]
        raise PipelineDefinitionError(f"artifact '{name}': unknown surface {surface!r}",
                                      hint='use surface="search" or surface="projection"')

    def output(self, name: str, *, from_: str | Sequence[str], surface: str, **options: Any) -> Projection:
        """The earlier design's (001, "Synthex") name for `artifact()`: `surface="projection"` is
        a context document, `surface="search"` a search index; same options, same projection."""
        return self.artifact(name, from_=from_, surface=surface, **options)

    # ---- derived views ------------------------------------------------------------------
    def validate(self) -> Self:
        for step in self.steps.values():  # template("x.txt") called where no file name was known
            if isinstance(step.prompt, TemplateFile) and not step.prompt.path.is_absolute() \
                    and self.base_dir is not None:
                step.prompt = TemplateFile(self.resolve(step.prompt.path))
        validation.validate(self)
        return self

    def resolve(self, path: Path) -> Path:
        if path.is_absolute() or self.base_dir is None:
            return path
        return (self.base_dir / path).resolve()

    def layer_order(self) -> list[str]:
        return validation.topological_order(self)

    def level(self, layer: str) -> int:
        step = self.steps[layer]
        if step.kind == "merge":
            ups = [self.level(u) for u in step.from_ if u in self.steps]
            return max(ups) if ups else 0
        return self.level(step.upstream) + 1

    def partitioning(self, layer: str) -> str:
        """'conversation', 'period', 'topic' or 'single': how a layer's artifacts are grouped."""
        step = self.steps[layer]
        if step.kind == "merge":
            ups = [self.partitioning(u) for u in step.from_ if u in self.steps]
            return ups[0] if ups else "conversation"
        if step.kind == "transform":
            return self.partitioning(step.upstream)
        if step.kind == "aggregate":
            return "period" if step.config["period"] else "topic"
        return "single"  # agent, window_fold, loops, identity, facts: one asset building every record

    def downstream(self, layer: str) -> list[str]:
        out = [s.name for s in self.steps.values() if layer in s.from_]
        for name in list(out):
            out.extend(x for x in self.downstream(name) if x not in out)
        return out

    def upstream(self, layer: str) -> set[str]:
        """Every layer `layer` reads from, directly or through other layers."""
        out: set[str] = set()
        stack = [layer]
        while stack:
            for up in self.steps[stack.pop()].from_:
                if up in self.steps and up not in out:
                    out.add(up)
                    stack.append(up)
        return out

    def llm_settings(self, step: Step) -> dict[str, Any]:
        return {"model": step.model or self.model,
                "temperature": self.temperature if step.temperature is None else step.temperature,
                "max_tokens": step.max_tokens or self.max_tokens, "system": step.system}

    def version_inputs(self, layer: str, llm_identity: str = "") -> dict[str, Any]:
        """What a step's version is hashed from: its type, prompt identity, model settings (+
        provider) and config (+ the layers it reads). Pure; the asset-graph snapshot records it."""
        step = self.steps[layer]
        settings = dict(self.llm_settings(step), provider=llm_identity)
        config = {k: v for k, v in step.config.items()}
        config["from"] = list(step.from_)
        if step.validate is not None:  # only then, so every other step keeps its version
            config["validate"] = validators.identity(step.validate)
        return {"type": step.kind, "prompt": prompt_identity(step.prompt), "model": settings,
                "config": config}

    def version(self, layer: str, llm_identity: str = "") -> str:
        """Step version: the hash of `version_inputs`."""
        inputs = self.version_inputs(layer, llm_identity)
        return step_version(inputs["type"], inputs["prompt"], inputs["model"], inputs["config"])

    # ---- sharing --------------------------------------------------------------------------
    def to_toml(self, path: str | Path | None = None) -> str:
        """The pipeline as TOML (prompts by reference); with `path`, also written there (a
        relative path resolves next to the file that declares the pipeline)."""
        text = pipeline_to_toml(self)
        if path is not None:
            target = self.resolve(Path(path).expanduser())
            target.write_text(text, encoding="utf-8")
        return text

    @classmethod
    def from_toml(cls, source: str | Path, *, base_dir: str | Path | None = None,
                  namespace: dict[str, Any] | None = None) -> Self:
        """A pipeline of this class read from TOML: `source` is a file's path (relative: next to
        the calling file) or the TOML text itself (text has line breaks, a path never). Prompts
        are looked up in `namespace` (default: the caller's globals), then imported."""
        caller = sys._getframe(1).f_globals
        text = str(source)
        if isinstance(source, Path) or "\n" not in text:
            file = Path(text).expanduser()
            if not file.is_absolute() and caller.get("__file__"):
                file = Path(caller["__file__"]).resolve().parent / file
            try:
                text = file.read_text(encoding="utf-8")
                file_reads.note(file)  # a pipeline file declared from it loads again once it changes
            except OSError as exc:
                raise PipelineDefinitionError(f"pipeline TOML {file} cannot be read: {exc.strerror}",
                                              hint="give the path of a file written by to_toml()") from None
            if base_dir is None:
                base_dir = file.resolve().parent
        if namespace is None:
            namespace = {k: v for k, v in caller.items() if callable(v)}
        return pipeline_from_toml(text, cls=cls, base_dir=base_dir, namespace=namespace)

    def remove(self, name: str) -> None:
        """Drop a step or projection (a branch replacing a step removes it, then declares it
        anew); what reads it must be redeclared too, or validation names the broken edge."""
        for table in (self.steps, self.projections, self.sources):
            if name in table:
                del table[name]
                self.implicit.pop(name, None)
                self.on_update.pop(name, None)
                return
        raise PipelineDefinitionError(f"no step, projection or source named '{name}'",
                                      hint=f"declared: {', '.join([*self.sources, *self.steps, *self.projections])}")

    # ---- helpers ------------------------------------------------------------------------
    def _reads(self, name: str, kind: str, from_: Any) -> tuple[str, ...]:
        """A step's one input; a source named there is read through the layer of its
        conversations (`<source>-conversations`), declared here once."""
        (up,) = _single(name, kind, from_)
        if up not in self.sources:
            return (up,)
        layer = f"{up}-conversations"
        if layer not in self.steps:
            self._add(Step(layer, "merge", (up,), description=f"the conversations of source '{up}'",
                           config={"dedupe": "metadata_match", "fields": ["conversation_id"],
                                   "conflict": "prefer_latest", "pii": None}))
            self.implicit[layer] = up
        return (layer,)

    def _set_hook(self, name: str, hook: OnUpdate | None) -> None:
        if hook is None:
            return
        if isinstance(hook, str):
            if urlsplit(hook).scheme not in ("http", "https") or not urlsplit(hook).netloc:
                raise PipelineDefinitionError(f"projection '{name}': on_update={hook[:80]!r} is not an http(s) URL",
                                              hint='give a URL such as "http://127.0.0.1:9000/memory-updated" '
                                                   "or a function taking one dict")
        elif not callable(hook):
            raise PipelineDefinitionError(f"projection '{name}': on_update must be a function or an http(s) URL, "
                                          f"got {type(hook).__name__}")
        self.on_update[name] = hook

    def _add(self, step: Step) -> Step:
        self._check_new_name(step.name)
        self.steps[step.name] = step
        return step

    def _check_new_name(self, name: str) -> None:
        check_layer(name)
        if name in self.sources or name in self.steps or name in self.projections:
            raise PipelineDefinitionError(f"name '{name}' is declared twice",
                                          hint="give every source, step and projection its own name")


def _single(name: str, kind: str, from_: Any) -> tuple[str, ...]:
    if not isinstance(from_, str):
        raise PipelineDefinitionError(
            f"step '{name}' ({kind}): from_ must name exactly one layer, got {from_!r}",
            hint="use merge() to combine several inputs first")
    return (from_,)


def _pii(name: str, mode: str | None) -> str | None:
    if mode not in PII_MODES:
        raise PipelineDefinitionError(f"step '{name}': unknown pii mode {mode!r}",
                                      hint='use pii="flag", pii="detect" or pii="redact"')
    return mode


def _created_at(value: str | datetime | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        when = as_utc(value)
        if when is not None:
            return utc_text(when)
        value = str(value)
    try:
        return instant(value, "created_at")
    except InvalidTime:
        raise PipelineDefinitionError(f"Pipeline(created_at={value!r}) is not an ISO 8601 date or date-time "
                                      "in the years 0001-9999",
                                      hint='e.g. created_at="2025-02-07" or "2025-02-07T10:30:00Z"') from None

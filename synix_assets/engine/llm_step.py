"""Turning prompt functions into LLM requests, and LLM responses into stored artifacts."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from synix_resources import pii
from synix_assets.engine.outcomes import PartitionOutcome
from synix_assets.pipeline.prompts import prompt_identity, prompt_name
from synix_assets.pipeline import validators
from synix_assets.pipeline.records import Record
from synix_resources.errors import LLMError, LLMRefusal, OutputRefused, PromptError, SynixError
from synix_resources.llm.types import LLMRequest, LLMResponse
from synix_resources.process import endings, interrupts, progress
from synix_resources.settings import settings

INHERITED_PREFIXES = ("meta.time.", "meta.chat.", "meta.source.")
PREVIEW_CHARS = 600


def record_of(artifact) -> Record:
    return Record(artifact.artifact_id, artifact.layer, artifact.group_key, artifact.content,
                  dict(artifact.metadata))


def inherited(metadata: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in metadata.items() if k.startswith(INHERITED_PREFIXES)}
    if metadata.get("meta.custom.pii"):  # derived text may repeat what its input contained
        out["meta.custom.pii"] = dict(metadata["meta.custom.pii"])
    return out


def merged_pii(metadatas, found: dict[str, int] | None = None) -> dict[str, int]:
    """PII counts of several inputs (plus what this step found), for an aggregate's metadata."""
    total: dict[str, int] = dict(found or {})
    for m in metadatas:
        for kind, n in (m.get("meta.custom.pii") or {}).items():
            total[kind] = total.get(kind, 0) + n
    return total


def apply_pii(mode: str | None, records: list[Record]) -> tuple[list[Record], dict[str, int]]:
    """Flag, detect or redact PII in the inputs of a step; returns the records the prompt should
    see and the counts found in them."""
    if not mode:
        return records, {}
    totals: dict[str, int] = {}
    out = []
    for r in records:
        if mode == "redact":
            text, found = pii.redact(r.content)
            out.append(Record(r.artifact_id, r.layer, r.group_key, text, r.metadata))
        else:
            found = pii.summarise(r.content)
            out.append(r)
        for k, v in found.items():
            totals[k] = totals.get(k, 0) + v
    return out, totals


def pii_findings(mode: str | None, records: list[Record]) -> list[dict]:
    """`pii="detect"`: where each finding is in the inputs of a step (`in`: the input's
    artifact id; the output is new text, so spans point into what it was made from)."""
    if mode != "detect":
        return []
    found = [dict(f, **{"in": r.artifact_id}) for r in records for f in pii.locate(r.content)]
    return found[:pii.MAX_FINDINGS]


def call_prompt(step, *args) -> str:
    """The step's prompt rendered for one partition. A prompt is user code: whatever it raises
    (an exit included: sys.exit, os._exit, exec), or anything but a valid str it returns,
    becomes a PromptError that fails this partition only."""
    name = prompt_name(step.prompt)
    try:
        with endings.kept():  # os._exit(0) here would end the build as a silent success
            text = step.prompt(*args)
    except SynixError:
        raise  # already one line naming what is wrong (e.g. an unreadable template file)
    except Exception as exc:  # any error of the user's function is this partition's failure
        raise PromptError(f"prompt {name} raised {type(exc).__name__}: {exc}",
                          hint=f"fix {name} in the pipeline file") from exc
    except (SystemExit, endings.ProcessEnding) as exc:
        called = f"sys.exit({exc.code!r})" if isinstance(exc, SystemExit) else str(exc)
        raise PromptError(f"prompt {name} called {called}",
                          hint=f"a prompt must return its text; remove the exit from {name}") from None
    except KeyboardInterrupt as exc:
        if interrupts.received():
            raise  # a real Ctrl-C / SIGTERM while the prompt ran: the build stops
        raise PromptError(f"prompt {name} raised KeyboardInterrupt",
                          hint=f"remove the raise from {name}") from exc
    if not isinstance(text, str):
        raise PromptError(f"prompt {name} returned {type(text).__name__}, expected str",
                          hint=f"make {name} return the prompt text")
    try:  # a lone surrogate cannot be hashed, cached or sent: it would fail the whole layer later
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise PromptError(f"prompt {name} returned text that is not valid Unicode "
                          f"({exc.reason}: {text[exc.start]!r} at position {exc.start})",
                          hint=f"make {name} return valid text (decode bytes with errors='replace')") from None
    return text


def prompt_failed(ctx, layer: str, group_key: str, error: SynixError,
                  input_count: int = 1) -> PartitionOutcome:
    """Record a partition whose prompt could not be rendered as failed (the others go on)."""
    ctx.store.record_failure(ctx.run_id, layer, group_key, error.one_line())
    return PartitionOutcome(group_key, "failed", error=error.one_line(), input_count=input_count)


@dataclass
class PendingCall:
    """One partition's LLM request plus what is needed to store its answer."""

    group_key: str
    request: LLMRequest
    parents: list[str]
    metadata: dict[str, Any]
    key: str
    input_count: int
    extra_audit: dict[str, Any] = field(default_factory=dict)


def make_request(ctx, layer: str, prompt_text: str, records: list[Record], label: str,
                 render: Callable[[list[tuple[str, str]]], str] | None = None,
                 extra_sources: list[tuple[str, str]] = (), shape: str = "") -> LLMRequest:
    """The request for one call of `layer`'s step; `shape` and each record's date tell an offline
    summariser, which cannot read the prompt, what to write (see LLMRequest.shape)."""
    step = ctx.pipeline.steps[layer]
    settings = ctx.pipeline.llm_settings(step)
    max_words = getattr(step.prompt, "__synix_max_words__", None)
    system = settings["system"] or getattr(step.prompt, "__synix_system__", None)
    return LLMRequest(prompt=prompt_text, system=system, model=settings["model"],
                      temperature=settings["temperature"], max_tokens=settings["max_tokens"],
                      label=label, sources=[*extra_sources, *((r.artifact_id, r.content) for r in records)],
                      max_words=max_words, template_hash=prompt_identity(step.prompt), render=render,
                      shape=shape, source_dates={r.artifact_id: r.period or r.date for r in records})


def call_and_store(ctx, layer: str, level: int, calls: list[PendingCall]) -> list[PartitionOutcome]:
    """Run the calls concurrently, store every success atomically, record every failure."""
    if not calls:
        return []
    outcomes: list[PartitionOutcome | None] = [None] * len(calls)
    done = 0

    def stored(i: int, result) -> None:  # each answer is kept the moment it arrives
        nonlocal done
        outcomes[i] = store_result(ctx, layer, level, calls[i], result)
        done += 1
        progress.finished(layer, done)
        if ctx.on_stored is not None:
            ctx.on_stored(layer, outcomes[i])

    ctx.llm.complete_many([c.request for c in calls], batch=ctx.batch, on_result=stored)
    return outcomes  # type: ignore[return-value]


def failure_flags(err) -> tuple[str, ...]:
    """What a failed partition's outcome says about its error: a refusal; permanent (a retry of
    the same input cannot succeed, so a live batch is dead-lettered at once)."""
    return ((("refusal",) if isinstance(err, LLMRefusal) else ())
            + (("permanent",) if getattr(err, "permanent", False) else ()))


def store_result(ctx, layer: str, level: int, call: PendingCall,
                 result: LLMResponse | LLMError) -> PartitionOutcome:
    if isinstance(result, LLMError):
        ctx.store.record_failure(ctx.run_id, layer, call.group_key, result.one_line())
        flags = failure_flags(result)
        return PartitionOutcome(call.group_key, "failed", error=result.one_line(),
                                input_count=call.input_count, flags=flags, llm_calls=1)
    audit = result.audit()
    audit.update(call.extra_audit)
    worker = settings().worker_id
    if worker:
        audit["worker"] = worker
    metadata = dict(call.metadata)
    metadata["meta.step.provider"] = result.provider
    metadata["meta.step.model"] = result.model
    flags = tuple(result.flags)
    validate = ctx.pipeline.steps[layer].validate
    if validate is not None:  # checked before anything is stored: a refused output never is
        verdict = validators.judge(validate, Record("", layer, call.group_key, result.text, dict(metadata)))
        if verdict.refused:
            err = OutputRefused(verdict.refused,  # the failure line names layer/partition
                                hint="the next build retries it; change the prompt or the validator to accept it")
            ctx.store.record_failure(ctx.run_id, layer, call.group_key, err.one_line())
            return PartitionOutcome(call.group_key, "failed", error=err.one_line(), input_count=call.input_count,
                                    flags=("refused",), llm_calls=0 if result.from_cache else 1,
                                    tokens_in=result.input_tokens, tokens_out=result.output_tokens,
                                    cost_usd=result.cost_usd)
        if verdict.flag:
            metadata["meta.custom.validation_flags"] = [verdict.flag]
            flags += ("flagged",)
    art = ctx.store.put(layer=layer, group_key=call.group_key, content=result.text,
                        materialization_key=call.key, level=level, metadata=metadata,
                        audit=audit, parents=call.parents, run_id=ctx.run_id)
    ctx.store.clear_failure(layer, call.group_key)
    # calls paid for: the answer itself unless it came from the cache, plus any made before it
    calls = (0 if result.from_cache else 1) + int(call.extra_audit.get("extra_calls", 0))
    return PartitionOutcome(
        call.group_key, "built", artifact_id=art.artifact_id, provider=result.provider,
        model=result.model, llm_calls=calls,
        tokens_in=result.input_tokens + int(call.extra_audit.get("extra_tokens_in", 0)),
        tokens_out=result.output_tokens + int(call.extra_audit.get("extra_tokens_out", 0)),
        cost_usd=result.cost_usd + float(call.extra_audit.get("extra_cost_usd", 0.0)),
        input_count=call.input_count, content_hash=art.content_hash,
        preview=result.text[:PREVIEW_CHARS], flags=flags, from_response_cache=calls == 0)

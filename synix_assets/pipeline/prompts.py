"""Prompt identity: a prompt is a Python function (its source is its version) or a template file.

`@prompt(version="…")` pins the identity explicitly, for closures and generated functions whose
source does not capture what they do.

`template("episode.txt")` is a prompt kept in a text file (a path relative to the file that calls
`template`, i.e. next to pipeline.py). The engine calls it like a prompt function and fills these
`{placeholders}` (unknown ones are left as written):

- transform, `(record)`: {content} {title} {date} {group_key} {layer} {artifact_id} {period}
- aggregate, `(records, group)`: {content} (every input, dated and titled) {group} {period}
  {topic} (both the group key) {count}
- fold, `(record, state)`: the transform's fields for the new record, plus {state}
"""
from __future__ import annotations

import inspect
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

from synix_assets.pipeline.records import Record
from synix_resources.errors import PipelineDefinitionError
from synix_resources.fingerprints import sha256_text


# What a step's prompt= takes: a function of the step's inputs returning the prompt text (a
# TemplateFile is one too).
PromptFunction = Callable[..., str]
F = TypeVar("F", bound=Callable[..., Any])


def prompt(version: str | None = None, *, system: str | None = None,
           max_words: int | None = None) -> Callable[[F], F]:
    """Decorator: attach an explicit version (and optionally a system prompt / length) to a prompt."""

    def wrap(fn: F) -> F:
        # Attributes on the function object itself, so the engine finds them on any callable.
        setattr(fn, "__synix_prompt_version__", version)
        setattr(fn, "__synix_system__", system)
        setattr(fn, "__synix_max_words__", max_words)
        return fn

    return wrap


@dataclass(frozen=True)
class TemplateFile:
    """A prompt kept in a text file with `{placeholders}`; its content hash is its version."""

    path: Path

    def text(self) -> str:
        try:
            return self.path.read_text(encoding="utf-8")
        except OSError as exc:
            raise PipelineDefinitionError(
                f"prompt template {self.path} cannot be read: {exc.strerror}",
                hint="fix the path given to template()") from exc

    def __call__(self, *args: Any, **values: Any) -> str:
        """As a step's prompt: `(record)`, `(records, group)` or `(record, state)`; or with
        the placeholder values as keywords."""
        return self.text().format_map(_Missing({**_placeholders(*args), **values}))


class _Missing(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _record_fields(record: Record) -> dict[str, Any]:
    return {"content": record.content, "title": record.title, "date": record.date,
            "group_key": record.group_key, "layer": record.layer,
            "artifact_id": record.artifact_id, "period": record.period}


def _placeholders(*args: Any) -> dict[str, Any]:
    if not args:
        return {}
    if len(args) == 1 and isinstance(args[0], Record):  # transform
        return _record_fields(args[0])
    if len(args) == 2 and isinstance(args[0], Record):  # fold: (record, state)
        return {**_record_fields(args[0]), "state": args[1]}
    if len(args) == 2 and isinstance(args[0], (list, tuple)):  # aggregate: (records, group)
        records, group = args
        content = "\n\n".join(f"[{r.date}] {r.title}\n{r.content}".strip() for r in records)
        return {"content": content, "group": group, "period": group, "topic": group,
                "count": len(records)}
    raise TypeError("a template prompt takes (record), (records, group) or (record, state)")


def template(path: str | Path) -> TemplateFile:
    """A prompt in a text file; a relative path resolves next to the file calling `template`
    (pipeline.py), never against the current directory."""
    path = Path(path).expanduser()
    if not path.is_absolute():
        caller = sys._getframe(1).f_globals.get("__file__")
        if caller:
            path = Path(caller).resolve().parent / path
    return TemplateFile(path)


def prompt_identity(fn: Callable[..., Any] | TemplateFile | None) -> str:
    """Stable identity of a prompt: explicit version, template content hash, or source hash."""
    if fn is None:
        return "builtin:none"
    if isinstance(fn, TemplateFile):
        return "template:" + sha256_text(fn.text())
    return callable_identity(fn, "prompt")


def callable_identity(fn: Callable[..., Any], what: str) -> str:
    """A function's identity in a step version (a prompt's, a validator's): its explicit version
    (`@prompt(version=…)`, or a `__synix_prompt_version__` attribute), else its source's hash."""
    version = getattr(fn, "__synix_prompt_version__", None)
    if version:
        return f"version:{version}"
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        name = getattr(fn, "__qualname__", repr(fn))
        raise PipelineDefinitionError(
            f"{what} {name} has no readable source to version it",
            hint='decorate it with @prompt(version="…")') from None
    # Decorator lines do not change what the function says, the version does (handled above).
    body = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("@"))
    return "source:" + sha256_text(body)


def prompt_name(fn: Callable[..., Any] | TemplateFile | None) -> str:
    if fn is None:
        return "none"
    if isinstance(fn, TemplateFile):
        return fn.path.name
    return getattr(fn, "__qualname__", "prompt")

"""Prompt identity: a prompt is a Python function (its source is its version) or a template file.

`@prompt(version="…")` pins the identity explicitly, for closures and generated functions whose
source does not capture what they do.
"""
from __future__ import annotations

import inspect
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from synix_resources.errors import PipelineDefinitionError
from synix_resources.fingerprints import sha256_text


def prompt(version: str | None = None, *, system: str | None = None, max_words: int | None = None):
    """Decorator: attach an explicit version (and optionally a system prompt / length) to a prompt."""

    def wrap(fn: Callable) -> Callable:
        fn.__synix_prompt_version__ = version
        fn.__synix_system__ = system
        fn.__synix_max_words__ = max_words
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

    def __call__(self, **values: Any) -> str:
        return self.text().format_map(_Missing(values))


class _Missing(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def template(path: str | Path) -> TemplateFile:
    return TemplateFile(Path(path))


def prompt_identity(fn: Callable | TemplateFile | None) -> str:
    """Stable identity of a prompt: explicit version, template content hash, or source hash."""
    if fn is None:
        return "builtin:none"
    if isinstance(fn, TemplateFile):
        return "template:" + sha256_text(fn.text())
    version = getattr(fn, "__synix_prompt_version__", None)
    if version:
        return f"version:{version}"
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        name = getattr(fn, "__qualname__", repr(fn))
        raise PipelineDefinitionError(
            f"prompt {name} has no readable source to version it",
            hint='decorate it with @prompt(version="…")') from None
    # Decorator lines do not change what the prompt says, the version does (handled above).
    body = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("@"))
    return "source:" + sha256_text(body)


def prompt_name(fn: Callable | TemplateFile | None) -> str:
    if fn is None:
        return "none"
    if isinstance(fn, TemplateFile):
        return fn.path.name
    return getattr(fn, "__qualname__", "prompt")

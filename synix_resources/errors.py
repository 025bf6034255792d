"""One exception class per failure kind.

Every message is a single line that names the file or record involved and the fix, so the
CLI can print it as-is. `SynixError.hint` carries the fix when it is not already in the text.
"""
from __future__ import annotations


class SynixError(Exception):
    """Base of every failure Synix reports to a user."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None):
        self.hint = hint
        super().__init__(message)

    def one_line(self) -> str:
        text = " ".join(str(self).split())
        if self.hint:
            text = f"{text} — {self.hint}"
        return text


class ExportFormatError(SynixError):
    """An export file is unreadable, truncated, empty or of an unknown format."""


class ConversationSkipped(SynixError):
    """One conversation inside an otherwise good export is malformed and was skipped."""


class StoreError(SynixError):
    """The artifact store cannot be opened, written or migrated."""


class StoreLockedError(StoreError):
    """Another process holds the store's write lock for longer than the busy timeout."""


class ArtifactNotFound(SynixError):
    """An artifact id (or prefix) names nothing in the store."""


class PipelineDefinitionError(SynixError):
    """The user's pipeline file cannot be loaded or fails validation."""


class ProjectNotFound(SynixError):
    """No pipeline.py in the given or current folder."""


class LLMError(SynixError):
    """An LLM call failed for good (after retries, or a non-retryable status)."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False,
                 hint: str | None = None):
        self.status = status
        self.retryable = retryable
        super().__init__(message, hint=hint)


class LLMConfigError(SynixError):
    """The LLM provider is misconfigured (unknown provider, missing API key, bad base URL)."""


class LLMRefusal(LLMError):
    """The model refused or returned empty output; the result is not stored as memory."""


class SearchError(SynixError):
    """A search request is invalid (empty query, unknown layer) or the index is missing."""


class BuildFailed(SynixError):
    """A build finished with failed partitions; names them. `report` holds what was built."""

    def __init__(self, message: str, *, hint: str | None = None, report=None):
        self.report = report
        super().__init__(message, hint=hint)


class BranchError(SynixError):
    """A branch name is invalid, unknown or taken, or a branch operation is not allowed."""

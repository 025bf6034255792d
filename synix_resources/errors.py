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


class SourceEntrySkipped(ExportFormatError):
    """An entry of an export or notes folder is not read (a symlink loop, a broken link, a link
    that leads outside the folder given, a FIFO or device, a folder that cannot be listed); the
    rest of the folder is read."""

    def __init__(self, path, cause: str):
        self.path = path
        super().__init__(f"{path}: skipped, {cause}")


class ConversationSkipped(SynixError):
    """One conversation inside an otherwise good export is malformed and was skipped."""


class StoreError(SynixError):
    """The artifact store cannot be opened, written or migrated."""


class DiskFullError(StoreError):
    """A write failed because the disk (or the user's quota) is full; it was rolled back."""


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

    @property
    def permanent(self) -> bool:
        """Trying again cannot help: a refusal, or a 4xx answer other than a timeout, conflict
        or rate limit (the request itself is wrong)."""
        return isinstance(self, LLMRefusal) or (
            not self.retryable and self.status is not None and 400 <= self.status < 500
            and self.status not in (408, 409, 429))


class LLMConfigError(SynixError):
    """The LLM provider is misconfigured (unknown provider, missing API key, bad base URL)."""


class SettingsError(SynixError):
    """An environment variable whose value Synix cannot use (docs/configuration.md)."""


class LLMRefusal(LLMError):
    """The model refused or returned empty output; the result is not stored as memory."""


class SearchError(SynixError):
    """A search request is invalid (empty query, unknown layer) or the index is missing."""


class SearchArgumentError(SearchError, ValueError, TypeError):
    """A search's mode or limit is not one it takes (a ValueError/TypeError to Python callers,
    one line to the CLI and HTTP)."""


class BuildFailed(SynixError):
    """A build finished with failed partitions; names them. `report` holds what was built."""

    def __init__(self, message: str, *, hint: str | None = None, report=None, permanent: bool = False):
        self.report = report
        self.permanent = permanent  # every failure was permanent: running it again cannot help
        super().__init__(message, hint=hint)


class ScaleDeploymentError(SynixError):
    """The distributed deployment of scale.toml cannot take or finish a build's runs."""


class BranchError(SynixError):
    """A branch name is invalid, unknown or taken, or a branch operation is not allowed."""


class ServeError(SynixError):
    """A web server cannot start as asked (port in use, listening beyond loopback without a token)."""


class ForgetIncomplete(SynixError):
    """A `synix forget` could not finish; its journal keeps it pending until a rerun does."""


class ForgetBlocked(ForgetIncomplete):
    """Another process holds a database open, so forgotten text cannot be purged from it yet."""


class ForgetUnverified(ForgetIncomplete):
    """After a forget, the forgotten text or ids were still found in a project file."""


class PromptError(SynixError):
    """A step's prompt function raised, or returned something other than a str, for one partition."""


class ApiSourceError(SynixError):
    """An `api` source's service cannot be reached, refused a request or answered something that
    is not what its protocol describes; the mirror keeps what was pulled and the next pull resumes."""


class OutputRefused(SynixError):
    """A transform's validator refused one output (`transform(validate=…)`): it is not stored,
    its partition is recorded as failed and retried by the next build (design §10.2)."""


class BuildInterrupted(SynixError):
    """A build stopped by Ctrl-C or SIGTERM; what finished is kept and the next run resumes.

    `exit_code` is the shell's convention for death by that signal (130 for SIGINT, 143 for
    SIGTERM); `report` holds what was built before the signal."""

    def __init__(self, message: str, *, signal_number: int, hint: str | None = None, report=None):
        self.signal_number = signal_number
        self.exit_code = 128 + signal_number
        self.report = report
        super().__init__(message, hint=hint)


class EvalError(SynixError):
    """An eval cannot run as asked (no project for the memory, a baseline that needs a model)."""


class EvalResultsError(SynixError):
    """The eval results file cannot be read, or holds no run to report."""


class LiveInputError(SynixError):
    """A live ingest/close request is malformed (bad JSON, missing field, bad role, invalid text)."""


class LiveInputTooLarge(LiveInputError):
    """A live request body or one turn is over the size limit."""


class SessionNotFound(SynixError):
    """A live session id names no session of this tenant."""


class IdempotencyConflict(SynixError):
    """An idempotency key was reused with a different request body."""


class TenantError(SynixError):
    """A tenant name is invalid, taken or unknown, or the tenants home cannot be used."""


class TenantAuthError(SynixError):
    """A request to a tenant carries no token, or one that is not that tenant's."""


class InvalidName(SynixError):
    """A name (branch, tenant, live id, layer, project) breaks its rule (synix_resources.names);
    refused before anything is written. The subclasses below also belong to the failure kind of
    the thing named, so each interface answers them as it answers that kind's other errors."""


class InvalidBranchName(InvalidName, BranchError):
    """A branch name breaks the branch rule, or is reserved (main, `NAME@previous`)."""


class InvalidTenantName(InvalidName, TenantError):
    """A tenant name breaks the tenant rule."""


class InvalidLiveId(InvalidName, LiveInputError):
    """A live session id, user id or idempotency key breaks the live id rule."""


class InvalidLayerName(InvalidName, PipelineDefinitionError):
    """A layer, source or projection name breaks the layer rule."""


class InvalidProjectName(InvalidName, PipelineDefinitionError):
    """A project's (pipeline's) name breaks the project rule."""


class MemoryOpRefused(SynixError):
    """An agent's memory write (create, update, supersede, deactivate, link) is refused before
    it is logged: empty content, evidence that names no record, a memory already retired, a
    validity time earlier than the version it replaces."""


class MemoryNotFound(ArtifactNotFound):
    """A memory or link id names nothing in this branch's memory log."""


class InvalidTime(SynixError):
    """A date/time argument (`as_of`, `valid_from`) is not an ISO 8601 date or date-time, or
    leaves the years 0001-9999 once moved to UTC (synix_resources/values.py)."""


class InvalidMemoryId(InvalidName, MemoryOpRefused):
    """A memory or link id breaks the id rule (`mem-` / `link-` and 16 hex digits)."""


class UnsafeRemoval(SynixError):
    """A folder was about to be removed that is not strictly inside the folder it belongs in
    (or, for a clean-up, was not made by the failing call); nothing was removed."""


class UnknownParameter(SynixError, TypeError):
    """A door was given a parameter name the capability does not declare
    (`synix_assets/app/vocabulary.py`); nothing is ignored in silence. HTTP 400, MCP -32602."""


class WritesNotAllowed(SynixError):
    """A write reached a server started read-only (`synix serve` / `synix mcp` without
    `--writes`). HTTP 403, an MCP tool error."""


class EvidenceRefused(SynixError):
    """An event appended to the evidence ledger is refused before it is written: no content, no
    source or event type, a field that is not text, a time that is not ISO 8601, metadata that is
    not a JSON object."""


class ProjectFileError(SynixError):
    """A portable project file (`synix pack` / `synix unpack`) cannot be made or read: not a
    SQLite file, a SQLite file Synix did not pack, damaged (a checksum or SQLite's own check
    fails), from a newer format, or an unpack target that is not an empty folder."""


class FieldKeyError(StoreError):
    """Field-level encryption cannot work: SYNIX_FIELD_KEY is malformed, missing while the store
    holds encrypted fields, or not the key they were encrypted with."""

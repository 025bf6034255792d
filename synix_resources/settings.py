"""Every environment variable Synix reads, declared once: its type, default, range and meaning.

`settings()` builds a new `Settings` from the environment on every call, never at import (tests
change the environment after importing). A variable is parsed when its attribute is read, not
when the object is built, so a bad value fails only what uses it, with the message and exception
type it always had: a bad SYNIX_LLM_CONCURRENCY stops the commands that build an LLM client
(`LLMConfigError`), not `synix status`; a bad SYNIX_LOCK_TIMEOUT_S stops what waits for the
lock with one `SettingsError` line naming the variable and its range.

Variables whose value is merged with an argument (the LLM client's configuration: the
environment overrides `LLMResource`'s fields) read as None when unset; the caller applies its
argument. docs/configuration.md is rendered from these declarations
(`python -m synix_resources.settings > docs/configuration.md`).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Mapping, TypeVar, overload

from synix_resources.errors import LLMConfigError, SettingsError, SynixError
from synix_resources.values import small_int

T = TypeVar("T")

DEFAULT_LOCK_TIMEOUT_S = 600.0
# Off by default: on the shared 2-vCPU machine it was measured on (load 8-11), a cold build of
# 500 with the index in a second process took longer (median 19.1 s against 15.5 s, CPU 8.5
# against 7.9 s: the Dagster run recording the episodes slowed while the index was written);
# docs/benchmarks.md, session 14. 200 is the setting to try on an idle multi-core machine:
# below it the index's delta is small and a second process only adds its start.
DEFAULT_BACKGROUND_INDEX_MIN = 200
DEFAULT_BACKGROUND_FEED_MIN_BYTES = 1_000_000
DEFAULT_FORGET_WAIT_S = 60.0
DEFAULT_LIVE_IDLE_MINUTES = 15.0
DEFAULT_LIVE_MAX_ATTEMPTS = 5
DEFAULT_LIVE_BACKOFF_S = 30.0
DEFAULT_EDITOR = "vi"


@dataclass(frozen=True)
class Var(Generic[T]):
    """One environment variable: how its text (None when unset) becomes a value, and its
    documentation. As a class attribute of `Settings` it reads as the parsed value."""

    name: str
    parse: Callable[[str | None], T] = field(repr=False)
    type: str
    default: str
    range: str
    doc: str
    group: str
    attr: str = ""

    def __set_name__(self, owner: type, attr: str) -> None:
        object.__setattr__(self, "attr", attr)

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Var[T]: ...

    @overload
    def __get__(self, obj: Settings, owner: type | None = None) -> T: ...

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return self
        return self.parse(obj.env.get(self.name))


# ---- parsers: each keeps the conversion the variable's reader always did --------------------

def _text(raw: str | None) -> str | None:
    """Empty is unset."""
    return raw or None


def _switch(raw: str | None) -> bool:
    return (raw or "") not in ("", "0")


@dataclass(frozen=True)
class Bounds:
    """The accepted range of a number setting: finite, at least `low` (more than it when
    `low_open`), at most `high`. Every number has an upper end too: a million LLM threads or a
    lock wait of 1e300 seconds fail far from the setting that asked for them."""

    low: float
    high: float
    low_open: bool = False

    def holds(self, value: float) -> bool:
        if value != value or value in (float("inf"), float("-inf")):
            return False
        return (value > self.low if self.low_open else value >= self.low) and value <= self.high

    @property
    def text(self) -> str:
        if self.low_open:
            return f"> {_num(self.low)} and ≤ {_num(self.high)}"
        return f"{_num(self.low)} to {_num(self.high)}"


def _num(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


def out_of_range(name: str, raw: str, bounds: Bounds, error: type[SynixError],
                 default: str) -> SynixError:
    """The one line for a number outside its range: the variable, its value and the range."""
    return error(f"{name}={raw.strip()[:40]!r} is out of range (accepted: {bounds.text})",
                 hint=f"set {name} to a value in that range, or unset it (default {default})")


LOCK_TIMEOUT_S = Bounds(0, 7 * 24 * 3600)
BACKGROUND_INDEX_MIN = Bounds(0, 1_000_000_000)
BACKGROUND_FEED_MIN_BYTES = Bounds(0, 1_000_000_000_000)
FORGET_WAIT_S = Bounds(0, 24 * 3600)
LIVE_IDLE_MINUTES = Bounds(0, 7 * 24 * 60, low_open=True)
LIVE_MAX_ATTEMPTS = Bounds(1, 100)
LIVE_BACKOFF_S = Bounds(0, 3600)
CONTEXT_TOKENS = Bounds(512, 10_000_000)
# Each request in flight is a thread: a few hundred is more than any provider allows one key.
CONCURRENCY = Bounds(1, 256)
MAX_REQUESTS_PER_S = Bounds(0, 100_000)
FAKE_LATENCY_S = Bounds(0, 3600)
FAKE_FAILURE_RATE = Bounds(0, 1)


def _number_or(default: T, name: str, kind: type, bounds: Bounds, hint: str) -> Callable[[str | None], T]:
    """The text as a `kind` within `bounds` (unset: `default`); anything else, empty included,
    is one `SettingsError` line naming the variable."""
    def parse(raw: str | None) -> Any:
        if raw is None:
            return default
        try:
            value = kind(raw)
        except ValueError:
            raise SettingsError(f"{name}={raw[:40]!r} is not {hint}",
                                hint=f"set {name} to a number ({bounds.text}), or unset it "
                                     f"(default {_num(default)})") from None
        if not bounds.holds(value):
            raise out_of_range(name, raw, bounds, SettingsError, _num(default))
        return value
    return parse


def _float_or(default: float, name: str, bounds: Bounds, unit: str = "seconds") -> Callable[[str | None], float]:
    return _number_or(default, name, float, bounds, f"a number of {unit}")


def _int_or(default: int, name: str, bounds: Bounds) -> Callable[[str | None], int]:
    return _number_or(default, name, int, bounds, "a whole number")


def _or(default: str) -> Callable[[str | None], str]:
    return lambda raw: raw if raw is not None else default


def _llm_number(name: str, bounds: Bounds, default: str) -> Callable[[str | None], float | None]:
    def parse(raw: str | None) -> float | None:
        value = (raw or "").strip()
        if not value:
            return None
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if math.isnan(number):  # infinity is a number, and out of range below
            raise LLMConfigError(f"{name}={value[:40]!r} is not a number", hint=f"set {name} to e.g. 0.2")
        if not bounds.holds(number):
            raise out_of_range(name, value, bounds, LLMConfigError, default)
        return number
    return parse


def _llm_count(name: str, bounds: Bounds, what: str, hint: str,
               default: str) -> Callable[[str | None], int | None]:
    def parse(raw: str | None) -> int | None:
        value = (raw or "").strip()
        if not value:
            return None
        number = small_int(value) if value.isdecimal() else None  # "²" is a digit int() refuses
        if not isinstance(number, int):
            raise LLMConfigError(f"{name}={value[:40]!r} is not {what}", hint=hint)
        if not bounds.holds(number):
            raise out_of_range(name, value, bounds, LLMConfigError, default)
        return number
    return parse


def _llm_url(raw: str | None) -> str | None:
    return (raw or "").strip() or None


# ---- the declarations ---------------------------------------------------------------------------

CLI = "Project and command line"
BUILD = "Store and builds"
FORGET = "Forget"
LIVE = "Live memory"
LLM = "LLM client"
OTHER = "Variables of other tools that Synix reads"
GROUPS = (CLI, BUILD, FORGET, LIVE, LLM, OTHER)


@dataclass(frozen=True)
class Settings:
    """The deployment's configuration, as the environment gave it when `settings()` was called."""

    env: Mapping[str, str]

    project = Var(
        "SYNIX_PROJECT", _text, "folder", "the current folder or a parent with a pipeline.py; "
        "the repository's `synix_assets.definitions`: the bundled demo project", "a folder",
        "The project the CLI works on (like `-p`), and the project the repository's Dagster code "
        "location loads. `synix ui` sets it for the Dagster process it starts.", CLI)
    branch = Var(
        "SYNIX_BRANCH", _text, "branch name", "the project's current branch (`synix branch "
        "switch`), else `main`", "a valid branch name; empty means unset",
        "The branch the CLI works on (like `--branch`).", CLI)
    debug = Var(
        "SYNIX_DEBUG", _switch, "switch", "off", "empty or `0` is off, anything else on",
        "Full tracebacks and Dagster's error logs on the terminal (like `--debug`).", CLI)
    home = Var(
        "SYNIX_HOME", _text, "folder", "none (the tenant commands require it)", "a folder",
        "The tenants' home of `synix tenant`, `synix live` (their `--home`).", CLI)
    locomo_data = Var(
        "SYNIX_LOCOMO_DATA", _text, "file path", "none", "a LoCoMo JSON file (locomo10.json)",
        "The data `pipeline.eval(\"locomo\")` and `synix eval locomo` read when none is given.", CLI)
    longmemeval_data = Var(
        "SYNIX_LONGMEMEVAL_DATA", _text, "file path", "none", "a LongMemEval JSON file",
        "The data `pipeline.eval(\"longmemeval\")` and `synix eval longmemeval` read when none is given.", CLI)
    api_token = Var(
        "SYNIX_API_TOKEN", _text, "secret", "none: requests go without one", "text",
        "Bearer token an `api` source sends to its service (Open WebUI: an API key, "
        "Settings → Account); docs/live.md, \"API sources\".", CLI)
    serve_token = Var(
        "SYNIX_SERVE_TOKEN", _text, "secret", "none", "text",
        "Bearer token of `synix serve` and `synix mcp --transport http` (their `--token`); "
        "required when listening beyond loopback.", CLI)

    store_path = Var(
        "SYNIX_STORE_PATH", _text, "file path or URL", "`store` in the project's config.toml, "
        "else `.synix/synix.db`", "a SQLite file path or a `postgresql://` URL",
        "Where the artifact store is (e.g. for workers whose project folder is elsewhere).", BUILD)
    field_key = Var(
        "SYNIX_FIELD_KEY", _text, "secret", "none: fields are stored as written",
        "32 random bytes in URL-safe base64 (`synix_resources.field_crypto.new_key()`)",
        "Key of field-level encryption (AES-256-GCM) of the store's chosen fields "
        "(docs/encryption.md); the Dagster `store` resource takes it as `dg.EnvVar`.", BUILD)
    encrypted_fields = Var(
        "SYNIX_ENCRYPTED_FIELDS", _or("content"), "list", "`content`",
        "`content` and/or `metadata.KEY`, comma-separated",
        "Which artifact fields SYNIX_FIELD_KEY encrypts.", BUILD)
    source_dir = Var(
        "SYNIX_SOURCE_DIR", _text, "folder, or NAME=folder entries", "none: each source reads its own path",
        f"a folder (a pipeline with one export source), or `NAME=folder` entries separated by `{os.pathsep}`",
        "The export folder(s) the pipeline reads instead of those pipeline.py names, in this process "
        "and its children: what `synix run --source-dir` sets for its build.", BUILD)
    lock_timeout_s = Var(
        "SYNIX_LOCK_TIMEOUT_S", _float_or(DEFAULT_LOCK_TIMEOUT_S, "SYNIX_LOCK_TIMEOUT_S", LOCK_TIMEOUT_S),
        "float (seconds)",
        f"{DEFAULT_LOCK_TIMEOUT_S:g}", LOCK_TIMEOUT_S.text,
        "How long a build, forget or branch change waits for the project's lock held by "
        "another one.", BUILD)
    background_index_min = Var(
        "SYNIX_BACKGROUND_INDEX_MIN",
        _int_or(DEFAULT_BACKGROUND_INDEX_MIN, "SYNIX_BACKGROUND_INDEX_MIN", BACKGROUND_INDEX_MIN), "int",
        f"{DEFAULT_BACKGROUND_INDEX_MIN}", f"{BACKGROUND_INDEX_MIN.text}; 0 is off",
        "From how many partitions to build a whole build writes its search indexes in a second "
        "process, on another core, while Dagster records the layers (the same index either "
        "way). 0 writes them in the projection's step only (better on a machine whose cores "
        "are all busy with other work).", BUILD)
    background_feed_min_bytes = Var(
        "SYNIX_BACKGROUND_FEED_MIN_BYTES",
        _int_or(DEFAULT_BACKGROUND_FEED_MIN_BYTES, "SYNIX_BACKGROUND_FEED_MIN_BYTES",
                BACKGROUND_FEED_MIN_BYTES), "int",
        f"{DEFAULT_BACKGROUND_FEED_MIN_BYTES:,}", f"{BACKGROUND_FEED_MIN_BYTES.text}; 0 is off",
        "From how many bytes of export files the evidence ledger has not read yet a build feeds "
        "the ledger in a second process, on another core, while it builds (the same events "
        "either way). 0 feeds it before the build, in the build's process.", BUILD)
    worker_id = Var(
        "SYNIX_WORKER_ID", _text, "text", "unset: nothing recorded", "text",
        "Which worker built an artifact, recorded in its audit (`worker`). "
        "`synix worker --name` sets it to the worker's name.", BUILD)

    forget_wait_s = Var(
        "SYNIX_FORGET_WAIT_S", _float_or(DEFAULT_FORGET_WAIT_S, "SYNIX_FORGET_WAIT_S", FORGET_WAIT_S),
        "float (seconds)",
        f"{DEFAULT_FORGET_WAIT_S:g}", FORGET_WAIT_S.text,
        "How long `synix forget` waits for open readers before the purge gives up "
        "(`ForgetBlocked`).", FORGET)
    forget_crash_after = Var(
        "SYNIX_FORGET_CRASH_AFTER", _text, "phase name", "unset", "a forget phase name",
        "Tests only: the forgetting process kills itself (SIGKILL) right after that phase's work, "
        "before its journal records it.", FORGET)

    live_idle_minutes = Var(
        "SYNIX_LIVE_IDLE_MINUTES", _float_or(DEFAULT_LIVE_IDLE_MINUTES, "SYNIX_LIVE_IDLE_MINUTES",
                                             LIVE_IDLE_MINUTES, "minutes"),
        "float (minutes)",
        f"{DEFAULT_LIVE_IDLE_MINUTES:g}", LIVE_IDLE_MINUTES.text,
        "Idle time after which a live session closes and is built.", LIVE)
    live_max_attempts = Var(
        "SYNIX_LIVE_MAX_ATTEMPTS", _int_or(DEFAULT_LIVE_MAX_ATTEMPTS, "SYNIX_LIVE_MAX_ATTEMPTS", LIVE_MAX_ATTEMPTS), "int",
        f"{DEFAULT_LIVE_MAX_ATTEMPTS}", LIVE_MAX_ATTEMPTS.text,
        "Build attempts of a live batch before it is dead-lettered.", LIVE)
    live_backoff_s = Var(
        "SYNIX_LIVE_BACKOFF_S", _float_or(DEFAULT_LIVE_BACKOFF_S, "SYNIX_LIVE_BACKOFF_S", LIVE_BACKOFF_S),
        "float (seconds)",
        f"{DEFAULT_LIVE_BACKOFF_S:g}", f"{LIVE_BACKOFF_S.text}; doubled per failed attempt, at most 3,600",
        "Wait before a failed live batch is tried again.", LIVE)

    llm_provider = Var(
        "SYNIX_LLM_PROVIDER", _text, "choice", "`anthropic` when an API key is set, else "
        "`extractive` (with a warning)", "`anthropic`, `openai-compatible`, `extractive`, `fake`",
        "The LLM provider (overrides `LLMResource.provider`).", LLM)
    llm_model = Var(
        "SYNIX_LLM_MODEL", _text, "text", "the provider's: `claude-sonnet-4-6` (anthropic, "
        "`synix ask`), `fake-v1` (fake); openai-compatible needs one", "a model name",
        "The model (overrides `LLMResource.model`).", LLM)
    llm_base_url = Var(
        "SYNIX_LLM_BASE_URL", _text, "URL", "the provider's (openai-compatible: "
        "`http://localhost:11434/v1`)", "an http(s) URL", "The model server's URL.", LLM)
    llm_api_key = Var(
        "SYNIX_LLM_API_KEY", _text, "secret", "ANTHROPIC_API_KEY or OPENAI_API_KEY", "text",
        "The provider's API key.", LLM)
    llm_context_tokens = Var(
        "SYNIX_LLM_CONTEXT_TOKENS", _llm_count(
            "SYNIX_LLM_CONTEXT_TOKENS", CONTEXT_TOKENS, "a context window size",
            "set it to the model's context length in tokens, e.g. 8192", "the model's"),
        "int (tokens)", "the model's (local openai-compatible servers: 8192)", CONTEXT_TOKENS.text,
        "The model's context window, for local servers whose size only their user knows.", LLM)
    llm_concurrency = Var(
        "SYNIX_LLM_CONCURRENCY", _llm_count(
            "SYNIX_LLM_CONCURRENCY", CONCURRENCY, "a number of requests",
            "set it to a whole number of concurrent requests, e.g. 4", "16"),
        "int", "16 (`LLMResource.concurrency`)", CONCURRENCY.text,
        "LLM requests in flight at once per process (lower for a rate-limited key).", LLM)
    llm_shared_limit_url = Var(
        "SYNIX_LLM_SHARED_LIMIT_URL", _llm_url, "URL", "none: each process has its own budget",
        "a Redis URL", "Where the request budget shared by every worker of a distributed build "
        "is kept (e.g. the Celery broker's Redis).", LLM)
    llm_max_requests_per_s = Var(
        "SYNIX_LLM_MAX_REQUESTS_PER_S", _llm_number("SYNIX_LLM_MAX_REQUESTS_PER_S", MAX_REQUESTS_PER_S, "0"),
        "float (requests/s)", "`LLMResource.max_requests_per_s` (0)",
        f"{MAX_REQUESTS_PER_S.text}; ≥ 1 when SYNIX_LLM_SHARED_LIMIT_URL is set", "The shared request budget.", LLM)
    fake_latency_s = Var(
        "SYNIX_FAKE_LATENCY_S", _llm_number("SYNIX_FAKE_LATENCY_S", FAKE_LATENCY_S, "0"), "float (seconds)", "0",
        FAKE_LATENCY_S.text, "Latency of each call of the `fake` provider (tests, benchmarks).", LLM)
    fake_failure_rate = Var(
        "SYNIX_FAKE_FAILURE_RATE", _llm_number("SYNIX_FAKE_FAILURE_RATE", FAKE_FAILURE_RATE, "0"), "float", "0",
        FAKE_FAILURE_RATE.text, "Share of the `fake` provider's calls that fail (tests, benchmarks).", LLM)

    anthropic_api_key = Var(
        "ANTHROPIC_API_KEY", _text, "secret", "none", "text",
        "Anthropic's API key: selects the `anthropic` provider when no provider is set; "
        "`synix ask` uses it for its agent.", OTHER)
    openai_api_key = Var(
        "OPENAI_API_KEY", _text, "secret", "none", "text",
        "API key of the `openai-compatible` provider when SYNIX_LLM_API_KEY is unset.", OTHER)
    dagster_home = Var(
        "DAGSTER_HOME", _text, "folder", "none", "a folder",
        "Dagster's instance. Synix sets it to the project's `.synix/dagster` for its own runs; "
        "when a project's definitions load with it set (`dagster dev`, the daemon), its storage "
        "is tuned and the Synix records are synced into it.", OTHER)
    editor = Var(
        "EDITOR", _or(DEFAULT_EDITOR), "command", DEFAULT_EDITOR, "a program",
        "The editor `synix branch edit` opens.", OTHER)


def settings(env: Mapping[str, str] | None = None) -> Settings:
    """The settings of `env` (the process environment by default), read now."""
    env = os.environ if env is None else env
    return Settings({v.name: env[v.name] for v in variables() if v.name in env})


def variables() -> list[Var]:
    """Every declared variable, in declaration order."""
    return [v for v in vars(Settings).values() if isinstance(v, Var)]


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_doc() -> str:
    """docs/configuration.md: one table per group."""
    lines = ["# Configuration", "",
             "Synix reads these environment variables (declared in `synix_resources/settings.py`, "
             "which renders this page: `python -m synix_resources.settings > docs/configuration.md`). "
             "A command-line option given beats its variable; the LLM variables override the "
             "fields of a project's `LLMResource`.", ""]
    for group in GROUPS:
        lines += [f"## {group}", "",
                  "| variable | type | default | range | meaning |",
                  "|---|---|---|---|---|"]
        lines += [f"| `{v.name}` | {_cell(v.type)} | {_cell(v.default)} | {_cell(v.range)} | "
                  f"{_cell(v.doc)} |" for v in variables() if v.group == group]
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(render_doc(), end="")

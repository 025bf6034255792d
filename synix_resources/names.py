"""One validator per kind of name: branch, tenant, live id (session, user, idempotency key),
layer and project. The CLI, the Python API, the HTTP servers, MCP and live ingest all call these,
before anything touches the disk, so no interface accepts a name another refuses.

Every rule is a whole-string match (`re.fullmatch`): `$` would also accept a trailing newline,
and `acme\\n` would then be a second tenant whose folder and `.env` are not what they look like.
No rule accepts '', '.', '..', a slash or a control character, so a name joined to a folder
always stays one level inside it.
"""
from __future__ import annotations

import re
from typing import Any

from synix_resources.errors import (InvalidBranchName, InvalidLayerName, InvalidLiveId,
                                    InvalidMemoryId, InvalidName, InvalidProjectName,
                                    InvalidTenantName)

MAIN = "main"
SNAPSHOT_SUFFIX = "@previous"  # `main@previous`: the restore point a promote leaves

BRANCH = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
BRANCH_RULE = ("use 1-63 letters, digits, '-', '_' and '.', starting with a letter or digit "
               "and not ending in '.lock'")
TENANT = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")
TENANT_RULE = "use 1-40 lowercase letters, digits and '-', starting with a letter or digit"
# Session, user and idempotency ids: readable, safe as Dagster partition keys and in URLs.
LIVE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,79}")
LIVE_ID_RULE = "use 1-80 letters, digits, '.', '_', ':' or '-', starting with a letter or digit"
# Layers (and the sources and projections beside them) are Dagster asset names: any letters
# and digits, '-' and '_' (`\w` is exactly str.isalnum() plus '_', the rule before this module).
LAYER = re.compile(r"[\w-]+")
LAYER_RULE = "use letters, digits, '-' and '_'"
PROJECT = re.compile(r"[^\W_](?:[\w .-]{0,78}[\w.-])?")
PROJECT_RULE = ("use 1-80 letters, digits, spaces, '-', '_' and '.', starting with a letter or "
                "digit and not ending in a space")
MEMORY_ID = re.compile(r"mem-[0-9a-f]{16}")
LINK_ID = re.compile(r"link-[0-9a-f]{16}")
MEMORY_ID_RULE = "a memory id is 'mem-' and 16 hex digits, as create_memory answered"
LINK_ID_RULE = "a link id is 'link-' and 16 hex digits, as create_link answered"
_SHOWN = 60


def shown(value: Any) -> str:
    """A name as it may appear in a one-line message: repr-escaped (newlines, surrogates and
    quotes visible), cut at 60 characters; the type for a non-string."""
    if not isinstance(value, str):
        return f"(a {type(value).__name__}, not text)"
    return repr(value[:_SHOWN]) + ("…" if len(value) > _SHOWN else "")


def _check(value: Any, pattern: re.Pattern, error: type[InvalidName], message: str, rule: str) -> str:
    """`message` has a `{}` where the (shown) name goes."""
    if not isinstance(value, str) or pattern.fullmatch(value) is None:
        raise error(f"{message.format(shown(value))}: {rule}")
    return value


def check_branch(name: Any, *, new: bool = False) -> str:
    """A branch name, or a `NAME@previous` snapshot of one; with `new`, a name a new branch may
    take (not main, not a snapshot)."""
    base = name[:-len(SNAPSHOT_SUFFIX)] if isinstance(name, str) and name.endswith(SNAPSHOT_SUFFIX) else name
    if not isinstance(base, str) or BRANCH.fullmatch(base) is None or base.endswith(".lock"):
        raise InvalidBranchName(f"invalid branch name {shown(name)}: {BRANCH_RULE}")
    if new and (name == MAIN or base != name):
        raise InvalidBranchName(f"cannot create a branch named {shown(name)}: the name is reserved",
                                hint="pick another name")
    return name


def check_tenant(name: Any) -> str:
    return _check(name, TENANT, InvalidTenantName, "tenant name {} is not allowed", TENANT_RULE)


def check_live_id(value: Any, field: str = "session_id") -> str:
    """A session id (or, naming `field`, a user id or idempotency key) of live ingest."""
    return _check(value, LIVE_ID, InvalidLiveId, field + " {} is not valid", LIVE_ID_RULE)


def check_session_id(value: Any) -> str:
    return check_live_id(value, "session_id")


def check_layer(name: Any) -> str:
    """A layer's name (sources and projections share the rule and the namespace)."""
    return _check(name, LAYER, InvalidLayerName, "layer name {} is not allowed", LAYER_RULE)


def check_project(name: Any) -> str:
    """A project's (pipeline's) name: `Pipeline("personal-memory")`."""
    return _check(name, PROJECT, InvalidProjectName, "project name {} is not allowed", PROJECT_RULE)


def check_memory_id(value: Any, field: str = "memory_id") -> str:
    """An agent memory's id (`mem-` and 16 hex digits)."""
    return _check(value, MEMORY_ID, InvalidMemoryId, field + " {} is not valid", MEMORY_ID_RULE)


def check_link_id(value: Any) -> str:
    return _check(value, LINK_ID, InvalidMemoryId, "link id {} is not valid", LINK_ID_RULE)

"""The provider:model a build will use, resolved without sending anything (for code versions)."""
from __future__ import annotations

from synix_resources.errors import LLMConfigError
from synix_resources.llm.factory import quiet_client


def llm_identity(**config) -> str:
    """`provider:model` of the client `make_client(**config)` would build; a misconfigured
    provider yields `provider:?` here and fails loudly when a build actually runs."""
    try:
        client = quiet_client(**config)
    except LLMConfigError:
        return f"{config.get('provider') or 'anthropic'}:?"
    try:
        return f"{client.provider}:{client.model}"
    finally:
        client.close()

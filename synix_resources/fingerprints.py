"""Content fingerprints and materialization keys: small pure functions.

Contract: the same inputs give the same key on every machine and run; any change to an input
that can change the output changes the key. Keys are hex SHA-256 digests.
"""
from __future__ import annotations

import hashlib
import json
import unicodedata
from typing import Any, Iterable


def normalise_text(text: str) -> str:
    """NFC, LF line endings, trailing whitespace stripped per line and at the end."""
    text = unicodedata.normalize("NFC", text).replace("\r\n", "\n").replace("\r", "\n")
    return "\n".join(line.rstrip() for line in text.split("\n")).rstrip()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def content_hash(text: str) -> str:
    """SHA-256 of the normalised UTF-8 content."""
    return sha256_text(normalise_text(text))


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def config_hash(value: Any) -> str:
    return sha256_text(canonical_json(value))


def step_version(step_type: str, prompt_identity: str, model_config: dict, step_config: dict) -> str:
    """Version of a step: changes exactly when its type, prompt, model settings or config change."""
    return config_hash({"type": step_type, "prompt": prompt_identity,
                        "model": model_config, "config": step_config})


def combined_fingerprint(content_hashes: Iterable[str]) -> str:
    """Order-independent fingerprint of a set of inputs (aggregates)."""
    return sha256_text("\n".join(sorted(content_hashes)))


def sequence_fingerprint(content_hashes: Iterable[str]) -> str:
    """Order-dependent fingerprint of a sequence of inputs (folds, checkpoint prefixes)."""
    return sha256_text("\n".join(content_hashes))


def transform_key(step: str, input_artifact_id: str, version: str) -> str:
    return sha256_text(canonical_json(["transform", step, input_artifact_id, version]))


def aggregate_key(step: str, group_key: str, combined: str, version: str) -> str:
    return sha256_text(canonical_json(["aggregate", step, group_key, combined, version]))


def fold_key(step: str, sequence: str, version: str) -> str:
    return sha256_text(canonical_json(["fold", step, sequence, version]))


def merge_key(step: str, dedupe_key: str, version: str) -> str:
    return sha256_text(canonical_json(["merge", step, dedupe_key, version]))


def source_key(step: str, conversation_hash: str, version: str) -> str:
    """Key of a transcript: the parsed conversation's content plus the parser version."""
    return sha256_text(canonical_json(["source", step, conversation_hash, version]))


def artifact_id(layer: str, group_key: str, materialization_key: str) -> str:
    """Artifact identity: layer + group key + materialization key, never content alone."""
    digest = sha256_text(canonical_json([layer, group_key, materialization_key]))[:16]
    return f"{layer}-{digest}"

"""Field-level encryption of the artifact store (design 001): chosen fields — an artifact's
`content`, chosen `metadata` keys — are stored as AES-256-GCM ciphertext under SYNIX_FIELD_KEY,
so the store file (or a PostgreSQL database and its backups) never holds their text; everything
above the store sees plaintext.

A sealed value is text: `synix:enc:v1:` + URL-safe base64 of (12-byte random nonce, ciphertext
and tag). The associated data binds it to its place (`<artifact id>/content`,
`<artifact id>/metadata.<key>`): a value copied into another row or field does not decrypt.
What stays readable, by design: ids, layers, group keys, content hashes (they decide rebuilds
without decrypting), edges, dates and the other metadata keys.
"""
from __future__ import annotations

import base64
import binascii
import json
import os
from dataclasses import dataclass
from typing import Any

from synix_resources.errors import FieldKeyError
from synix_resources.settings import settings

PREFIX = "synix:enc:v1:"
VAR = "SYNIX_FIELD_KEY"
FIELDS_VAR = "SYNIX_ENCRYPTED_FIELDS"
MAKE_ONE = ("make one with `python -c \"from synix_resources.field_crypto import new_key; "
            "print(new_key())\"`")


def new_key() -> str:
    """A fresh key, as SYNIX_FIELD_KEY takes it."""
    return base64.urlsafe_b64encode(os.urandom(32)).decode()


def is_sealed(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(PREFIX)


@dataclass(frozen=True)
class FieldCipher:
    """Seals and opens the chosen fields; `key=None`: nothing is sealed, and a sealed value met
    on reading is a one-line error naming SYNIX_FIELD_KEY."""

    key: bytes | None
    content: bool = True
    metadata_keys: frozenset[str] = frozenset()

    @classmethod
    def from_text(cls, key_text: str | None, fields_text: str = "content") -> "FieldCipher":
        key = None
        if key_text:
            try:
                key = base64.urlsafe_b64decode(key_text.strip().encode() + b"==")
            except (binascii.Error, ValueError):
                key = b""
            if len(key) != 32:
                raise FieldKeyError(f"{VAR} is not 32 bytes in URL-safe base64", hint=MAKE_ONE)
        names = [f.strip() for f in (fields_text or "").split(",") if f.strip()]
        bad = [n for n in names if n != "content" and not (n.startswith("metadata.") and len(n) > 9)]
        if bad:
            raise FieldKeyError(f"{FIELDS_VAR} names {bad[0]!r}, which is not a field",
                                hint="use `content` and/or `metadata.KEY`, comma-separated")
        return cls(key, "content" in names,
                   frozenset(n.removeprefix("metadata.") for n in names if n.startswith("metadata.")))

    @classmethod
    def from_settings(cls, key_text: str | None = None) -> "FieldCipher":
        """The deployment's cipher; `key_text` (a Dagster resource's `dg.EnvVar`) wins."""
        config = settings()
        return cls.from_text(key_text or config.field_key, config.encrypted_fields)

    @property
    def active(self) -> bool:
        return self.key is not None

    def _aead(self):
        try:
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        except ImportError:
            raise FieldKeyError(f"{VAR} is set but the cryptography package is not installed",
                                hint="pip install 'synix[encryption]'") from None
        return AESGCM(self.key)

    def seal(self, text: str, where: str) -> str:
        nonce = os.urandom(12)
        sealed = self._aead().encrypt(nonce, text.encode("utf-8"), where.encode("utf-8"))
        return PREFIX + base64.urlsafe_b64encode(nonce + sealed).decode()

    def open(self, value: str, where: str, label: str | None = None) -> str:
        """The text of a sealed `value` bound to `where` (`label` names it in errors)."""
        label = label or where
        if not is_sealed(value):
            return value  # written before encryption was on, or a field not chosen
        if self.key is None:
            raise FieldKeyError(f"{label} is encrypted and {VAR} is not set",
                                hint=f"set {VAR} to the key the store was written with")
        from cryptography.exceptions import InvalidTag

        try:
            raw = base64.urlsafe_b64decode(value[len(PREFIX):].encode())
            return self._aead().decrypt(raw[:12], raw[12:], where.encode("utf-8")).decode("utf-8")
        except (InvalidTag, binascii.Error, ValueError):
            raise FieldKeyError(f"cannot decrypt {label}: {VAR} is not the key it was encrypted with",
                                hint=f"set {VAR} to the key the store was written with") from None

    # ---- an artifact's fields ----------------------------------------------------------------
    def seal_artifact(self, artifact_id: str, content: str, metadata: dict) -> tuple[str, dict]:
        if self.key is None:
            return content, metadata
        if self.content:
            content = self.seal(content, f"{artifact_id}/content")
        if self.metadata_keys:
            metadata = {k: self.seal(_json_text(v), f"{artifact_id}/metadata.{k}")
                        if k in self.metadata_keys else v for k, v in metadata.items()}
        return content, metadata

    def open_row(self, artifact_id: str, content: str, metadata_text: str) -> tuple[str, dict]:
        """`open_artifact` of a stored row, its metadata as stored (JSON). A value is sealed only
        if the text holds PREFIX (ASCII, which JSON writes as is): without it no value is
        looked at (at 10,000 conversations, 310,000 values in a read of every outline)."""
        metadata = json.loads(metadata_text)
        if PREFIX not in metadata_text:
            return self.open(content, f"{artifact_id}/content", f"artifact {artifact_id}'s content"), metadata
        return self.open_artifact(artifact_id, content, metadata)

    def open_artifact(self, artifact_id: str, content: str, metadata: dict) -> tuple[str, dict]:
        content = self.open(content, f"{artifact_id}/content", f"artifact {artifact_id}'s content")
        if any(is_sealed(v) for v in metadata.values()):
            metadata = {k: json.loads(self.open(v, f"{artifact_id}/metadata.{k}",
                                                f"artifact {artifact_id}'s metadata.{k}"))
                        if is_sealed(v) else v for k, v in metadata.items()}
        return content, metadata


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)

"""The tool's RSA signing keys: generated at first use, kept as PEM files readable only by the service
(mode 0600 in a 0700 directory), rotatable; a retired key stays in the JWKS for `retention_s` so tokens
and assertions signed just before a rotation still verify, then it is deleted.

Files are named `<created unix time in ns>-<random>.pem`; the name without `.pem` is the key id (kid) and the
newest file is the active key.
"""

from __future__ import annotations

import itertools
import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

KEY_BITS = 2048


@dataclass(frozen=True, slots=True)
class ToolKey:
    kid: str
    private_pem: bytes
    created_s: float

    def public_jwk(self) -> dict:
        private = serialization.load_pem_private_key(self.private_pem, password=None)
        assert isinstance(private, rsa.RSAPrivateKey)
        public = private.public_key()
        jwk = json.loads(RSAAlgorithm.to_jwk(public))
        return {**jwk, "kid": self.kid, "alg": "RS256", "use": "sig"}


class KeyStore:
    def __init__(self, directory: Path, *, retention_s: float) -> None:
        self.directory = Path(directory)
        self.retention_s = retention_s

    def _files(self) -> list[Path]:
        if not self.directory.is_dir():
            return []
        return sorted(self.directory.glob("*.pem"), key=lambda p: (int(p.stem.split("-")[0]), p.stem))

    def keys(self) -> list[ToolKey]:
        return [ToolKey(p.stem, p.read_bytes(), int(p.stem.split("-")[0]) / 1e9) for p in self._files()]

    def active(self) -> ToolKey:
        """The newest key, generated if there is none yet (first start)."""
        keys = self.keys()
        return keys[-1] if keys else self.rotate()

    def rotate(self) -> ToolKey:
        """Make a new active key; keys retired more than `retention_s` ago are deleted."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.directory, 0o700)
        pem = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        now_ns = max([time.time_ns(), *(int(k.kid.split("-")[0]) + 1 for k in self.keys())])  # strictly newest
        kid = f"{now_ns}-{secrets.token_hex(4)}"
        path = self.directory / f"{kid}.pem"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(pem)
        self.prune()
        return ToolKey(kid, pem, now_ns / 1e9)

    def prune(self) -> list[str]:
        """Delete keys whose successor has been active longer than `retention_s`; returns their kids."""
        keys, gone = self.keys(), []
        for older, newer in itertools.pairwise(keys):
            if time.time() - newer.created_s > self.retention_s:
                (self.directory / f"{older.kid}.pem").unlink(missing_ok=True)
                gone.append(older.kid)
        return gone

    def jwks(self) -> dict:
        """The public keys (active and retained), newest first; generates the first key if needed."""
        self.active()
        self.prune()
        return {"keys": [k.public_jwk() for k in reversed(self.keys())]}


def key_store(settings) -> KeyStore:
    return KeyStore(settings.lti_key_dir, retention_s=settings.lti_key_retention_s)

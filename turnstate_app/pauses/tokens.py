"""Signed tokens: the claims, and only the claims, under Django's signing with our own salt.

The prompt, the transcript and the request never travel in a token; they stay in the
store, which is what lets a token be small and a leak of one reveal little.
"""

from __future__ import annotations

import json
from math import ceil
from typing import Any

from django.conf import settings
from django.core import signing
from django.utils.crypto import salted_hmac
from django.utils.encoding import force_bytes
from pydantic import ValidationError

from turnstate_app.contracts import PauseClaims
from turnstate_app.errors import TokenSignatureError
from turnstate_app.managers import CLAIM_FIELDS
from turnstate_app.ports.limits import ID_MAX_LENGTH

TOKEN_SALT = "turnstate_app.pauses.token"


class CompactJSONSerializer:
    """Claims as UTF-8 JSON: a 4-byte character costs 4 bytes, not the 12 of ``\\ud83d\\ude00``.

    Reads the ASCII JSON of Django's own serializer unchanged (ASCII is UTF-8), so tokens
    minted before it was used still verify.
    """

    def dumps(self, obj: Any) -> bytes:
        text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
        return text.encode("utf-8", "surrogatepass")

    def loads(self, data: bytes) -> Any:
        return json.loads(data.decode("utf-8", "surrogatepass"))


def _max_token_chars() -> int:
    """The longest token a mint can issue for ids within the documented limits, with room to spare.

    Derived, not chosen: every claim at ``ID_MAX_LENGTH`` characters, each the costliest to
    encode (a control character is 6 bytes of JSON, ``\\u0001``), a 64-character jti; then
    zlib's worst-case growth, base64's 4/3 and the timestamp and signature. A token longer
    than this cannot have been minted here, so it is refused before any crypto runs.
    """
    json_bytes = 2 + sum(len(name) + 4 for name in CLAIM_FIELDS) + len(CLAIM_FIELDS)
    json_bytes += (len(CLAIM_FIELDS) - 1) * ID_MAX_LENGTH * 6 + 64 * 6
    compressed = json_bytes + (json_bytes >> 12) + (json_bytes >> 14) + 64
    return 1 + 4 * ceil(compressed / 3) + 256  # "." + base64 + ":timestamp:signature"


MAX_TOKEN_CHARS = _max_token_chars()


class _TokenSigner(signing.TimestampSigner):
    """Django's ``TimestampSigner`` under our salt, each key's HMAC derived once instead of per call.

    ``salted_hmac`` hashes the salt and the secret into the HMAC key on every signature; here
    that keyed HMAC is made once per key and copied for each value, which yields the same
    digest (HMAC over ``value`` alone). Everything else is Django's: the format, the
    timestamp, the constant-time comparison, ``SECRET_KEY_FALLBACKS``.
    """

    def __init__(self, key: Any, fallback_keys: list[Any]) -> None:
        super().__init__(key=key, fallback_keys=fallback_keys, salt=TOKEN_SALT)
        self._macs: dict[Any, Any] = {}

    def signature(self, value: Any, key: Any = None) -> str:
        key = key or self.key
        mac = self._macs.get(key)
        if mac is None:
            mac = self._macs[key] = salted_hmac(f"{TOKEN_SALT}signer", b"", key, algorithm=self.algorithm)
        keyed = mac.copy()
        keyed.update(force_bytes(value))
        return signing.b64_encode(keyed.digest()).decode()


_signers: dict[tuple[Any, tuple[Any, ...]], _TokenSigner] = {}


def _signer() -> _TokenSigner:
    """The signer for the current ``SECRET_KEY`` and ``SECRET_KEY_FALLBACKS`` (rebuilt when they change)."""
    fallbacks = tuple(settings.SECRET_KEY_FALLBACKS)
    keys = (settings.SECRET_KEY, fallbacks)
    signer = _signers.get(keys)
    if signer is None:
        _signers.clear()  # only the settings in force matter
        signer = _signers[keys] = _TokenSigner(keys[0], list(fallbacks))
    return signer


def sign_claims(claims: PauseClaims) -> str:
    """``signing.dumps`` of the claims, compressed, under :data:`TOKEN_SALT`."""
    token: str = _signer().sign_object(
        claims.model_dump(exclude_none=True), serializer=CompactJSONSerializer, compress=True
    )
    return token


def read_token(token: object) -> PauseClaims:
    """The claims a token carries, or :class:`TokenSignatureError` (a ``PayloadBindingError``) if it fails.

    Keys in ``SECRET_KEY_FALLBACKS`` still verify, so secret keys can be rotated without
    stranding pauses in flight.
    """
    if not isinstance(token, str) or not token:
        raise TokenSignatureError("a pause token is a non-empty string")
    if len(token) > MAX_TOKEN_CHARS:
        raise TokenSignatureError(f"a pause token is at most {MAX_TOKEN_CHARS} characters")
    try:
        payload = _signer().unsign_object(token, serializer=CompactJSONSerializer)
    except (signing.BadSignature, ValueError, UnicodeError) as exc:
        raise TokenSignatureError("the pause token fails its signature check") from exc
    try:
        claims = PauseClaims.model_validate(payload)
    except ValidationError as exc:
        raise TokenSignatureError("the pause token is signed but does not carry pause claims") from exc
    if not claims.jti:
        raise TokenSignatureError("the pause token's claims carry no jti")
    return claims

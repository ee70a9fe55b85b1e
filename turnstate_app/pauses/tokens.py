"""Signed tokens: the claims, and only the claims, under Django's signing with our own salt.

The prompt, the transcript and the request never travel in a token; they stay in the
store, which is what lets a token be small and a leak of one reveal little.
"""

from __future__ import annotations

from django.core import signing
from pydantic import ValidationError

from turnstate_app.contracts import PauseClaims
from turnstate_app.errors import TokenSignatureError

TOKEN_SALT = "turnstate_app.pauses.token"
MAX_TOKEN_CHARS = 4096
"""Far above any token this app mints; longer input is refused before any crypto runs."""


def sign_claims(claims: PauseClaims) -> str:
    return signing.dumps(claims.model_dump(exclude_none=True), salt=TOKEN_SALT, compress=True)


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
        payload = signing.loads(token, salt=TOKEN_SALT)
    except (signing.BadSignature, ValueError, UnicodeError) as exc:
        raise TokenSignatureError("the pause token fails its signature check") from exc
    try:
        claims = PauseClaims.model_validate(payload)
    except ValidationError as exc:
        raise TokenSignatureError("the pause token is signed but does not carry pause claims") from exc
    if not claims.jti:
        raise TokenSignatureError("the pause token's claims carry no jti")
    return claims

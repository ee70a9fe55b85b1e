"""Values at rest: the one place the cipher lives (``cryptography``'s Fernet, nothing of our own).

Every table that holds a person's data (the store's requests, turn states and answers, the
LangGraph saver's checkpoints, channel values and writes, the PydanticAI store's entries, and
any integration's rows) calls :func:`seal` before it writes and :func:`unseal` after it reads.
Which key wrote a value is stored beside it, in a column of its own (None: stored clear), so a
value is never guessed at: it is read with exactly that key or refused.

The keys are ``TURNSTATE["ENCRYPTION_KEYS"]`` (the first encrypts, every one decrypts), or,
when ``TURNSTATE["ENCRYPTION_KEY_RING"]`` names a ``callable(thread_id) -> list[str]``, the
keys that callable gives for the row's thread: give a tenant a new key in place of its old ones
and its rows become unreadable records (crypto-shredding). Without keys (``ENCRYPTION_KEYS``
empty, no ring), values are stored clear, as before.

Keys never fail open: a ring that raises, or gives anything but a non-empty list (or tuple) of
Fernet keys, and ``ENCRYPTION_KEYS`` that is not a list of Fernet keys, raise
:class:`KeyRingError` on every write and every read of a sealed value; nothing is stored clear.

``cryptography`` is imported only when keys are configured (extra ``encryption``).

An integration calls these four, nothing else::

    stored, key_id = seal(data, thread_id=thread)          # bytes in, bytes out
    data = unseal(stored, key_id, thread_id=thread)        # UnreadableValueError when it cannot
    text, key_id = seal_text(text, thread_id=thread)       # for text columns (ASCII tokens)
    text = unseal_text(text, key_id, thread_id=thread)
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from django.utils.module_loading import import_string

from turnstate_app.conf import conf
from turnstate_app.errors import InteractionConfigurationError, KeyRingError, UnreadableValueError

if TYPE_CHECKING:
    from cryptography.fernet import Fernet

__all__ = [
    "KEY_ID_LENGTH",
    "KeyRingError",
    "KeySet",
    "UnreadableValueError",
    "current_key_id",
    "key_id_of",
    "key_problem",
    "encryption_configured",
    "keys_for",
    "largest_sealable",
    "seal",
    "seal_text",
    "sealed_length",
    "unseal",
    "unseal_text",
]

KEY_ID_LENGTH = 16
"""Hex digits of a key id: the first 8 bytes of a SHA-256 of the key, never the key itself."""

GENERATE_KEY = 'python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())"'


def key_problem(key: Any) -> str | None:
    """Why ``key`` is not a Fernet key, or None when it is one (or ``cryptography``, which alone
    decides, is not installed: check E020 says so).

    The rule is ``Fernet(key)`` itself, so a key passes here exactly when every write with it
    would work; the words only explain Fernet's refusal, and never repeat the key."""
    if not isinstance(key, str):
        return f"must be a str, not {type(key).__name__}"
    try:
        from cryptography.fernet import Fernet
    except ImportError:
        return None
    try:
        Fernet(key)
    except (TypeError, ValueError):
        return _why_not(key)
    return None


def _why_not(key: str) -> str:
    """Fernet's refusal of ``key`` in words a person can act on."""
    if "+" in key or "/" in key:
        return "holds '+' or '/': that is standard base64, a Fernet key is url-safe base64 ('-', '_')"
    try:
        raw = base64.urlsafe_b64decode(key.encode("ascii") + b"==")
    except ValueError:  # binascii.Error and UnicodeEncodeError are ValueErrors
        return "is not url-safe base64"
    if len(raw) != 32:
        return f"decodes to {len(raw)} bytes, not 32"
    return "is not a Fernet key (32 url-safe base64-encoded bytes)"


_FERNET_OVERHEAD = 1 + 8 + 16 + 32  # version, timestamp, IV, HMAC; then the padded AES-CBC ciphertext


def sealed_length(plaintext_bytes: int) -> int:
    """The length of the token that ``plaintext_bytes`` bytes make (what a column then holds)."""
    raw = _FERNET_OVERHEAD + 16 * (plaintext_bytes // 16 + 1)
    return 4 * -(-raw // 3)


def largest_sealable(token_length: int) -> int:
    """The most plaintext bytes whose token is at most ``token_length`` long."""
    ciphertext = token_length // 4 * 3 - _FERNET_OVERHEAD
    return max(0, ciphertext // 16 * 16 - 1)


def encryption_configured() -> bool:
    """Whether values may be written encrypted (keys, or a key ring, are set)."""
    return bool(conf.ENCRYPTION_KEYS) or conf.ENCRYPTION_KEY_RING is not None


def key_id_of(key: str) -> str:
    """The id stored beside every value ``key`` encrypted; it reveals nothing of the key.

    Padding is appended because Fernet takes a key without it: the id is the decoded key's,
    however the key was written (a decoder stops at the first complete padding)."""
    raw = base64.urlsafe_b64decode(key.encode("ascii") + b"==")
    return hashlib.sha256(b"turnstate-key-id:" + raw).hexdigest()[:KEY_ID_LENGTH]


@dataclass(frozen=True)
class KeySet:
    """The keys of one thread: the first encrypts, each decrypts what it wrote (by key id)."""

    primary_id: str
    primary: Fernet
    by_id: dict[str, Fernet]
    invalid_token: type[Exception]


@lru_cache(maxsize=256)
def _key_set(keys: tuple[str, ...]) -> KeySet:
    try:
        from cryptography.fernet import Fernet, InvalidToken
    except ImportError as exc:
        raise InteractionConfigurationError(
            "TURNSTATE['ENCRYPTION_KEYS'] is set but the 'cryptography' package is not installed: "
            "pip install 'turnstate-app[encryption]'"
        ) from exc
    for position, key in enumerate(keys):
        problem = key_problem(key)
        if problem is not None:  # never the key itself; the caller names the thread and the ring
            raise KeyRingError(f"key #{position} {problem}")
    by_id = {key_id_of(key): Fernet(key) for key in reversed(keys)}
    primary_id = key_id_of(keys[0])
    return KeySet(primary_id=primary_id, primary=by_id[primary_id], by_id=by_id, invalid_token=InvalidToken)


@lru_cache(maxsize=8)
def _ring(path: str) -> Any:
    return import_string(path)


def keys_for(thread_id: str) -> KeySet | None:
    """The keys that apply to ``thread_id`` (None: no keys are configured, values are stored clear).

    Called on every read and write of a value: the settings' resolved dict is read directly.
    :class:`KeyRingError` when the keys cannot be had, so nothing is ever written clear because
    a ring failed or gave the wrong thing."""
    values = conf.values()
    ring = values["ENCRYPTION_KEY_RING"]
    if ring is None:
        keys = values["ENCRYPTION_KEYS"]
        if isinstance(keys, list | tuple) and not keys:
            return None
        return _usable(keys, thread_id, "TURNSTATE['ENCRYPTION_KEYS']")
    source = f"the key ring TURNSTATE['ENCRYPTION_KEY_RING'] = {str(ring)!r}"
    try:
        keys = _ring(str(ring))(thread_id)
    except Exception as exc:  # whatever the ring's own failure, the values stay sealed
        raise KeyRingError(f"{source} raised {type(exc).__name__} for thread {thread_id!r}") from exc
    return _usable(keys, thread_id, source)


def _usable(keys: Any, thread_id: str, source: str) -> KeySet:
    """``keys`` as a key set when they are a non-empty list (or tuple) of Fernet keys."""
    if not isinstance(keys, list | tuple):
        raise KeyRingError(
            f"{source} gave {type(keys).__name__} for thread {thread_id!r}, not a list of Fernet keys (str)"
        )
    if not keys:
        raise KeyRingError(
            f"{source} gave no keys for thread {thread_id!r}: at least one is needed (the first encrypts)"
        )
    for position, key in enumerate(keys):
        if not isinstance(key, str):  # a tuple of them is the cache's key: str only
            raise KeyRingError(
                f"{source} for thread {thread_id!r}: key #{position} must be a str, not {type(key).__name__}"
            )
    try:
        return _key_set(tuple(keys))
    except KeyRingError as problem:
        raise KeyRingError(f"{source} for thread {thread_id!r}: {problem}") from None


def current_key_id(thread_id: str) -> str | None:
    """The id of the key a value of ``thread_id`` is written with now (None: clear)."""
    found = keys_for(thread_id)
    return None if found is None else found.primary_id


def seal(data: bytes, *, thread_id: str) -> tuple[bytes, str | None]:
    """``data`` as stored: a Fernet token and its key id, or ``data`` itself and None (no keys)."""
    found = keys_for(thread_id)
    if found is None:
        return data, None
    return found.primary.encrypt(data), found.primary_id


def unseal(stored: bytes, key_id: str | None, *, thread_id: str) -> bytes:
    """The plaintext of a stored value; :class:`UnreadableValueError` when its key is not configured
    for ``thread_id`` or the token fails authentication. The error never holds the value."""
    if key_id is None:
        return stored
    found = keys_for(thread_id)
    fernet = None if found is None else found.by_id.get(key_id)
    if fernet is None:
        raise UnreadableValueError(
            f"a value of thread {thread_id!r} was encrypted with key {key_id}, which is not among "
            "the keys configured for it (TURNSTATE['ENCRYPTION_KEYS'] / ENCRYPTION_KEY_RING)"
        )
    assert found is not None
    try:
        return fernet.decrypt(stored)
    except found.invalid_token:
        raise UnreadableValueError(
            f"a value of thread {thread_id!r} does not authenticate under its key {key_id}: "
            "altered or truncated at rest"
        ) from None


def seal_text(text: str, *, thread_id: str) -> tuple[str, str | None]:
    """:func:`seal` for a text column: the token is ASCII, the plaintext UTF-8."""
    found = keys_for(thread_id)
    if found is None:
        return text, None
    return found.primary.encrypt(text.encode("utf-8")).decode("ascii"), found.primary_id


def unseal_text(stored: str, key_id: str | None, *, thread_id: str) -> str:
    """:func:`unseal` for a text column."""
    if key_id is None:
        return stored
    try:
        token = stored.encode("ascii")
    except UnicodeEncodeError:
        token = b""  # not a token: fails authentication below, as any altered value does
    plain = unseal(token, key_id, thread_id=thread_id)
    try:
        return plain.decode("utf-8")
    except UnicodeDecodeError:
        raise UnreadableValueError(
            f"a value of thread {thread_id!r} is not UTF-8 text once decrypted"
        ) from None

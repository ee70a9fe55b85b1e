"""Cursor pages in ``created_at`` then ``id`` order, with every query parameter checked.

A cursor (rather than page numbers) keeps a walk through the list free of duplicates and
gaps while rows are being added, and costs no ``COUNT``. DRF's cursor trusts the position
it decodes; a forged one would reach the database as an unparsable date and fail there,
so the cursor is read strictly here and a bad one is a 400 like any other bad parameter.
"""

from __future__ import annotations

import re
from base64 import b64decode
from binascii import Error as BinasciiError
from datetime import UTC
from typing import Any
from urllib.parse import parse_qs

from django.utils.dateparse import parse_datetime
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import Cursor, CursorPagination
from rest_framework.request import Request

PAGE_SIZE = 50
MAX_PAGE_SIZE = 200


class CreatedCursorPagination(CursorPagination):
    """``{"next", "previous", "results"}``; ``page_size`` from 1 to 200 (default 50)."""

    ordering = ("created_at", "id")
    page_size = PAGE_SIZE
    max_page_size = MAX_PAGE_SIZE
    page_size_query_param = "page_size"
    page_size_query_description = f"Rows per page, 1 to {MAX_PAGE_SIZE} (default {PAGE_SIZE})."
    invalid_cursor_message = "Invalid cursor."

    def get_page_size(self, request: Request) -> int:
        """The requested size, or the default. Out of range or not a number: a 400, not a fallback."""
        if self.page_size_query_param not in request.query_params:
            return PAGE_SIZE
        raw = request.query_params[self.page_size_query_param]  # present but empty: a 400 too
        if re.fullmatch(r"[0-9]{1,6}", raw) is None or not 1 <= int(raw) <= MAX_PAGE_SIZE:
            message = f"Must be a whole number from 1 to {MAX_PAGE_SIZE}."
            raise ValidationError({self.page_size_query_param: [message]})
        return int(raw)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        """DRF's parameters, with ``page_size``'s bounds and default, so clients and fuzzers know them."""
        parameters: list[dict[str, Any]] = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"] = {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_PAGE_SIZE,
                    "default": PAGE_SIZE,
                }
        return parameters

    def decode_cursor(self, request: Request) -> Cursor | None:
        """DRF's cursor format, read strictly: base64 of ``o``/``r``/``p``, each at most once."""
        encoded = request.query_params.get(self.cursor_query_param)
        if encoded is None:
            return None
        try:
            querystring = b64decode(encoded.encode("ascii"), validate=True).decode("ascii")
            tokens = parse_qs(querystring, keep_blank_values=True)
            if not set(tokens) <= {"o", "r", "p"} or any(len(values) > 1 for values in tokens.values()):
                raise ValueError(querystring)
            offset, reverse = tokens.get("o", ["0"])[0], tokens.get("r", ["0"])[0]
            if re.fullmatch(r"[0-9]{1,9}", offset) is None or reverse not in ("0", "1"):
                raise ValueError(querystring)
            raw = tokens.get("p", [None])[0]
            return Cursor(
                offset=min(int(offset), self.offset_cutoff),
                reverse=reverse == "1",
                position=None if raw is None else normal_position(raw),
            )
        except (ValueError, OverflowError, BinasciiError):
            raise self._invalid() from None

    def _invalid(self) -> ValidationError:
        return ValidationError({self.cursor_query_param: [self.invalid_cursor_message]})


def normal_position(raw: str) -> Any:
    """An aware datetime in UTC, as DRF wrote it (``str``); anything else raises ValueError.

    Typed Any: DRF's stubs declare a cursor position as int, though it is this text.
    """
    position = parse_datetime(raw)  # a well-formed but impossible date raises ValueError
    if position is None or position.tzinfo is None:
        raise ValueError(raw)
    return str(position.astimezone(UTC))  # OverflowError past year 1 or 9999

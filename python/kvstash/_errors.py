"""Exceptions raised by kvstash: one base class carrying the status code."""

from __future__ import annotations

import enum
from typing import Dict, Type


class StatusCode(enum.IntEnum):
    """Status codes, as absl::StatusCode and gRPC number them."""

    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    DATA_LOSS = 15
    UNAUTHENTICATED = 16


class Error(Exception):
    """A kvstash call failed. ``code`` is the :class:`StatusCode`, ``message`` the reason."""

    def __init__(self, code: int, message: str) -> None:
        try:
            self.code: StatusCode = StatusCode(code)
        except ValueError:
            self.code = StatusCode.UNKNOWN
        self.message = message
        super().__init__(f"{self.code.name}: {message}")


class NotFound(Error):
    """The namespace or chunk does not exist."""


class Unavailable(Error):
    """The daemon cannot be reached (down, restarting, connection lost) after retries."""


class InvalidArgument(Error, ValueError):
    """A malformed argument: wrong key length, non-contiguous or read-only buffer, bad option."""


class DeadlineExceeded(Error, TimeoutError):
    """The call did not finish within the client's deadline_ms."""


_BY_CODE: Dict[int, Type[Error]] = {
    StatusCode.NOT_FOUND: NotFound,
    StatusCode.UNAVAILABLE: Unavailable,
    StatusCode.INVALID_ARGUMENT: InvalidArgument,
    StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
}


def from_status(code: int, message: str) -> Error:
    """The exception for a non-OK status (the native extension raises through this)."""
    return _BY_CODE.get(code, Error)(code, message)

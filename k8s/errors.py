"""API errors as a small typed hierarchy, mapped from HTTP status once, so callers can say `except Conflict`."""

from __future__ import annotations

import json

from .objects import Obj



class ApiError(RuntimeError):
    def __init__(self, status: int, reason: str, message: str, body: Obj | None = None):
        super().__init__(f"{status} {reason}: {message}")
        self.status, self.reason, self.message, self.body = status, reason, message, body or {}


class NotFound(ApiError):
    pass


class Conflict(ApiError):
    pass


class Gone(ApiError):
    pass


class Invalid(ApiError):
    """422, or a webhook denial (the message carries the webhook's reason)."""


class Unreachable(RuntimeError):
    """The apiserver did not answer at all."""


def from_response(status: int, data: bytes) -> ApiError:
    try:
        body = json.loads(data or b"{}")
    except ValueError:
        body = {"message": data.decode(errors="replace")[:500]}      # not empty: b"{}" would have parsed
    reason = body.get("reason", "")
    message = body.get("message", "")
    cls = {404: NotFound, 409: Conflict, 410: Gone, 422: Invalid}.get(status, ApiError)
    if status == 400 and "admission webhook" in message:
        cls = Invalid
    return cls(status, reason, message, body)

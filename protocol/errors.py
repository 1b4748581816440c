"""Errors of the wire-format layer (no dependencies, so the hot path imports it cheaply)."""


class DecodeError(ValueError):
    """The bytes are not a valid message of this version (truncated, bad length, bad UTF-8...)."""

"""Errors of the wire-format layer, and the caps a request decoder enforces (no dependencies, so the hot path
imports it cheaply)."""


class DecodeError(ValueError):
    """The bytes are not a valid message of this version (truncated, bad length, bad UTF-8...)."""


class DecodeLimits:
    """What a decoder refuses besides what the bytes cannot hold: Kafka's generated readers (4.2.2, 4.4.0)
    refuse a collection of more than `max_collection` elements and a tagged-field section of more than
    `max_tagged_fields` fields, however many bytes follow (a few bytes cannot make the broker allocate
    much). Every release refuses a count larger than the bytes left."""

    __slots__ = ("max_collection", "max_tagged_fields")

    def __init__(self, max_collection: int, max_tagged_fields: int) -> None:
        self.max_collection = max_collection
        self.max_tagged_fields = max_tagged_fields

    def check_collection(self, n: int) -> None:
        if n > self.max_collection:
            raise DecodeError(f"a collection of {n} elements exceeds the maximum allowed size of "
                              f"{self.max_collection}")

    def check_tagged_fields(self, n: int) -> None:
        if n > self.max_tagged_fields:
            raise DecodeError(f"{n} tagged fields exceed the maximum allowed count of {self.max_tagged_fields}")


# Kafka's (MessageUtil's and the generated readers' constants).
KAFKA_LIMITS = DecodeLimits(1_000_000, 10_000)

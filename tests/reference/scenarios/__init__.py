"""The differential scenarios, one module per area; importing this package registers them all."""

from tests.reference.scenarios import versions  # noqa: F401

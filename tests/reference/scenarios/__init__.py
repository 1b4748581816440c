"""The differential scenarios, one module per area; importing this package registers them all."""

from tests.reference.scenarios import (  # noqa: F401
    clients,
    configs,
    consumer_groups,
    fetch,
    groups,
    legacy,
    metadata,
    produce,
    share_groups,
    topics,
    transactions,
    versions,
)

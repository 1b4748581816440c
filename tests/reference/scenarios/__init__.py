"""The differential scenarios, one module per area; importing this package registers them all."""

from tests.reference.scenarios import (  # noqa: F401
    clients,
    configs,
    consumer_groups,
    decoder_limits,
    features,
    fetch,
    fetch_sessions,
    groups,
    legacy,
    metadata,
    migration,
    newest_versions,
    produce,
    quotas,
    share_groups,
    streams_groups,
    tokens,
    topics,
    transactions,
    versions,
)

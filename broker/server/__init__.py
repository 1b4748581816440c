"""The network side: listeners, one task per connection, framing, the order of responses, and the
dispatch table of which API versions are served by which handler. TLS and SASL plug in here."""

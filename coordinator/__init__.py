"""The coordinators' state machines as pure logic (time passed in, no I/O): classic, KIP-848 consumer and
KIP-932 share groups, and transactions."""

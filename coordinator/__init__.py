"""The coordinators' state machines as pure logic (time passed in, no I/O): classic groups and transactions."""

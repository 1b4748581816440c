"""Authentication and encryption: listeners' security protocols, TLS contexts, SASL mechanisms, principals.

Nothing here is imported by a PLAINTEXT-only broker (startup time): the server loads it for SSL and SASL
listeners only, and the TLS, SCRAM and JWT libraries are imported by the mechanisms that use them.
"""

"""Who may do what: the authorizer and its ACL store, the handlers' checks, the stored credentials, and
authentication and encryption (listeners' security protocols, TLS contexts, SASL mechanisms, principals).

A PLAINTEXT-only broker imports none of the TLS and SASL modules (startup time): the server loads them for
SSL and SASL listeners only, and the SCRAM, JWT and certificate libraries are imported by the mechanisms
that use them.
"""

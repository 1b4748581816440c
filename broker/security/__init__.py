"""Who may do what: the authorizer and its ACL store, the handlers' checks, and the stored credentials
(SASL and TLS come here)."""

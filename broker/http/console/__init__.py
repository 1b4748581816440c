"""The web console (`--console HOST:PORT`): server-rendered pages (Jinja2, htmx shipped as package data) on the
broker's HTTP stack. It reads the cluster the way a Kafka admin client does, with Kafka requests to the brokers
over their inter-broker listener (admin.py), so any broker's console shows the whole cluster and its actions go
through the same handlers, validation and error codes as a client's; the protocol trace, fault rules and the
virtual clock are this broker's own.

    app.py            the Console (its parts) and the routes
    auth.py           the password (login form or HTTP Basic), sessions and CSRF tokens
    admin.py          Kafka requests to the brokers: metadata, offsets, groups, transactions, ACLs ...
    records_view.py   records for display: text, JSON, hex, schema-registry payloads, aborted records
    pages/            one module per page
    templates/ static/
"""

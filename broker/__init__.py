"""minibroker's broker: `python -m broker` (cli.py) starts a Server (server/), which builds the Broker
(app.py) from its config; see docs/inside/architecture.md, "Where things are"."""

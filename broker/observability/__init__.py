"""Observability: what the running broker offers to watch and steer it from outside. Fault rules
(faults.py), the decoded protocol trace (trace.py), Prometheus metrics (metrics.py), introspection of its
state as plain data (introspect.py); the admin HTTP endpoint that serves them is broker/http/admin.py.

Production code the server imports; the test kit (BrokerThread, the pytest plugin) builds on it.
"""

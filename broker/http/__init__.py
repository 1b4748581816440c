"""What the broker serves over HTTP, on one stack: Starlette apps served by hypercorn inside the broker's own
trio run (stack.py), one service per module: the admin endpoint (admin.py, `--admin-listen`) and the schema
registry (registry/, `--schema-registry`). Nothing here is imported unless one of them is asked for."""

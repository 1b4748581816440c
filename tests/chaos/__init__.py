"""The cluster chaos test (`make chaos`, `python -m tests.chaos.run`): ZooKeeper and three brokers under
idempotent, transactional and consumer load while brokers are SIGKILLed and restarted, the controller and
the coordinators among them, and a broker's ZooKeeper session is expired; what the clients were told is then
checked against the logs. workload.py: the clients and their ledger; checks.py: the counts; run.py: the
cluster, the rounds and the unavailability windows."""

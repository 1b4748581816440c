"""Everything that speaks to ZooKeeper, in Kafka 3.x's znode formats."""

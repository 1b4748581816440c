"""The cluster (ZooKeeper mode, as Kafka 3.x): the controller, the metadata cache, the inter-broker client
and the replica fetchers. A single broker without --zookeeper uses none of it."""

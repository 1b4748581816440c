"""Everything that speaks to ZooKeeper, in Kafka 3.x's znode formats.

session.py            ZkSession: one kazoo session used from trio (timeouts, retries, chroot, watches and
                      session state changes delivered into trio, pipelined and atomic calls)
znodes.py             the znodes' paths and JSON, encoded and decoded as Kafka does (pure)
kafka_zk.py           KafkaZkClient: what Kafka's brokers and controller do there (registration, ids, cluster
                      id, controller election and epoch fencing, topics, partition states, markers, configs)
replica_assignment.py Kafka's AdminUtils.assignReplicasToBrokers and the CreatePartitions variant (pure)
leader_election.py    Kafka's partition leader elections: offline, reassign, preferred, controlled shutdown (pure)
errors.py             the errors, with Kafka's error codes for the admin ones
pid_blocks.py, producer_id_manager.py, store.py   producer-id blocks (/latest_producer_id_block)
"""

package minibroker.check;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.DescribeConsumerGroupsOptions;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.ListTransactionsOptions;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ConsumerGroupState;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicCollection;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ElectionNotNeededException;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownMemberIdException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;

/** The AdminClient's topic, config, ACL, group, offsets, transaction and cluster calls, each result checked. */
final class AdminChecks {
    static final long WAIT = 30;

    static void register(Map<String, Main.Check> checks) {
        checks.put("admin.topics", AdminChecks::topics);
        checks.put("admin.configs", AdminChecks::configs);
        checks.put("admin.acls", AdminChecks::acls);
        checks.put("admin.groups", AdminChecks::groups);
        checks.put("admin.offsets", AdminChecks::offsets);
        checks.put("admin.transactions", AdminChecks::transactions);
        checks.put("admin.cluster", AdminChecks::cluster);
    }

    static <T> T get(KafkaFuture<T> future) throws Exception {
        return future.get(WAIT, TimeUnit.SECONDS);
    }

    static Node node(Admin admin) throws Exception {
        Collection<Node> nodes = get(admin.describeCluster().nodes());
        Expect.equal("nodes of the cluster", 1, nodes.size());
        return nodes.iterator().next();
    }

    static void topics(Kafka kafka) throws Exception {
        String topic = kafka.name("admin-topic");
        String checkedOnly = kafka.name("admin-validate-only");
        try (Admin admin = kafka.admin()) {
            Node node = node(admin);
            NewTopic newTopic = new NewTopic(topic, 3, (short) 1).configs(Map.of("retention.ms", "3600000",
                    "cleanup.policy", "compact"));
            Uuid id = get(admin.createTopics(List.of(newTopic)).topicId(topic));
            Expect.isTrue(!Uuid.ZERO_UUID.equals(id), "a topic id");
            admin.createTopics(List.of(new NewTopic(checkedOnly, 2, (short) 1)), new CreateTopicsOptions()
                    .validateOnly(true)).all().get(WAIT, TimeUnit.SECONDS);
            Expect.raises(TopicExistsException.class, "creating it again",
                    () -> get(admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all()));
            Expect.raises(InvalidConfigurationException.class, "an invalid config",
                    () -> get(admin.createTopics(List.of(new NewTopic(kafka.name("bad"), 1, (short) 1)
                            .configs(Map.of("cleanup.policy", "sometimes")))).all()));
            Set<String> names = get(admin.listTopics().names());
            Expect.isTrue(names.contains(topic), "listTopics includes " + topic + ": " + names);
            Expect.isTrue(!names.contains(checkedOnly), "a validate-only topic is not created: " + names);

            TopicDescription description = get(admin.describeTopics(List.of(topic)).topicNameValues().get(topic));
            Expect.equal("topic id described", id, description.topicId());
            Expect.equal("internal", false, description.isInternal());
            Expect.equal("partitions", List.of(0, 1, 2),
                    description.partitions().stream().map(TopicPartitionInfo::partition).collect(Collectors.toList()));
            for (TopicPartitionInfo p : description.partitions()) {
                Expect.equal("leader of " + p.partition(), node, p.leader());
                Expect.equal("replicas of " + p.partition(), List.of(node), p.replicas());
                Expect.equal("isr of " + p.partition(), List.of(node), p.isr());
            }
            Set<AclOperation> topicOps = get(admin.describeTopics(List.of(topic), new DescribeTopicsOptions()
                    .includeAuthorizedOperations(true)).allTopicNames()).get(topic).authorizedOperations();
            Expect.isTrue(topicOps != null && topicOps.containsAll(List.of(AclOperation.READ, AclOperation.WRITE,
                    AclOperation.DELETE, AclOperation.ALTER_CONFIGS)), "authorized operations on the topic: " + topicOps);
            TopicDescription byId = get(admin.describeTopics(TopicCollection.ofTopicIds(List.of(id)))
                    .topicIdValues().get(id));
            Expect.equal("name of the topic described by id", topic, byId.name());

            get(admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(5))).all());
            Expect.equal("partitions after createPartitions", 5,
                    get(admin.describeTopics(List.of(topic)).allTopicNames()).get(topic).partitions().size());
            Expect.raises(InvalidPartitionsException.class, "decreasing the partition count",
                    () -> get(admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(2))).all()));

            get(admin.deleteTopics(TopicCollection.ofTopicIds(List.of(id))).all());
            Expect.eventually("the deleted topic to leave listTopics", WAIT, () -> {
                try {
                    return !get(admin.listTopics().names()).contains(topic);
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            Expect.raises(UnknownTopicOrPartitionException.class, "describing the deleted topic",
                    () -> get(admin.describeTopics(List.of(topic)).allTopicNames()));
            Expect.raises(UnknownTopicOrPartitionException.class, "deleting it again",
                    () -> get(admin.deleteTopics(List.of(topic)).all()));
        }
    }

    static Map<String, ConfigEntry> describe(Admin admin, ConfigResource resource) throws Exception {
        Config config = get(admin.describeConfigs(List.of(resource)).all()).get(resource);
        Map<String, ConfigEntry> entries = new HashMap<>();
        config.entries().forEach(e -> entries.put(e.name(), e));
        return entries;
    }

    static void alter(Admin admin, ConfigResource resource, AlterConfigOp... ops) throws Exception {
        get(admin.incrementalAlterConfigs(Map.of(resource, List.of(ops))).all());
    }

    static AlterConfigOp op(String name, String value, AlterConfigOp.OpType type) {
        return new AlterConfigOp(new ConfigEntry(name, value), type);
    }

    static void configs(Kafka kafka) throws Exception {
        String topic = kafka.name("admin-configs");
        try (Admin admin = kafka.admin()) {
            String broker = Integer.toString(node(admin).id());
            kafka.createTopic(admin, topic, 1, Map.of("retention.ms", "3600000", "cleanup.policy", "delete"));
            ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            Map<String, ConfigEntry> entries = describe(admin, resource);
            Expect.equal("retention.ms", "3600000", entries.get("retention.ms").value());
            Expect.equal("retention.ms source", ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG,
                    entries.get("retention.ms").source());
            Expect.equal("segment.bytes source", ConfigEntry.ConfigSource.DEFAULT_CONFIG,
                    entries.get("segment.bytes").source());
            Expect.equal("segment.bytes", "1073741824", entries.get("segment.bytes").value());
            Expect.isTrue(entries.containsKey("min.insync.replicas") && entries.containsKey("max.message.bytes"),
                    "every topic config is described: " + entries.keySet());

            alter(admin, resource, op("retention.ms", "7200000", AlterConfigOp.OpType.SET),
                    op("cleanup.policy", "compact", AlterConfigOp.OpType.APPEND),
                    op("max.message.bytes", "200000", AlterConfigOp.OpType.SET));
            entries = describe(admin, resource);
            Expect.equal("retention.ms after SET", "7200000", entries.get("retention.ms").value());
            Expect.equal("cleanup.policy after APPEND", "delete,compact", entries.get("cleanup.policy").value());
            alter(admin, resource, op("max.message.bytes", "", AlterConfigOp.OpType.DELETE),
                    op("cleanup.policy", "delete", AlterConfigOp.OpType.SUBTRACT));
            entries = describe(admin, resource);
            Expect.equal("max.message.bytes after DELETE", ConfigEntry.ConfigSource.DEFAULT_CONFIG,
                    entries.get("max.message.bytes").source());
            Expect.equal("cleanup.policy after SUBTRACT", "compact", entries.get("cleanup.policy").value());
            Expect.raises(InvalidConfigurationException.class, "an invalid value",
                    () -> alter(admin, resource, op("retention.ms", "soon", AlterConfigOp.OpType.SET)));

            // Broker configs: per broker, cluster-wide default, and what a topic without an override inherits.
            ConfigResource thisBroker = new ConfigResource(ConfigResource.Type.BROKER, broker);
            ConfigResource cluster = new ConfigResource(ConfigResource.Type.BROKER, "");
            alter(admin, thisBroker, op("message.max.bytes", "2000000", AlterConfigOp.OpType.SET));
            alter(admin, cluster, op("log.retention.ms", "86400000", AlterConfigOp.OpType.SET));
            try {
                // A KRaft broker applies them once the controller's record reaches it: wait for both.
                entries = Expect.eventually("the broker configs to apply", WAIT, () -> {
                    try {
                        Map<String, ConfigEntry> now = describe(admin, thisBroker);
                        return "2000000".equals(now.get("message.max.bytes").value())
                                && "86400000".equals(now.get("log.retention.ms").value()) ? now : null;
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                });
                Expect.equal("message.max.bytes", "2000000", entries.get("message.max.bytes").value());
                Expect.equal("message.max.bytes source", ConfigEntry.ConfigSource.DYNAMIC_BROKER_CONFIG,
                        entries.get("message.max.bytes").source());
                Expect.equal("log.retention.ms", "86400000", entries.get("log.retention.ms").value());
                Expect.equal("log.retention.ms source", ConfigEntry.ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
                        entries.get("log.retention.ms").source());
                Expect.equal("broker.id", broker, entries.get("broker.id").value());
                Expect.equal("broker.id is read-only", true, entries.get("broker.id").isReadOnly());
                ConfigResource other = new ConfigResource(ConfigResource.Type.TOPIC, kafka.name("inherits"));
                kafka.createTopic(admin, other.name(), 1, null);
                ConfigEntry inherited = describe(admin, other).get("retention.ms");
                Expect.equal("retention.ms inherited from the cluster default", "86400000", inherited.value());
                Expect.equal("retention.ms source in a topic", ConfigEntry.ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
                        inherited.source());
                Expect.raises(InvalidRequestException.class, "changing a read-only broker config",
                        () -> alter(admin, thisBroker, op("log.dirs", "/elsewhere", AlterConfigOp.OpType.SET)));
            } finally {
                alter(admin, thisBroker, op("message.max.bytes", "", AlterConfigOp.OpType.DELETE));
                alter(admin, cluster, op("log.retention.ms", "", AlterConfigOp.OpType.DELETE));
            }
            Expect.equal("message.max.bytes after DELETE", ConfigEntry.ConfigSource.DEFAULT_CONFIG,
                    describe(admin, thisBroker).get("message.max.bytes").source());
        }
    }

    static void acls(Kafka kafka) throws Exception {
        String topic = kafka.name("acl-topic");
        String prefix = kafka.name("acl-prefix");
        String group = kafka.name("acl-group");
        AclBinding read = new AclBinding(new ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL),
                new AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW));
        AclBinding write = new AclBinding(new ResourcePattern(ResourceType.TOPIC, prefix, PatternType.PREFIXED),
                new AccessControlEntry("User:bob", "10.0.0.1", AclOperation.WRITE, AclPermissionType.DENY));
        AclBinding join = new AclBinding(new ResourcePattern(ResourceType.GROUP, group, PatternType.LITERAL),
                new AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW));
        try (Admin admin = kafka.admin()) {
            get(admin.createAcls(List.of(read, write, join)).all());
            Set<AclBinding> all = new HashSet<>(get(admin.describeAcls(AclBindingFilter.ANY).values()));
            Expect.isTrue(all.containsAll(List.of(read, write, join)), "every ACL is described: " + all);

            AclBindingFilter aliceTopics = new AclBindingFilter(
                    new ResourcePatternFilter(ResourceType.TOPIC, null, PatternType.ANY),
                    new AccessControlEntryFilter("User:alice", null, AclOperation.ANY, AclPermissionType.ANY));
            Expect.equal("alice's topic ACLs", Set.of(read), new HashSet<>(get(admin.describeAcls(aliceTopics).values())));
            // MATCH finds the ACLs that apply to a name: the prefixed one applies to prefix + anything.
            AclBindingFilter matching = new AclBindingFilter(
                    new ResourcePatternFilter(ResourceType.TOPIC, prefix + "-orders", PatternType.MATCH),
                    AccessControlEntryFilter.ANY);
            Expect.equal("ACLs matching " + prefix + "-orders", Set.of(write),
                    new HashSet<>(get(admin.describeAcls(matching).values())));

            AclBindingFilter bobs = new AclBindingFilter(ResourcePatternFilter.ANY,
                    new AccessControlEntryFilter("User:bob", null, AclOperation.ANY, AclPermissionType.ANY));
            Collection<AclBinding> deleted = get(admin.deleteAcls(List.of(bobs)).all());
            Expect.equal("ACLs deleted", List.of(write), new ArrayList<>(deleted));
            Set<AclBinding> left = new HashSet<>(get(admin.describeAcls(AclBindingFilter.ANY).values()));
            Expect.isTrue(left.containsAll(List.of(read, join)) && !left.contains(write), "ACLs left: " + left);
            get(admin.deleteAcls(List.of(read.toFilter(), join.toFilter())).all());
        }
    }

    static void groups(Kafka kafka) throws Exception {
        String topic = kafka.name("admin-groups");
        String group = kafka.name("admin-groups");
        kafka.createTopic(topic, 2);
        TopicPartition p0 = new TopicPartition(topic, 0);
        TopicPartition p1 = new TopicPartition(topic, 1);
        try (KafkaProducer<String, String> producer = kafka.producer()) {
            for (int i = 0; i < 20; i++) {
                producer.send(new ProducerRecord<>(topic, i % 2, "k", "v" + i));
            }
        }
        try (Admin admin = kafka.admin();
             KafkaConsumer<String, String> consumer = kafka.consumer(ConsumerConfig.GROUP_ID_CONFIG, group,
                     ConsumerConfig.CLIENT_ID_CONFIG, "admin-groups-member")) {
            consumer.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> seen = new ArrayList<>();
            Expect.eventually("20 records", WAIT, () -> {
                consumer.poll(Duration.ofMillis(100)).forEach(seen::add);
                return seen.size() >= 20;
            });
            consumer.commitSync(Map.of(p0, new OffsetAndMetadata(10), p1, new OffsetAndMetadata(4)));

            ConsumerGroupDescription description = get(admin.describeConsumerGroups(List.of(group)).all()).get(group);
            Expect.equal("state", ConsumerGroupState.STABLE, description.state());
            Expect.equal("members", 1, description.members().size());
            MemberDescription member = description.members().iterator().next();
            Expect.equal("client id", "admin-groups-member", member.clientId());
            Expect.equal("assignment", Set.of(p0, p1), member.assignment().topicPartitions());
            Expect.equal("coordinator", node(admin), description.coordinator());
            Expect.equal("simple", false, description.isSimpleConsumerGroup());
            Set<AclOperation> groupOps = get(admin.describeConsumerGroups(List.of(group),
                    new DescribeConsumerGroupsOptions().includeAuthorizedOperations(true)).all()).get(group)
                    .authorizedOperations();
            Expect.isTrue(groupOps != null && groupOps.containsAll(List.of(AclOperation.READ, AclOperation.DESCRIBE,
                    AclOperation.DELETE)), "authorized operations on the group: " + groupOps);

            Map<String, ConsumerGroupListing> listed = new HashMap<>();
            get(admin.listConsumerGroups().all()).forEach(g -> listed.put(g.groupId(), g));
            Expect.isTrue(listed.containsKey(group), "the group is listed: " + listed.keySet());
            Expect.equal("listed state", Optional.of(ConsumerGroupState.STABLE), listed.get(group).state());

            Map<TopicPartition, OffsetAndMetadata> offsets = get(admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata());
            Expect.equal("committed offsets", Map.of(p0, 10L, p1, 4L), offsetsOf(offsets));

            Expect.raises(GroupNotEmptyException.class, "deleting a group with members",
                    () -> get(admin.deleteConsumerGroups(List.of(group)).all()));
            Expect.raises(UnknownMemberIdException.class, "altering the offsets of a group with members",
                    () -> get(admin.alterConsumerGroupOffsets(group, Map.of(p0, new OffsetAndMetadata(1))).all()));

            get(admin.removeMembersFromConsumerGroup(group, new RemoveMembersFromConsumerGroupOptions()).all());
            Expect.equal("state after removing the members", ConsumerGroupState.EMPTY,
                    get(admin.describeConsumerGroups(List.of(group)).all()).get(group).state());

            get(admin.alterConsumerGroupOffsets(group, Map.of(p0, new OffsetAndMetadata(2, "reset"))).all());
            offsets = get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata());
            Expect.equal("offsets after alter", Map.of(p0, 2L, p1, 4L), offsetsOf(offsets));
            Expect.equal("metadata after alter", "reset", offsets.get(p0).metadata());

            get(admin.deleteConsumerGroupOffsets(group, Set.of(p1)).all());
            offsets = get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata());
            Expect.equal("offsets after deleting p1's", Map.of(p0, 2L), offsetsOf(offsets));

            get(admin.deleteConsumerGroups(List.of(group)).all());
            Set<String> groups = get(admin.listConsumerGroups().all()).stream().map(ConsumerGroupListing::groupId)
                    .collect(Collectors.toSet());
            Expect.isTrue(!groups.contains(group), "the deleted group is not listed: " + groups);
            // Kafka 3.x answers DescribeGroups for an unknown group with state Dead; 4.x's v6 with an error.
            try {
                ConsumerGroupState state = get(admin.describeConsumerGroups(List.of(group)).all()).get(group).state();
                Expect.equal("state of the deleted group", ConsumerGroupState.DEAD, state);
            } catch (ExecutionException e) {
                Expect.isTrue(e.getCause() instanceof GroupIdNotFoundException, "describing a deleted group: " + e);
            }
        }
    }

    static Map<TopicPartition, Long> offsetsOf(Map<TopicPartition, OffsetAndMetadata> offsets) {
        Map<TopicPartition, Long> plain = new HashMap<>();
        offsets.forEach((tp, om) -> {
            if (om != null) {
                plain.put(tp, om.offset());
            }
        });
        return plain;
    }

    static void offsets(Kafka kafka) throws Exception {
        String topic = kafka.name("admin-offsets");
        TopicPartition tp = new TopicPartition(topic, 0);
        long base = 1_650_000_000_000L;
        try (Admin admin = kafka.admin()) {
            kafka.createTopic(admin, topic, 1, null);
            try (KafkaProducer<String, String> producer = kafka.producer()) {
                for (int i = 0; i < 10; i++) {
                    // Offset 7 carries the largest timestamp (KIP-734's max-timestamp spec finds it).
                    long ts = i == 7 ? base + 100_000 : base + i * 1000L;
                    producer.send(new ProducerRecord<>(topic, 0, ts, "k", "v" + i)).get();
                }
            }
            Expect.equal("earliest", 0L, listOffset(admin, tp, OffsetSpec.earliest()).offset());
            Expect.equal("latest", 10L, listOffset(admin, tp, OffsetSpec.latest()).offset());
            ListOffsetsResultInfo byTime = listOffset(admin, tp, OffsetSpec.forTimestamp(base + 4500));
            Expect.equal("offset for a timestamp", 5L, byTime.offset());
            Expect.equal("its timestamp", base + 5000, byTime.timestamp());
            ListOffsetsResultInfo max = listOffset(admin, tp, OffsetSpec.maxTimestamp());
            Expect.equal("offset of the max timestamp", 7L, max.offset());
            Expect.equal("max timestamp", base + 100_000, max.timestamp());

            long low = get(admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(4))).lowWatermarks().get(tp))
                    .lowWatermark();
            Expect.equal("low watermark after deleteRecords", 4L, low);
            Expect.equal("earliest after deleteRecords", 4L, listOffset(admin, tp, OffsetSpec.earliest()).offset());
            Expect.raises(OffsetOutOfRangeException.class, "deleting beyond the high watermark",
                    () -> get(admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(11))).all()));
            List<String> rest = Kafka.values(kafka.readAll(topic, 1, "read_uncommitted"));
            Expect.equal("records left", List.of("v4", "v5", "v6", "v7", "v8", "v9"), rest);
        }
    }

    static ListOffsetsResultInfo listOffset(Admin admin, TopicPartition tp, OffsetSpec spec) throws Exception {
        return get(admin.listOffsets(Map.of(tp, spec)).partitionResult(tp));
    }

    static void transactions(Kafka kafka) throws Exception {
        String topic = kafka.name("admin-txn");
        String id = kafka.name("admin-txn");
        kafka.createTopic(topic, 2);
        TopicPartition p0 = new TopicPartition(topic, 0);
        TopicPartition p1 = new TopicPartition(topic, 1);
        KafkaProducer<String, String> producer = TransactionChecks.transactional(kafka, id);
        try (Admin admin = kafka.admin()) {
            int broker = node(admin).id();
            producer.beginTransaction();
            TransactionChecks.send(producer, topic, "hanging", 4);
            producer.flush();

            Map<String, TransactionListing> listed = new HashMap<>();
            get(admin.listTransactions().all()).forEach(t -> listed.put(t.transactionalId(), t));
            Expect.equal("listed state", TransactionState.ONGOING, listed.get(id).state());
            long producerId = listed.get(id).producerId();
            Set<String> ongoing = get(admin.listTransactions(new ListTransactionsOptions()
                    .filterStates(List.of(TransactionState.ONGOING)).filterProducerIds(List.of(producerId))).all())
                    .stream().map(TransactionListing::transactionalId).collect(Collectors.toSet());
            Expect.equal("listed by state and producer id", Set.of(id), ongoing);
            Expect.equal("listed in state Empty", false, get(admin.listTransactions(new ListTransactionsOptions()
                    .filterStates(List.of(TransactionState.EMPTY))).all()).stream()
                    .anyMatch(t -> t.transactionalId().equals(id)));

            TransactionDescription description = get(admin.describeTransactions(List.of(id)).description(id));
            Expect.equal("described state", TransactionState.ONGOING, description.state());
            Expect.equal("described producer id", producerId, description.producerId());
            Expect.equal("described partitions", Set.of(p0, p1), description.topicPartitions());
            Expect.equal("coordinator", broker, description.coordinatorId());
            Expect.equal("timeout", 60000L, description.transactionTimeoutMs());
            Expect.isTrue(description.transactionStartTimeMs().isPresent(), "a start time");

            ProducerState state = get(admin.describeProducers(List.of(p0)).partitionResult(p0)).activeProducers()
                    .get(0);
            Expect.equal("producer on p0", producerId, state.producerId());
            Expect.equal("open transaction on p0 starts at", java.util.OptionalLong.of(0L),
                    state.currentTransactionStartOffset());

            ListOffsetsResultInfo lso = get(admin.listOffsets(Map.of(p0, OffsetSpec.latest()),
                    new ListOffsetsOptions(IsolationLevel.READ_COMMITTED)).partitionResult(p0));
            Expect.equal("latest offset of p0 read_committed (the LSO)", 0L, lso.offset());
            Expect.equal("latest offset of p0 read_uncommitted", 2L, listOffset(admin, p0, OffsetSpec.latest()).offset());
            // kafka-transactions' "abort": a marker written to one partition for the producer's transaction.
            get(admin.abortTransaction(new AbortTransactionSpec(p0, producerId, (short) state.producerEpoch(),
                    state.coordinatorEpoch().orElse(-1))).all());
            ProducerState after = get(admin.describeProducers(List.of(p0)).partitionResult(p0)).activeProducers()
                    .get(0);
            Expect.isTrue(after.currentTransactionStartOffset().isEmpty(), "p0's transaction is closed: " + after);
            try (KafkaConsumer<String, String> consumer = kafka.consumer(ConsumerConfig.ISOLATION_LEVEL_CONFIG,
                    "read_committed")) {
                Map<TopicPartition, Long> ends = consumer.endOffsets(List.of(p0, p1));
                Expect.equal("LSO of p0 (2 records and the abort marker) and p1 (held by the open transaction)",
                        Map.of(p0, 3L, p1, 0L), ends);
            }

            // fenceProducers bumps the epoch as a new instance would; the coordinator aborts the transaction.
            get(admin.fenceProducers(List.of(id)).all());
            TransactionDescription fenced = Expect.eventually("the fenced transaction to end", WAIT, () -> {
                try {
                    TransactionDescription d = get(admin.describeTransactions(List.of(id)).description(id));
                    return d.state() == TransactionState.COMPLETE_ABORT || d.state() == TransactionState.EMPTY
                            ? d : null;
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            Expect.isTrue(fenced.producerEpoch() > description.producerEpoch(), "epoch bumped: " + fenced);
            Expect.raises(org.apache.kafka.common.KafkaException.class, "commit by the fenced producer",
                    producer::commitTransaction);
            Expect.equal("read_committed records", 0, kafka.readAll(topic, 2, "read_committed").size());
        } finally {
            producer.close(Duration.ofSeconds(5));
        }
    }

    static void cluster(Kafka kafka) throws Exception {
        String topic = kafka.name("admin-cluster");
        try (Admin admin = kafka.admin()) {
            kafka.createTopic(admin, topic, 1, null);
            TopicPartition tp = new TopicPartition(topic, 0);
            DescribeClusterResult cluster = admin.describeCluster();
            Node node = node(admin);
            Expect.equal("broker address", kafka.bootstrap, node.host() + ":" + node.port());
            Expect.equal("controller", node, get(cluster.controller()));
            String clusterId = get(cluster.clusterId());
            Set<AclOperation> clusterOps = get(admin.describeCluster(new DescribeClusterOptions()
                    .includeAuthorizedOperations(true)).authorizedOperations());
            Expect.isTrue(clusterOps != null && clusterOps.containsAll(List.of(AclOperation.ALTER,
                    AclOperation.DESCRIBE, AclOperation.CREATE, AclOperation.IDEMPOTENT_WRITE)),
                    "authorized operations on the cluster: " + clusterOps);
            Expect.isTrue(clusterId != null && !clusterId.isEmpty(), "a cluster id");

            FeatureMetadata features = get(admin.describeFeatures().featureMetadata());
            if (kafka.zookeeperMode) {
                // Kafka 3.9 in ZooKeeper mode answers ApiVersions with no features at all.
                Expect.isTrue(features.supportedFeatures().isEmpty() && features.finalizedFeatures().isEmpty(),
                        "no features from a ZooKeeper-mode broker: " + features.supportedFeatures());
            } else {
                Expect.isTrue(features.supportedFeatures().containsKey("metadata.version"),
                        "metadata.version among the supported features: " + features.supportedFeatures());
            }

            String dir = get(admin.describeReplicaLogDirs(List.of(new TopicPartitionReplica(topic, 0, node.id())))
                    .all()).values().iterator().next().getCurrentReplicaLogDir();
            Expect.isTrue(dir != null && !dir.isEmpty(), "the replica's log dir");
            Expect.isTrue(get(admin.describeLogDirs(List.of(node.id())).allDescriptions()).get(node.id())
                    .containsKey(dir), "describeLogDirs lists " + dir);

            Map<TopicPartition, Optional<Throwable>> elected = get(admin.electLeaders(ElectionType.PREFERRED,
                    Set.of(tp)).partitions());
            Expect.isTrue(elected.get(tp).isPresent() && elected.get(tp).get() instanceof ElectionNotNeededException,
                    "preferred election of the only replica: " + elected);

            Expect.equal("reassignments in progress", Map.of(), get(admin.listPartitionReassignments().reassignments()));
            get(admin.alterPartitionReassignments(Map.of(tp, Optional.of(new NewPartitionReassignment(
                    List.of(node.id()))))).all());
            Expect.equal("reassignments after one to the same broker", Map.of(),
                    get(admin.listPartitionReassignments().reassignments()));

            String user = kafka.name("scram-user");
            get(admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(user,
                    new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), "secret"))).all());
            UserScramCredentialsDescription scram = get(admin.describeUserScramCredentials(List.of(user))
                    .description(user));
            Expect.equal("SCRAM credential", List.of(new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192)),
                    scram.credentialInfos());
            get(admin.alterUserScramCredentials(List.of(new UserScramCredentialDeletion(user,
                    ScramMechanism.SCRAM_SHA_256))).all());
            Expect.isTrue(!get(admin.describeUserScramCredentials().users()).contains(user), "credential deleted");
        }
    }

    private AdminChecks() {}
}

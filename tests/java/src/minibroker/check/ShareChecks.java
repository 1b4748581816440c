package minibroker.check;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.serialization.StringDeserializer;

/** KIP-932 share groups with the Java KafkaShareConsumer: every record delivered, released records delivered
 *  again, rejected ones never. */
final class ShareChecks {
    static final int PARTITIONS = 3;
    static final int RECORDS = 200;

    static void register(Map<String, Main.Check> checks) {
        checks.put("share.explicit_batch_optimized", kafka -> explicitAcknowledgement(kafka, "batch_optimized"));
        checks.put("share.explicit_record_limit", kafka -> explicitAcknowledgement(kafka, "record_limit"));
        checks.put("share.implicit", ShareChecks::implicitAcknowledgement);
        checks.put("share.lock_timeout", ShareChecks::lockTimeout);
        checks.put("share.renew", ShareChecks::renew);
        checks.put("share.delivery_count_limit", ShareChecks::deliveryCountLimit);
        checks.put("share.admin", ShareChecks::admin);
    }

    static KafkaShareConsumer<String, String> consumer(Kafka kafka, String group, String clientId,
                                                       Object... settings) {
        Map<String, Object> props = new HashMap<>();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        for (int i = 0; i < settings.length; i += 2) {
            props.put(String.valueOf(settings[i]), String.valueOf(settings[i + 1]));
        }
        return new KafkaShareConsumer<>(props);
    }

    /** The topic with `records` values "0".."records-1" round robin over its partitions (one batch each, the
     *  producer lingering), and the group set to start from the earliest offset, with more group configs. */
    static void setup(Kafka kafka, String topic, String group, int partitions, int records, String... groupConfigs)
            throws Exception {
        try (Admin admin = kafka.admin()) {
            kafka.createTopic(admin, topic, partitions, null);
            ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
            List<AlterConfigOp> ops = new ArrayList<>(List.of(new AlterConfigOp(
                    new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET)));
            for (int i = 0; i < groupConfigs.length; i += 2) {
                ops.add(new AlterConfigOp(new ConfigEntry(groupConfigs[i], groupConfigs[i + 1]),
                        AlterConfigOp.OpType.SET));
            }
            admin.incrementalAlterConfigs(Map.of(resource, ops)).all().get(30, TimeUnit.SECONDS);
        }
        try (KafkaProducer<String, String> producer = kafka.producer("linger.ms", 100)) {
            for (int i = 0; i < records; i++) {
                producer.send(new ProducerRecord<>(topic, i % partitions, null, String.valueOf(i)));
            }
            producer.flush();
        }
    }

    /** Two consumers of one group, explicit acknowledgement: most records ACCEPTed, five RELEASEd at their
     *  first delivery, one REJECTed. Every record is delivered; the released ones once more (delivery count
     *  2), then accepted; the rejected one never again; nothing accepted comes back. */
    static void explicitAcknowledgement(Kafka kafka, String acquireMode) throws Exception {
        String topic = kafka.name("share-explicit-" + acquireMode);
        String group = kafka.name("share-explicit-group-" + acquireMode);
        setup(kafka, topic, group, PARTITIONS, RECORDS);
        Set<String> released = Set.of("10", "50", "91", "130", "172");
        String rejected = "100";
        Map<String, List<Integer>> deliveries = new TreeMap<>();  // value -> delivery counts seen
        Set<String> accepted = new TreeSet<>();
        List<String> errors = new ArrayList<>();
        List<KafkaShareConsumer<String, String>> consumers = new ArrayList<>();
        try {
            for (int c = 0; c < 2; c++) {
                KafkaShareConsumer<String, String> consumer = consumer(kafka, group, "share-" + c,
                        ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "explicit",
                        ConsumerConfig.SHARE_ACQUIRE_MODE_CONFIG, acquireMode,
                        ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 20);
                consumer.subscribe(List.of(topic));
                consumers.add(consumer);
            }
            Expect.eventually(() -> "every record accepted: accepted " + accepted.size() + ", deliveries "
                    + deliveries + ", errors " + errors, 60, () -> {
                for (KafkaShareConsumer<String, String> consumer : consumers) {
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
                        String value = r.value();
                        int count = r.deliveryCount().map(Short::intValue).orElse(-1);
                        List<Integer> seen = deliveries.computeIfAbsent(value, v -> new ArrayList<>());
                        seen.add(count);
                        if (accepted.contains(value) || value.equals(rejected) && seen.size() > 1) {
                            errors.add(value + " delivered again after its acknowledgement: " + seen);
                        }
                        if (released.contains(value) && seen.size() == 1) {
                            consumer.acknowledge(r, AcknowledgeType.RELEASE);
                        } else if (value.equals(rejected)) {
                            consumer.acknowledge(r, AcknowledgeType.REJECT);
                        } else {
                            consumer.acknowledge(r, AcknowledgeType.ACCEPT);
                            accepted.add(value);
                        }
                    }
                }
                return accepted.size() == RECORDS - 1;
            });
            for (KafkaShareConsumer<String, String> consumer : consumers) {
                consumer.commitSync(Duration.ofSeconds(30));
            }
        } finally {
            for (KafkaShareConsumer<String, String> consumer : consumers) {
                consumer.close(Duration.ofSeconds(10));
            }
        }
        Expect.equal("errors", List.of(), errors);
        for (String value : released) {
            Expect.equal("the delivery counts of released " + value, List.of(1, 2), deliveries.get(value));
        }
        Expect.equal("the deliveries of rejected " + rejected, List.of(1), deliveries.get(rejected));
        Expect.equal("values delivered", RECORDS, deliveries.size());
    }

    /** The share group's start offsets and lags by partition, as the Admin client lists them. */
    static Map<TopicPartition, SharePartitionOffsetInfo> offsets(Admin admin, String group) throws Exception {
        return admin.listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec()))
                .partitionsToOffsetInfo(group).get(30, TimeUnit.SECONDS);
    }

    /** Until no partition has lag left (KIP-1226: every record acknowledged or archived), as the Admin client
     *  lists the group's offsets. (Not the start offsets: Kafka 4.4 reports them behind the last records
     *  acknowledged, with lag 0.) */
    static void awaitDone(Kafka kafka, String topic, String group, int partitions) throws Exception {
        try (Admin admin = kafka.admin()) {
            Map<String, Object> last = new TreeMap<>();
            Expect.eventually(() -> "no lag left in " + group + ": " + last, 60, () -> {
                try {
                    Map<TopicPartition, SharePartitionOffsetInfo> info = offsets(admin, group);
                    last.put("offsets", info);
                    for (int p = 0; p < partitions; p++) {
                        TopicPartition tp = new TopicPartition(topic, p);
                        SharePartitionOffsetInfo one = info.get(tp);
                        if (one == null) {
                            return false;
                        }
                        // DescribeShareGroupOffsets v0 (Kafka 4.1) has no lag, and its start offset is one
                        // state write behind: there, only that the group has state.
                        if (one.lag().isPresent() ? one.lag().get() != 0 : one.startOffset() < 0) {
                            return false;
                        }
                    }
                    return true;
                } catch (Exception e) {
                    last.put("error", e.toString());
                    return false;
                }
            });
        }
    }

    /** Two consumers, implicit acknowledgement (each poll accepts what the one before gave): every record once,
     *  then no lag left. */
    static void implicitAcknowledgement(Kafka kafka) throws Exception {
        String topic = kafka.name("share-implicit");
        String group = kafka.name("share-implicit-group");
        setup(kafka, topic, group, PARTITIONS, RECORDS);
        Map<String, Integer> seen = new TreeMap<>();
        List<KafkaShareConsumer<String, String>> consumers = new ArrayList<>();
        try {
            for (int c = 0; c < 2; c++) {
                KafkaShareConsumer<String, String> consumer = consumer(kafka, group, "share-implicit-" + c,
                        ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 30);
                consumer.subscribe(List.of(topic));
                consumers.add(consumer);
            }
            Expect.eventually(() -> "every record (seen " + seen.size() + ")", 60, () -> {
                for (KafkaShareConsumer<String, String> consumer : consumers) {
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
                        seen.merge(r.value(), 1, Integer::sum);
                        Expect.equal("delivery count of " + r.value(), 1,
                                r.deliveryCount().map(Short::intValue).orElse(-1));
                    }
                }
                return seen.size() == RECORDS;
            });
            for (KafkaShareConsumer<String, String> consumer : consumers) {
                consumer.commitSync(Duration.ofSeconds(30));
            }
        } finally {
            for (KafkaShareConsumer<String, String> consumer : consumers) {
                consumer.close(Duration.ofSeconds(10));
            }
        }
        Expect.isTrue(seen.values().stream().allMatch(n -> n == 1), () -> "delivered more than once: " + seen);
        awaitDone(kafka, topic, group, PARTITIONS);
    }

    /** A consumer that takes records and goes silent without acknowledging them: once their acquisition lock
     *  times out they go to the other consumer, delivered a second time; nothing is lost. */
    static void lockTimeout(Kafka kafka) throws Exception {
        String topic = kafka.name("share-lock");
        String group = kafka.name("share-lock-group");
        int records = 30;
        setup(kafka, topic, group, 1, records);
        try (KafkaShareConsumer<String, String> silent = consumer(kafka, group, "share-silent",
                     ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "explicit");
             KafkaShareConsumer<String, String> other = consumer(kafka, group, "share-other",
                     ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "explicit")) {
            silent.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> held = new ArrayList<>();
            Expect.eventually("records for the silent consumer", 30, () -> {
                for (ConsumerRecord<String, String> r : silent.poll(Duration.ofMillis(100))) {
                    held.add(r);
                }
                return !held.isEmpty();
            });
            int lockMs = silent.acquisitionLockTimeoutMs().orElse(30000);
            other.subscribe(List.of(topic));
            Map<String, Integer> counts = new TreeMap<>();
            Set<String> heldValues = new TreeSet<>(Kafka.values(held));
            Expect.eventually(() -> "every record at the other consumer, the silent one's again: " + counts,
                    lockMs / 1000.0 + 60, () -> {
                for (ConsumerRecord<String, String> r : other.poll(Duration.ofMillis(100))) {
                    counts.put(r.value(), r.deliveryCount().map(Short::intValue).orElse(-1));
                    other.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                return counts.size() == records;
            });
            for (String value : heldValues) {
                Expect.equal("delivery count of " + value + " after the lock timed out", 2, counts.get(value));
            }
            other.commitSync(Duration.ofSeconds(30));
        }
        awaitDone(kafka, topic, group, 1);
    }

    /** RENEW (KIP-1222): a consumer renews the locks of the records it holds for twice the lock duration; the
     *  other consumer of the group gets none of them meanwhile; then it accepts them: each delivered once. */
    static void renew(Kafka kafka) throws Exception {
        String topic = kafka.name("share-renew");
        String group = kafka.name("share-renew-group");
        setup(kafka, topic, group, 1, 9);
        try (KafkaShareConsumer<String, String> holder = consumer(kafka, group, "share-holder",
                     ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "explicit");
             KafkaShareConsumer<String, String> other = consumer(kafka, group, "share-other",
                     ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "explicit")) {
            holder.subscribe(List.of(topic));
            Map<String, Integer> held = new TreeMap<>();
            Expect.eventually(() -> "all 9 records at the holder: " + held, 30, () -> {
                for (ConsumerRecord<String, String> r : holder.poll(Duration.ofMillis(100))) {
                    held.put(r.value(), r.deliveryCount().map(Short::intValue).orElse(-1));
                    holder.acknowledge(r, AcknowledgeType.RENEW);
                }
                return held.size() == 9;
            });
            int lockMs = holder.acquisitionLockTimeoutMs().orElse(30000);
            other.subscribe(List.of(topic));
            List<String> stolen = new ArrayList<>();
            long until = System.nanoTime() + 2L * lockMs * 1_000_000L;
            int renewals = 0;
            while (System.nanoTime() < until) {
                for (ConsumerRecord<String, String> r : holder.poll(Duration.ofMillis(100))) {
                    Expect.equal("delivery count of renewed " + r.value(), 1,
                            r.deliveryCount().map(Short::intValue).orElse(-1));
                    holder.acknowledge(r, AcknowledgeType.RENEW);
                    renewals++;
                }
                for (ConsumerRecord<String, String> r : other.poll(Duration.ofMillis(100))) {
                    stolen.add(r.value());
                    other.acknowledge(r, AcknowledgeType.RELEASE);
                }
            }
            Expect.equal("records the other consumer got while their locks were renewed", List.of(), stolen);
            Expect.isTrue(renewals > 0, "the renewed records came back to the holder");
            Set<String> accepted = new TreeSet<>();
            Expect.eventually(() -> "the holder accepting its records: " + accepted, 30, () -> {
                for (ConsumerRecord<String, String> r : holder.poll(Duration.ofMillis(100))) {
                    holder.acknowledge(r, AcknowledgeType.ACCEPT);
                    accepted.add(r.value());
                }
                return accepted.size() == 9;
            });
            holder.commitSync(Duration.ofSeconds(30));
            Expect.isTrue(held.values().stream().allMatch(n -> n == 1), () -> "first deliveries " + held);
        }
        awaitDone(kafka, topic, group, 1);
    }

    /** share.delivery.count.limit 2 (a group config since Kafka 4.3): records released at every delivery are
     *  delivered twice, then archived: no lag left. */
    static void deliveryCountLimit(Kafka kafka) throws Exception {
        String topic = kafka.name("share-limit");
        String group = kafka.name("share-limit-group");
        int records = 12;
        setup(kafka, topic, group, 1, records, "share.delivery.count.limit", "2");
        Map<String, List<Integer>> deliveries = new TreeMap<>();
        try (KafkaShareConsumer<String, String> consumer = consumer(kafka, group, "share-releaser",
                ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "explicit")) {
            consumer.subscribe(List.of(topic));
            Expect.eventually(() -> "two deliveries of every record: " + deliveries, 60, () -> {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
                    deliveries.computeIfAbsent(r.value(), v -> new ArrayList<>())
                            .add(r.deliveryCount().map(Short::intValue).orElse(-1));
                    consumer.acknowledge(r, AcknowledgeType.RELEASE);
                }
                return deliveries.size() == records && deliveries.values().stream().allMatch(d -> d.size() >= 2);
            });
            consumer.commitSync(Duration.ofSeconds(30));
            awaitDone(kafka, topic, group, 1);
            consumer.poll(Duration.ofMillis(500));
        }
        for (Map.Entry<String, List<Integer>> entry : deliveries.entrySet()) {
            Expect.equal("deliveries of " + entry.getKey(), List.of(1, 2), entry.getValue());
        }
    }

    /** The Admin client on a share group: listed with its type and state, described with its two members and
     *  their assignments while they consume, its offsets listed; once they left, deleted. */
    static void admin(Kafka kafka) throws Exception {
        String topic = kafka.name("share-admin");
        String group = kafka.name("share-admin-group");
        setup(kafka, topic, group, PARTITIONS, 30);
        try (Admin admin = kafka.admin()) {
            List<KafkaShareConsumer<String, String>> consumers = new ArrayList<>();
            Set<String> seen = new TreeSet<>();
            try {
                for (int c = 0; c < 2; c++) {
                    KafkaShareConsumer<String, String> consumer = consumer(kafka, group, "share-admin-" + c);
                    consumer.subscribe(List.of(topic));
                    consumers.add(consumer);
                }
                Expect.eventually(() -> "both members stable with assignments", 60, () -> {
                    for (KafkaShareConsumer<String, String> consumer : consumers) {
                        consumer.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
                    }
                    try {
                        ShareGroupDescription d = admin.describeShareGroups(List.of(group)).describedGroups()
                                .get(group).get(30, TimeUnit.SECONDS);
                        return d.groupState() == GroupState.STABLE && d.members().size() == 2
                                && d.members().stream().allMatch(m -> !m.assignment().topicPartitions().isEmpty());
                    } catch (Exception e) {
                        return false;
                    }
                });
                ShareGroupDescription described = admin.describeShareGroups(List.of(group)).describedGroups()
                        .get(group).get(30, TimeUnit.SECONDS);
                Set<TopicPartition> assigned = new TreeSet<>(java.util.Comparator.comparing(TopicPartition::toString));
                for (ShareMemberDescription member : described.members()) {
                    assigned.addAll(member.assignment().topicPartitions());
                    Expect.isTrue(member.clientId().startsWith("share-admin-"), "client id " + member.clientId());
                }
                Expect.equal("partitions assigned", PARTITIONS, assigned.size());
                Collection<GroupListing> listed = admin.listGroups(ListGroupsOptions.forShareGroups()).all()
                        .get(30, TimeUnit.SECONDS);
                GroupListing listing = listed.stream().filter(g -> g.groupId().equals(group)).findFirst()
                        .orElseThrow(() -> new Expect.Failed(group + " not listed: " + listed));
                Expect.equal("listed type", java.util.Optional.of(GroupType.SHARE), listing.type());
                Expect.eventually(() -> "every record delivered", 60, () -> {
                    for (KafkaShareConsumer<String, String> consumer : consumers) {
                        consumer.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
                    }
                    return seen.size() == 30;
                });
                for (KafkaShareConsumer<String, String> consumer : consumers) {
                    consumer.commitSync(Duration.ofSeconds(30));
                }
            } finally {
                for (KafkaShareConsumer<String, String> consumer : consumers) {
                    consumer.close(Duration.ofSeconds(10));
                }
            }
            awaitDone(kafka, topic, group, PARTITIONS);
            Expect.eventually("the group empty", 30, () -> {
                try {
                    return admin.describeShareGroups(List.of(group)).describedGroups().get(group)
                            .get(30, TimeUnit.SECONDS).groupState() == GroupState.EMPTY;
                } catch (Exception e) {
                    return false;
                }
            });
            admin.deleteShareGroups(List.of(group)).all().get(30, TimeUnit.SECONDS);
            Collection<GroupListing> after = admin.listGroups(ListGroupsOptions.forShareGroups()).all()
                    .get(30, TimeUnit.SECONDS);
            Expect.isTrue(after.stream().noneMatch(g -> g.groupId().equals(group)), () -> "still listed: " + after);
            Expect.raises(GroupIdNotFoundException.class, "describing the deleted group", () ->
                    admin.describeShareGroups(List.of(group)).describedGroups().get(group).get(30, TimeUnit.SECONDS));
        }
    }
}

package minibroker.check;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ConsumerGroupState;
import org.apache.kafka.common.TopicPartition;

/** Consumers in a classic group, eager (range) and cooperative-sticky: every record consumed exactly once
 *  across rebalances as members join and leave (offsets committed when partitions are revoked), the
 *  revocations each protocol makes, the group as the AdminClient describes it; static membership; commits
 *  with metadata, sync and async; offsets by time. And the KIP-848 protocol (group.protocol=consumer). */
final class ConsumerChecks {
    static final int PARTITIONS = 4;

    static void register(Map<String, Main.Check> checks) {
        checks.put("consumer.group_eager", kafka -> groupRebalances(kafka, false));
        checks.put("consumer.group_cooperative", kafka -> groupRebalances(kafka, true));
        checks.put("consumer.static_membership", ConsumerChecks::staticMembership);
        checks.put("consumer.commits", ConsumerChecks::commits);
        checks.put("consumer.offsets_for_times", ConsumerChecks::offsetsForTimes);
        // Run only where the broker serves ConsumerGroupHeartbeat (the test driver decides).
        checks.put("consumer_protocol.group", ConsumerChecks::consumerProtocol);
    }

    /** One group member, polled by the check's thread, recording what its rebalance listener is told. */
    static final class Member implements ConsumerRebalanceListener {
        final String name;
        final KafkaConsumer<String, String> consumer;
        final Set<TopicPartition> owned = new HashSet<>();
        final List<Set<TopicPartition>> revocations = new ArrayList<>();
        final List<Set<TopicPartition>> assignments = new ArrayList<>();
        final Map<TopicPartition, OffsetAndMetadata> processed = new HashMap<>();
        final List<String> values;

        Member(Kafka kafka, String name, String topic, List<String> values, Object... settings) {
            this.name = name;
            this.values = values;
            List<Object> all = new ArrayList<>(List.of(ConsumerConfig.CLIENT_ID_CONFIG, name,
                    ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 20));
            all.addAll(List.of(settings));
            consumer = kafka.consumer(all.toArray());
            consumer.subscribe(List.of(topic), this);
        }

        void poll() {
            for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(50))) {
                values.add(r.value());
                processed.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
            }
        }

        /** Commits what was processed of `partitions`. */
        void commit(Collection<TopicPartition> partitions) {
            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
            for (TopicPartition tp : partitions) {
                if (processed.containsKey(tp)) {
                    offsets.put(tp, processed.get(tp));
                }
            }
            if (!offsets.isEmpty()) {
                consumer.commitSync(offsets);
            }
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            if (!partitions.isEmpty()) {
                revocations.add(new HashSet<>(partitions));
                commit(partitions);
            }
            owned.removeAll(partitions);
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            assignments.add(new HashSet<>(partitions));
            owned.addAll(partitions);
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            owned.removeAll(partitions);
        }
    }

    static List<String> produce(Kafka kafka, String topic, String label, int perPartition) {
        List<String> values = new ArrayList<>();
        try (KafkaProducer<String, String> producer = kafka.producer()) {
            for (int i = 0; i < perPartition; i++) {
                for (int p = 0; p < PARTITIONS; p++) {
                    String value = label + "-p" + p + "-" + i;
                    producer.send(new ProducerRecord<>(topic, p, "k" + i, value));
                    values.add(value);
                }
            }
        }
        return values;
    }

    static void pollUntil(String what, List<Member> members, java.util.function.BooleanSupplier done)
            throws InterruptedException {
        Expect.eventually(what, 60, () -> {
            for (Member m : members) {
                m.poll();
            }
            return done.getAsBoolean();
        });
    }

    static void groupRebalances(Kafka kafka, boolean cooperative) throws Exception {
        String kind = cooperative ? "cooperative" : "eager";
        String topic = kafka.name("group-" + kind);
        String group = kafka.name("group-" + kind);
        kafka.createTopic(topic, PARTITIONS);
        List<String> produced = produce(kafka, topic, "a", 100);
        List<String> consumed = new ArrayList<>();
        Object[] settings = {ConsumerConfig.GROUP_ID_CONFIG, group,
                ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
                (cooperative ? CooperativeStickyAssignor.class : RangeAssignor.class).getName(),
                ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 300,
                ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 10000};
        Member first = new Member(kafka, "first", topic, consumed, settings);
        Member second = null;
        try (Admin admin = kafka.admin()) {
            pollUntil("the first member to own every partition and read 100 records", List.of(first),
                    () -> first.owned.size() == PARTITIONS && consumed.size() >= 100);
            first.commit(first.owned);

            second = new Member(kafka, "second", topic, consumed, settings);
            Member joined = second;
            pollUntil("two members with two partitions each, all 400 records read", List.of(first, second),
                    () -> first.owned.size() == 2 && joined.owned.size() == 2 && consumed.size() >= 400);
            Set<TopicPartition> moved = new HashSet<>(second.owned);
            if (cooperative) {
                // Only the partitions that moved were revoked from the first member, once.
                Expect.equal("revocations of the first member", List.of(moved), first.revocations);
            } else {
                Expect.equal("revocations of the first member (eager: everything)",
                        List.of(new HashSet<>(Kafka.partitions(topic, PARTITIONS))), first.revocations);
            }

            ConsumerGroupDescription description = admin.describeConsumerGroups(List.of(group))
                    .describedGroups().get(group).get(30, TimeUnit.SECONDS);
            Expect.equal("group state", ConsumerGroupState.STABLE, description.state());
            Expect.equal("assignor", cooperative ? "cooperative-sticky" : "range", description.partitionAssignor());
            Map<String, Set<TopicPartition>> assignment = new HashMap<>();
            for (MemberDescription m : description.members()) {
                assignment.put(m.clientId(), m.assignment().topicPartitions());
            }
            Expect.equal("assignment described", Map.of("first", first.owned, "second", second.owned), assignment);

            produced.addAll(produce(kafka, topic, "b", 10));
            pollUntil("440 records", List.of(first, second), () -> consumed.size() >= 440);
            second.commit(second.owned);
            second.consumer.close();
            second = null;
            pollUntil("the first member to own every partition again", List.of(first),
                    () -> first.owned.size() == PARTITIONS);
            produced.addAll(produce(kafka, topic, "c", 10));
            pollUntil("480 records", List.of(first), () -> consumed.size() >= 480);
            first.commit(first.owned);

            expectReadOnce(admin, group, topic, produced, consumed, 120L);
        } finally {
            first.consumer.close();
            if (second != null) {
                second.consumer.close();
            }
        }
    }

    /** Every record produced was consumed once, and the group's committed offsets are at `end` on every partition. */
    static void expectReadOnce(Admin admin, String group, String topic, List<String> produced, List<String> consumed,
                               long end) throws Exception {
        Expect.equal("records consumed (each once)", new TreeSet<>(produced).toString(),
                new TreeSet<>(consumed).toString());
        Expect.equal("records consumed, duplicates included", produced.size(), consumed.size());
        Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
        for (TopicPartition tp : Kafka.partitions(topic, PARTITIONS)) {
            Expect.equal("committed offset of " + tp, end, committed.get(tp).offset());
        }
    }

    static void staticMembership(Kafka kafka) throws Exception {
        String topic = kafka.name("static");
        String group = kafka.name("static");
        kafka.createTopic(topic, PARTITIONS);
        List<String> consumed = new ArrayList<>();
        Object[] common = {ConsumerConfig.GROUP_ID_CONFIG, group, ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 300,
                ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 30000};
        Member a = new Member(kafka, "a", topic, consumed, with(common, ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "a"));
        Member b = new Member(kafka, "b", topic, consumed, with(common, ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "b"));
        try {
            Member first = a;
            AtomicReference<Member> second = new AtomicReference<>(b);
            pollUntil("two static members with two partitions each", List.of(a, b),
                    () -> first.owned.size() == 2 && second.get().owned.size() == 2);
            Set<TopicPartition> ofB = new HashSet<>(b.owned);
            int assignmentsOfA = a.assignments.size();
            int revocationsOfA = a.revocations.size();
            // A static member leaves no group on close: its replacement takes its place without a rebalance.
            b.consumer.close();
            b = new Member(kafka, "b2", topic, consumed, with(common, ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "b"));
            second.set(b);
            pollUntil("the restarted static member to get its partitions back", List.of(a, b),
                    () -> second.get().owned.size() == 2);
            Expect.equal("partitions of the restarted member", ofB, b.owned);
            for (int i = 0; i < 20; i++) {
                a.poll();
            }
            Expect.equal("revocations of the other member", revocationsOfA, a.revocations.size());
            Expect.equal("assignments of the other member", assignmentsOfA, a.assignments.size());
        } finally {
            a.consumer.close();
            b.consumer.close();
        }
    }

    static Object[] with(Object[] base, Object... more) {
        List<Object> all = new ArrayList<>(List.of(base));
        all.addAll(List.of(more));
        return all.toArray();
    }

    static void commits(Kafka kafka) throws Exception {
        String topic = kafka.name("commits");
        String group = kafka.name("commits");
        kafka.createTopic(topic, 2);
        try (KafkaProducer<String, String> producer = kafka.producer()) {
            for (int i = 0; i < 20; i++) {
                producer.send(new ProducerRecord<>(topic, i % 2, "k", "v" + i));
            }
        }
        TopicPartition p0 = new TopicPartition(topic, 0);
        TopicPartition p1 = new TopicPartition(topic, 1);
        try (KafkaConsumer<String, String> consumer = kafka.consumer(ConsumerConfig.GROUP_ID_CONFIG, group)) {
            consumer.assign(List.of(p0, p1));
            consumer.commitSync(Map.of(p0, new OffsetAndMetadata(5, "sync metadata")));
            Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(Set.of(p0, p1));
            Expect.equal("committed offset of p0", 5L, committed.get(p0).offset());
            Expect.equal("committed metadata of p0", "sync metadata", committed.get(p0).metadata());
            Expect.isTrue(committed.get(p1) == null, "nothing committed for p1: " + committed.get(p1));

            AtomicReference<Object> result = new AtomicReference<>();
            consumer.commitAsync(Map.of(p1, new OffsetAndMetadata(7, "async")), (offsets, error) ->
                    result.set(error != null ? error : offsets));
            Expect.eventually("the async commit's callback", 30, () -> {
                consumer.poll(Duration.ofMillis(50));
                return result.get();
            });
            Expect.equal("async commit result", Map.of(p1, new OffsetAndMetadata(7, "async")), result.get());
        }
        try (KafkaConsumer<String, String> consumer = kafka.consumer(ConsumerConfig.GROUP_ID_CONFIG, group)) {
            consumer.assign(List.of(p0, p1));
            List<ConsumerRecord<String, String>> records = new ArrayList<>();
            Expect.eventually("records after the committed offsets", 30, () -> {
                consumer.poll(Duration.ofMillis(100)).forEach(records::add);
                return records.size() >= 8;
            });
            Map<Integer, Long> first = new HashMap<>();
            for (ConsumerRecord<String, String> r : records) {
                first.putIfAbsent(r.partition(), r.offset());
            }
            Expect.equal("first offsets read by a new consumer of the group", Map.of(0, 5L, 1, 7L), first);
            Expect.equal("records read by a new consumer of the group", 8, records.size());
        }
    }

    static void offsetsForTimes(Kafka kafka) throws Exception {
        String topic = kafka.name("times");
        kafka.createTopic(topic, 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        long base = 1_600_000_000_000L;
        try (KafkaProducer<String, String> producer = kafka.producer()) {
            for (int i = 0; i < 10; i++) {
                producer.send(new ProducerRecord<>(topic, 0, base + i * 1000L, "k", "v" + i)).get();
            }
        }
        try (KafkaConsumer<String, String> consumer = kafka.consumer()) {
            Map<TopicPartition, OffsetAndTimestamp> found = consumer.offsetsForTimes(Map.of(tp, base + 4500L));
            Expect.equal("offset for a time between records", 5L, found.get(tp).offset());
            Expect.equal("timestamp found", base + 5000L, found.get(tp).timestamp());
            Expect.isTrue(consumer.offsetsForTimes(Map.of(tp, base + 60_000L)).get(tp) == null,
                    "no offset after the last record's time");
            Expect.equal("beginning offsets", Map.of(tp, 0L), consumer.beginningOffsets(List.of(tp)));
            Expect.equal("end offsets", Map.of(tp, 10L), consumer.endOffsets(List.of(tp)));
            consumer.assign(List.of(tp));
            consumer.seek(tp, found.get(tp).offset());
            List<String> values = new ArrayList<>();
            Expect.eventually("records from offset 5", 30, () -> {
                consumer.poll(Duration.ofMillis(100)).forEach(r -> values.add(r.value()));
                return values.size() >= 5;
            });
            Expect.equal("records from the offset found", List.of("v5", "v6", "v7", "v8", "v9"), values);
        }
    }

    static void consumerProtocol(Kafka kafka) throws Exception {
        String topic = kafka.name("kip848");
        String group = kafka.name("kip848");
        kafka.createTopic(topic, PARTITIONS);
        List<String> produced = produce(kafka, topic, "a", 50);
        List<String> consumed = new ArrayList<>();
        Object[] settings = {ConsumerConfig.GROUP_ID_CONFIG, group, ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer"};
        Member first = new Member(kafka, "first", topic, consumed, settings);
        Member second = new Member(kafka, "second", topic, consumed, settings);
        try (Admin admin = kafka.admin()) {
            pollUntil("two members with two partitions each, all records read", List.of(first, second),
                    () -> first.owned.size() == 2 && second.owned.size() == 2 && consumed.size() >= produced.size());
            first.commit(first.owned);
            second.commit(second.owned);
            Expect.equal("records consumed", new TreeSet<>(produced).toString(), new TreeSet<>(consumed).toString());
            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
            for (TopicPartition tp : Kafka.partitions(topic, PARTITIONS)) {
                Expect.equal("committed offset of " + tp, 50L, committed.get(tp).offset());
            }
        } finally {
            first.consumer.close();
            second.consumer.close();
        }
    }

    private ConsumerChecks() {}
}

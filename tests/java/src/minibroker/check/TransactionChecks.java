package minibroker.check;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;

/** The transactional producer: commits and aborts as read_committed and read_uncommitted consumers see them,
 *  an open transaction holding read_committed consumers back, fencing by a second instance, offsets committed
 *  in a transaction (consume-transform-produce), and a transaction the broker aborts on its timeout. */
final class TransactionChecks {
    static void register(Map<String, Main.Check> checks) {
        checks.put("transactions.commit_abort", TransactionChecks::commitAndAbort);
        checks.put("transactions.open_blocks_read_committed", TransactionChecks::openTransaction);
        checks.put("transactions.fencing", TransactionChecks::fencing);
        checks.put("transactions.send_offsets", TransactionChecks::sendOffsets);
        checks.put("transactions.timeout", TransactionChecks::timeout);
    }

    static KafkaProducer<String, String> transactional(Kafka kafka, String id, Object... more) {
        List<Object> settings = new ArrayList<>(List.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id,
                ProducerConfig.LINGER_MS_CONFIG, 5));
        settings.addAll(List.of(more));
        KafkaProducer<String, String> producer = kafka.producer(settings.toArray());
        producer.initTransactions();
        return producer;
    }

    /** Sends `label-0` .. `label-(n-1)`, alternating between partitions 0 and 1. */
    static void send(KafkaProducer<String, String> producer, String topic, String label, int n) {
        for (int i = 0; i < n; i++) {
            producer.send(new ProducerRecord<>(topic, i % 2, "k" + i, label + "-" + i));
        }
    }

    static List<String> expected(String label, int n, int partition) {
        List<String> values = new ArrayList<>();
        for (int i = partition; i < n; i += 2) {
            values.add(label + "-" + i);
        }
        return values;
    }

    static void commitAndAbort(Kafka kafka) throws Exception {
        String topic = kafka.name("txn");
        kafka.createTopic(topic, 2);
        try (KafkaProducer<String, String> producer = transactional(kafka, kafka.name("txn-commit-abort"))) {
            for (String label : List.of("c1", "a1", "c2", "a2", "c3")) {
                producer.beginTransaction();
                send(producer, topic, label, 10);
                if (label.startsWith("c")) {
                    producer.commitTransaction();
                } else {
                    producer.flush();
                    producer.abortTransaction();
                }
            }
        }
        Map<Integer, List<String>> committed = Kafka.valuesByPartition(kafka.readAll(topic, 2, "read_committed"));
        Map<Integer, List<String>> everything = Kafka.valuesByPartition(kafka.readAll(topic, 2, "read_uncommitted"));
        for (int p = 0; p < 2; p++) {
            List<String> wanted = new ArrayList<>();
            List<String> all = new ArrayList<>();
            for (String label : List.of("c1", "a1", "c2", "a2", "c3")) {
                if (label.startsWith("c")) {
                    wanted.addAll(expected(label, 10, p));
                }
                all.addAll(expected(label, 10, p));
            }
            Expect.equal("read_committed values of partition " + p, wanted, committed.get(p));
            Expect.equal("read_uncommitted values of partition " + p, all, everything.get(p));
        }
        try (KafkaConsumer<String, String> consumer = kafka.consumer(ConsumerConfig.ISOLATION_LEVEL_CONFIG,
                "read_committed")) {
            // 5 records and one marker per transaction and partition; nothing is open, so the LSO is the end.
            Map<TopicPartition, Long> ends = consumer.endOffsets(Kafka.partitions(topic, 2));
            Expect.equal("end offsets", Map.of(new TopicPartition(topic, 0), 30L, new TopicPartition(topic, 1), 30L),
                    ends);
        }
    }

    static void openTransaction(Kafka kafka) throws Exception {
        String topic = kafka.name("txn-open");
        kafka.createTopic(topic, 2);
        List<TopicPartition> tps = Kafka.partitions(topic, 2);
        try (KafkaProducer<String, String> producer = transactional(kafka, kafka.name("txn-open"));
             KafkaConsumer<String, String> committed = kafka.consumer(ConsumerConfig.ISOLATION_LEVEL_CONFIG,
                     "read_committed");
             KafkaConsumer<String, String> uncommitted = kafka.consumer(ConsumerConfig.ISOLATION_LEVEL_CONFIG,
                     "read_uncommitted")) {
            producer.beginTransaction();
            send(producer, topic, "before", 4);
            producer.commitTransaction();
            producer.beginTransaction();
            send(producer, topic, "open", 6);
            producer.flush();

            Expect.equal("read_committed end offsets (LSO) while a transaction is open",
                    Map.of(tps.get(0), 3L, tps.get(1), 3L), committed.endOffsets(tps));
            Expect.equal("read_uncommitted end offsets (high watermark)", Map.of(tps.get(0), 6L, tps.get(1), 6L),
                    uncommitted.endOffsets(tps));
            committed.assign(tps);
            committed.seekToBeginning(tps);
            List<String> seen = new ArrayList<>();
            long deadline = System.nanoTime() + 1_500_000_000L;
            while (System.nanoTime() < deadline) {
                committed.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
            }
            seen.sort(null);
            Expect.equal("read_committed records while the second transaction is open",
                    List.of("before-0", "before-1", "before-2", "before-3"), seen);
            Expect.equal("read_committed positions stop at the LSO", List.of(3L, 3L),
                    List.of(committed.position(tps.get(0)), committed.position(tps.get(1))));

            producer.commitTransaction();
            Expect.eventually("the committed transaction to be read", 30, () -> {
                committed.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
                return seen.size() >= 10;
            });
            Expect.equal("read_committed records after the commit", 10, seen.size());
            Expect.isTrue(seen.containsAll(List.of("open-0", "open-5")), "the second transaction was read: " + seen);
        }
    }

    static void fencing(Kafka kafka) throws Exception {
        String topic = kafka.name("txn-fence");
        String id = kafka.name("txn-fence");
        kafka.createTopic(topic, 2);
        KafkaProducer<String, String> zombie = transactional(kafka, id);
        try {
            zombie.beginTransaction();
            send(zombie, topic, "zombie", 4);
            zombie.flush();
            try (KafkaProducer<String, String> successor = transactional(kafka, id);
                 Admin admin = kafka.admin()) {
                // The successor's InitProducerId bumped the epoch and aborted the zombie's open transaction.
                TransactionDescription description = admin.describeTransactions(List.of(id)).description(id)
                        .get(30, TimeUnit.SECONDS);
                Expect.isTrue(description.state() == TransactionState.EMPTY
                        || description.state() == TransactionState.COMPLETE_ABORT,
                        "state after the fence: " + description.state());
                Expect.isTrue(description.producerEpoch() >= 1,
                        "epoch bumped by the successor: " + description.producerEpoch());

                Expect.raises(KafkaException.class, "commit by the fenced producer", zombie::commitTransaction);
                successor.beginTransaction();
                send(successor, topic, "successor", 4);
                successor.commitTransaction();
            }
        } finally {
            zombie.close(Duration.ofSeconds(5));
        }
        List<String> committed = Kafka.values(kafka.readAll(topic, 2, "read_committed"));
        committed.sort(null);
        Expect.equal("read_committed values", List.of("successor-0", "successor-1", "successor-2", "successor-3"),
                committed);
        Expect.equal("read_uncommitted count (the zombie's records are there, aborted)", 8,
                kafka.readAll(topic, 2, "read_uncommitted").size());
    }

    static void sendOffsets(Kafka kafka) throws Exception {
        String input = kafka.name("ctp-in");
        String output = kafka.name("ctp-out");
        String group = kafka.name("ctp-group");
        kafka.createTopic(input, 1);
        kafka.createTopic(output, 1);
        try (KafkaProducer<String, String> plain = kafka.producer()) {
            for (int i = 0; i < 20; i++) {
                plain.send(new ProducerRecord<>(input, "k" + i, "in-" + i));
            }
        }
        TopicPartition in = new TopicPartition(input, 0);
        try (KafkaConsumer<String, String> consumer = kafka.consumer(ConsumerConfig.GROUP_ID_CONFIG, group,
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed", ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 10);
             KafkaProducer<String, String> producer = transactional(kafka, kafka.name("ctp"));
             Admin admin = kafka.admin()) {
            consumer.subscribe(List.of(input));
            for (boolean commit : new boolean[] {true, false}) {
                List<ConsumerRecord<String, String>> polled = new ArrayList<>();
                Expect.eventually("10 input records", 30, () -> {
                    consumer.poll(Duration.ofMillis(100)).forEach(polled::add);
                    return polled.size() >= 10;
                });
                List<ConsumerRecord<String, String>> batch = polled.subList(0, 10);
                consumer.seek(in, batch.get(9).offset() + 1);
                producer.beginTransaction();
                for (ConsumerRecord<String, String> r : batch) {
                    producer.send(new ProducerRecord<>(output, r.key(), r.value().replace("in-", "out-")));
                }
                long next = batch.get(batch.size() - 1).offset() + 1;
                producer.sendOffsetsToTransaction(Map.of(in, new OffsetAndMetadata(next, "txn")),
                        consumer.groupMetadata());
                if (commit) {
                    producer.commitTransaction();
                } else {
                    producer.abortTransaction();
                }
                Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(group)
                        .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
                // Only the committed transaction's offset counts: the aborted one leaves it at 10.
                Expect.equal("group offset after " + (commit ? "commit" : "abort"), 10L, offsets.get(in).offset());
                Expect.equal("offset metadata", "txn", offsets.get(in).metadata());
            }
        }
        List<String> out = Kafka.values(kafka.readAll(output, 1, "read_committed"));
        List<String> wanted = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            wanted.add("out-" + i);
        }
        Expect.equal("read_committed output", wanted, out);
        try (KafkaConsumer<String, String> restarted = kafka.consumer(ConsumerConfig.GROUP_ID_CONFIG, group)) {
            restarted.subscribe(List.of(input));
            List<String> seen = new ArrayList<>();
            Expect.eventually("the restarted consumer to resume at the committed offset", 30, () -> {
                restarted.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
                return !seen.isEmpty();
            });
            Expect.equal("first record after the restart", "in-10", seen.get(0));
        }
    }

    static void timeout(Kafka kafka) throws Exception {
        String topic = kafka.name("txn-timeout");
        String id = kafka.name("txn-timeout");
        kafka.createTopic(topic, 2);
        try (KafkaProducer<String, String> producer = transactional(kafka, id,
                ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 2000);
             Admin admin = kafka.admin()) {
            producer.beginTransaction();
            send(producer, topic, "late", 4);
            producer.flush();
            Expect.equal("transactions listed as Ongoing", Set.of(id), ongoing(admin, id));
            // The broker aborts the transaction after its 2 s timeout and bumps the epoch.
            Expect.eventually("the broker to abort the timed-out transaction", 30, () -> {
                try {
                    TransactionState state = admin.describeTransactions(List.of(id)).description(id).get().state();
                    return state == TransactionState.COMPLETE_ABORT || state == TransactionState.EMPTY;
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            Expect.raises(KafkaException.class, "commit after the broker aborted", producer::commitTransaction);
        }
        Expect.equal("read_committed records", 0, kafka.readAll(topic, 2, "read_committed").size());
    }

    static Set<String> ongoing(Admin admin, String id) throws Exception {
        Map<String, TransactionState> states = new HashMap<>();
        admin.listTransactions().all().get(30, TimeUnit.SECONDS)
                .forEach(t -> states.put(t.transactionalId(), t.state()));
        return states.get(id) == TransactionState.ONGOING ? Set.of(id) : Set.of();
    }

    private TransactionChecks() {}
}

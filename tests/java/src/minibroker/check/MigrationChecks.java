package minibroker.check;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;

/** KIP-848's online migration with the Java client: a classic-protocol KafkaConsumer consuming alone in a classic
 *  group, a consumer-protocol KafkaConsumer joining it (the group becomes a consumer group, the classic member
 *  stays, served by it), both consuming, then the consumer-protocol one leaving (the group is classic again and the
 *  classic member takes every partition back); every record read once, none lost or read twice, with eager (range)
 *  and cooperative (cooperative-sticky) classic members. Needs a broker that serves ConsumerGroupHeartbeat (a 4.x
 *  Kafka, or minibroker under a 4.x profile) with group.consumer.migration.policy=bidirectional, its default. */
final class MigrationChecks {
    static final int PARTITIONS = ConsumerChecks.PARTITIONS;

    static void register(Map<String, Main.Check> checks) {
        checks.put("migration.eager", kafka -> upgradeAndDowngrade(kafka, false));
        checks.put("migration.cooperative", kafka -> upgradeAndDowngrade(kafka, true));
    }

    static void upgradeAndDowngrade(Kafka kafka, boolean cooperative) throws Exception {
        String kind = cooperative ? "cooperative" : "eager";
        String topic = kafka.name("migration-" + kind);
        String group = kafka.name("migration-" + kind);
        kafka.createTopic(topic, PARTITIONS);
        List<String> consumed = new ArrayList<>();
        ConsumerChecks.Member classic = new ConsumerChecks.Member(kafka, "classic", topic, consumed,
                ConsumerConfig.GROUP_ID_CONFIG, group, ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic",
                ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
                (cooperative ? CooperativeStickyAssignor.class : RangeAssignor.class).getName(),
                ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 300, ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 10000);
        ConsumerChecks.Member modern = null;
        try (Admin admin = kafka.admin()) {
            List<String> produced = ConsumerChecks.produce(kafka, topic, "a", 50);
            ConsumerChecks.pollUntil("the classic member to own every partition and read 200 records",
                    List.of(classic), () -> classic.owned.size() == PARTITIONS && consumed.size() >= 200);
            classic.commit(classic.owned);
            Expect.equal("the group before", GroupType.CLASSIC, describe(admin, group).type());

            // The upgrade: a consumer-protocol member joins the classic group with a member.
            modern = new ConsumerChecks.Member(kafka, "consumer", topic, consumed,
                    ConsumerConfig.GROUP_ID_CONFIG, group, ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
            ConsumerChecks.Member joined = modern;
            produced.addAll(ConsumerChecks.produce(kafka, topic, "b", 25));
            ConsumerChecks.pollUntil("two members of two protocols with two partitions each, 300 records read",
                    List.of(classic, modern), () -> classic.owned.size() == PARTITIONS / 2
                            && joined.owned.size() == PARTITIONS / 2 && consumed.size() >= 300);
            ConsumerGroupDescription mixed = stable(admin, group, List.of(classic, modern));
            Expect.equal("the group after the upgrade", GroupType.CONSUMER, mixed.type());
            Map<String, Optional<Boolean>> upgraded = new HashMap<>();
            Map<String, Object> owned = new HashMap<>();
            for (MemberDescription m : mixed.members()) {
                upgraded.put(m.clientId(), m.upgraded());
                owned.put(m.clientId(), new TreeSet<>(m.assignment().topicPartitions().stream()
                        .map(TopicPartition::partition).toList()));
            }
            Expect.equal("protocols of the members (upgraded: the consumer protocol)",
                    Map.of("classic", Optional.of(false), "consumer", Optional.of(true)), upgraded);
            Expect.equal("assignments described", Map.of(
                    "classic", new TreeSet<>(classic.owned.stream().map(TopicPartition::partition).toList()),
                    "consumer", new TreeSet<>(modern.owned.stream().map(TopicPartition::partition).toList())), owned);
            classic.commit(classic.owned);
            modern.commit(modern.owned);

            // The downgrade: the last consumer-protocol member leaves.
            modern.consumer.close();
            modern = null;
            produced.addAll(ConsumerChecks.produce(kafka, topic, "c", 25));
            ConsumerChecks.pollUntil("the classic member to own every partition again, 400 records read",
                    List.of(classic), () -> classic.owned.size() == PARTITIONS && consumed.size() >= 400);
            classic.commit(classic.owned);
            ConsumerGroupDescription after = stable(admin, group, List.of(classic));
            Expect.equal("the group after the downgrade", GroupType.CLASSIC, after.type());
            Expect.equal("its assignor", cooperative ? "cooperative-sticky" : "range", after.partitionAssignor());

            ConsumerChecks.expectReadOnce(admin, group, topic, produced, consumed, 100L);
        } finally {
            classic.consumer.close();
            if (modern != null) {
                modern.consumer.close();
            }
        }
    }

    /** The group as the AdminClient describes it once Stable, its members polling meanwhile. */
    static ConsumerGroupDescription stable(Admin admin, String group, List<ConsumerChecks.Member> members)
            throws InterruptedException {
        ConsumerGroupDescription[] seen = new ConsumerGroupDescription[1];
        ConsumerChecks.pollUntil("group " + group + " to be Stable", members, () -> {
            seen[0] = describe(admin, group);
            return seen[0].groupState() == GroupState.STABLE;
        });
        return seen[0];
    }

    static ConsumerGroupDescription describe(Admin admin, String group) {
        try {
            return admin.describeConsumerGroups(List.of(group)).describedGroups().get(group).get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
    }

    private MigrationChecks() {}
}

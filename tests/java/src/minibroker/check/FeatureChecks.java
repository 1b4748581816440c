package minibroker.check;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.errors.InvalidUpdateVersionException;
import org.apache.kafka.common.errors.UnsupportedVersionException;

/** The AdminClient's describeFeatures and updateFeatures (KIP-584) against a 4.x profile: validate-only and real
 *  changes, a refused downgrade, and group.version 0 turning the consumer group protocol off for a consumer. */
final class FeatureChecks {
    static void register(Map<String, Main.Check> checks) {
        checks.put("features.update", FeatureChecks::update);
    }

    static short finalized(Admin admin, String feature) throws Exception {
        FeatureMetadata metadata = AdminChecks.get(admin.describeFeatures().featureMetadata());
        var level = metadata.finalizedFeatures().get(feature);
        return level == null ? 0 : level.maxVersionLevel();
    }

    static void update(Kafka kafka) throws Exception {
        try (Admin admin = kafka.admin()) {
            FeatureMetadata before = AdminChecks.get(admin.describeFeatures().featureMetadata());
            Expect.equal("group.version finalized", (short) 1, finalized(admin, "group.version"));
            Expect.isTrue(before.supportedFeatures().get("transaction.version").maxVersion() == 2,
                    "transaction.version supported up to 2: " + before.supportedFeatures());

            AdminChecks.get(admin.updateFeatures(Map.of("group.version",
                    new FeatureUpdate((short) 0, FeatureUpdate.UpgradeType.SAFE_DOWNGRADE)),
                    new UpdateFeaturesOptions().validateOnly(true)).all());
            Expect.equal("validate-only changes nothing", (short) 1, finalized(admin, "group.version"));

            try {
                AdminChecks.get(admin.updateFeatures(Map.of("transaction.version",
                        new FeatureUpdate((short) 1, FeatureUpdate.UpgradeType.UPGRADE)),
                        new UpdateFeaturesOptions()).all());
                throw new Expect.Failed("a downgrade typed as an upgrade was accepted");
            } catch (ExecutionException e) {
                Expect.isTrue(e.getCause() instanceof InvalidUpdateVersionException, "refused: " + e.getCause());
            }

            AdminChecks.get(admin.updateFeatures(Map.of("group.version",
                    new FeatureUpdate((short) 0, FeatureUpdate.UpgradeType.SAFE_DOWNGRADE)),
                    new UpdateFeaturesOptions()).all());
            Expect.equal("group.version after the downgrade", (short) 0, finalized(admin, "group.version"));
            String topic = kafka.name("features");
            kafka.createTopic(admin, topic, 1, null);
            try (KafkaConsumer<String, String> consumer = kafka.consumer(
                    ConsumerConfig.GROUP_ID_CONFIG, kafka.name("features-group"),
                    ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer")) {
                consumer.subscribe(List.of(topic));
                try {
                    consumer.poll(Duration.ofSeconds(10));
                    throw new Expect.Failed("a consumer-protocol consumer joined with group.version 0");
                } catch (UnsupportedVersionException e) {
                    // the consumer group protocol is off, as on a Kafka cluster with group.version 0
                }
            }

            AdminChecks.get(admin.updateFeatures(Map.of("group.version",
                    new FeatureUpdate((short) 1, FeatureUpdate.UpgradeType.UPGRADE),
                    "transaction.version", new FeatureUpdate((short) 1, FeatureUpdate.UpgradeType.SAFE_DOWNGRADE)),
                    new UpdateFeaturesOptions()).all());
            Expect.equal("group.version back", (short) 1, finalized(admin, "group.version"));
            Expect.equal("transaction.version down", (short) 1, finalized(admin, "transaction.version"));
            AdminChecks.get(admin.updateFeatures(Map.of("transaction.version",
                    new FeatureUpdate((short) 2, FeatureUpdate.UpgradeType.UPGRADE)), new UpdateFeaturesOptions()).all());
            Expect.equal("transaction.version back", (short) 2, finalized(admin, "transaction.version"));
        }
    }

    private FeatureChecks() {}
}

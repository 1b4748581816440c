package minibroker.check;

import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.CreateDelegationTokenOptions;
import org.apache.kafka.clients.admin.DescribeDelegationTokenOptions;
import org.apache.kafka.clients.admin.ExpireDelegationTokenOptions;
import org.apache.kafka.clients.admin.RenewDelegationTokenOptions;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.errors.DelegationTokenOwnerMismatchException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.UnsupportedByAuthenticationException;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.token.delegation.DelegationToken;

/** Delegation tokens (KIP-48) with the AdminClient over SASL/SCRAM: alice creates a token that bob may renew,
 *  a producer logs in with it (SCRAM, tokenauth=true) and writes, a token-authenticated client may not create
 *  tokens, carol may not renew it, bob renews it, alice expires it and a new login with it fails. Users log in
 *  as NAME with password NAME-secret (the Python side makes them). */
final class TokenChecks {
    static void register(Map<String, Main.Check> checks) {
        checks.put("tokens.lifecycle", TokenChecks::lifecycle);
    }

    static String jaas(String user, String password, boolean token) {
        return "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"" + user
                + "\" password=\"" + password + "\"" + (token ? " tokenauth=\"true\"" : "") + ";";
    }

    static Admin adminAs(Kafka kafka, String jaas) {
        Properties props = kafka.props(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrap,
                CommonClientConfigs.DEFAULT_API_TIMEOUT_MS_CONFIG, 30000, CommonClientConfigs.REQUEST_TIMEOUT_MS_CONFIG,
                15000, SaslConfigs.SASL_JAAS_CONFIG, jaas);
        return Admin.create(props);
    }

    static Throwable cause(Exception e) {
        return e instanceof ExecutionException ? e.getCause() : e;
    }

    static void lifecycle(Kafka kafka) throws Exception {
        String topic = kafka.name("tokens");
        KafkaPrincipal bob = new KafkaPrincipal(KafkaPrincipal.USER_TYPE, "bob");
        try (Admin alice = adminAs(kafka, jaas("alice", "alice-secret", false));
             Admin bobAdmin = adminAs(kafka, jaas("bob", "bob-secret", false));
             Admin carol = adminAs(kafka, jaas("carol", "carol-secret", false))) {
            kafka.createTopic(alice, topic, 1, null);
            DelegationToken token = AdminChecks.get(alice.createDelegationToken(
                    new CreateDelegationTokenOptions().renewers(List.of(bob))).delegationToken());
            Expect.equal("owner", new KafkaPrincipal(KafkaPrincipal.USER_TYPE, "alice"), token.tokenInfo().owner());
            Expect.equal("renewers", List.of(bob), token.tokenInfo().renewers());
            List<DelegationToken> described = AdminChecks.get(alice.describeDelegationToken().delegationTokens());
            Expect.isTrue(described.stream().anyMatch(t -> t.tokenInfo().tokenId().equals(token.tokenInfo().tokenId())
                    && java.util.Arrays.equals(t.hmac(), token.hmac())), "the token described: " + described);
            Expect.equal("tokens of another owner", 0, AdminChecks.get(alice.describeDelegationToken(
                    new DescribeDelegationTokenOptions().owners(List.of(new KafkaPrincipal("User", "nobody"))))
                    .delegationTokens()).size());

            String password = Base64.getEncoder().encodeToString(token.hmac());
            String tokenJaas = jaas(token.tokenInfo().tokenId(), password, true);
            try (KafkaProducer<String, String> producer = kafka.producer(SaslConfigs.SASL_JAAS_CONFIG, tokenJaas)) {
                producer.send(new ProducerRecord<>(topic, "k", "written with a delegation token")).get(30,
                        TimeUnit.SECONDS);
            }
            try (Admin withToken = adminAs(kafka, tokenJaas)) {
                try {
                    AdminChecks.get(withToken.createDelegationToken().delegationToken());
                    throw new Expect.Failed("a token-authenticated client created a token");
                } catch (ExecutionException e) {
                    Expect.isTrue(cause(e) instanceof UnsupportedByAuthenticationException,
                            "token requests refused to a token login: " + cause(e));
                }
            }
            try {
                AdminChecks.get(carol.renewDelegationToken(token.hmac()).expiryTimestamp());
                throw new Expect.Failed("carol renewed alice's token");
            } catch (ExecutionException e) {
                Expect.isTrue(cause(e) instanceof DelegationTokenOwnerMismatchException, "carol refused: " + cause(e));
            }
            long renewed = AdminChecks.get(bobAdmin.renewDelegationToken(token.hmac(),
                    new RenewDelegationTokenOptions().renewTimePeriodMs(3_600_000)).expiryTimestamp());
            Expect.isTrue(renewed <= token.tokenInfo().maxTimestamp() && renewed > System.currentTimeMillis(),
                    "renewed until " + renewed);

            AdminChecks.get(alice.expireDelegationToken(token.hmac(),
                    new ExpireDelegationTokenOptions().expiryTimePeriodMs(-1)).expiryTimestamp());
            Expect.isTrue(AdminChecks.get(alice.describeDelegationToken().delegationTokens()).stream()
                    .noneMatch(t -> t.tokenInfo().tokenId().equals(token.tokenInfo().tokenId())), "the token is gone");
            try (KafkaProducer<String, String> producer = kafka.producer(SaslConfigs.SASL_JAAS_CONFIG, tokenJaas,
                    ProducerConfig.MAX_BLOCK_MS_CONFIG, 10000)) {
                producer.send(new ProducerRecord<>(topic, "k", "after expiry")).get(30, TimeUnit.SECONDS);
                throw new Expect.Failed("a login with an expired token succeeded");
            } catch (ExecutionException e) {
                Expect.isTrue(cause(e) instanceof SaslAuthenticationException, "login refused: " + cause(e));
            } catch (SaslAuthenticationException e) {
                // refused while fetching metadata
            }
        }
    }

    private TokenChecks() {}
}

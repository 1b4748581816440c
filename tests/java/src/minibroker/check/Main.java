package minibroker.check;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Runs Java-client checks against a broker, several in one JVM (its start-up costs more than most checks):
 *
 *   java -cp CLASSPATH minibroker.check.Main --bootstrap 127.0.0.1:9092 [--zookeeper-mode]
 *       [--client-config KEY=VALUE ...] producer. admin.topics
 *
 * Each argument selects the checks whose name is it or starts with it. One JSON line per check goes to stdout:
 * {"check": NAME, "ok": true|false, "seconds": S, "error": MESSAGE, "trace": STACK}; the exit status is 0 only
 * when every selected check passed. A check that does not end within --timeout seconds fails and the next runs.
 */
public final class Main {
    @FunctionalInterface
    public interface Check {
        void run(Kafka kafka) throws Exception;
    }

    static Map<String, Check> registry() {
        Map<String, Check> checks = new LinkedHashMap<>();
        ProducerChecks.register(checks);
        TransactionChecks.register(checks);
        TokenChecks.register(checks);
        ConsumerChecks.register(checks);
        AdminChecks.register(checks);
        FeatureChecks.register(checks);
        QuotaChecks.register(checks);
        FetchSessionChecks.register(checks);
        // Checks of APIs an older client lacks are left out of its build (tests/java/jvm.py, NEWER_CLIENTS).
        for (String name : new String[] {"minibroker.check.ShareChecks", "minibroker.check.MigrationChecks"}) {
            try {
                Class.forName(name).getDeclaredMethod("register", Map.class).invoke(null, checks);
            } catch (ClassNotFoundException e) {
                // not built for this client
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(name, e);
            }
        }
        return checks;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = "127.0.0.1:9092";
        double timeout = 120;
        boolean zookeeperMode = false;
        List<String> clientConfig = new ArrayList<>();  // KEY=VALUE settings every client of the run gets
        List<String> selectors = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--bootstrap": bootstrap = args[++i]; break;
                case "--timeout": timeout = Double.parseDouble(args[++i]); break;
                case "--zookeeper-mode": zookeeperMode = true; break;
                case "--client-config": clientConfig.add(args[++i]); break;
                default: selectors.add(args[i]);
            }
        }
        Map<String, Check> checks = registry();
        if (selectors.isEmpty() || selectors.contains("--list")) {
            checks.keySet().forEach(System.out::println);
            return;
        }
        Map<String, Check> selected = new LinkedHashMap<>();
        for (String selector : selectors) {
            checks.forEach((name, check) -> {
                if (name.equals(selector) || name.startsWith(selector)) {
                    selected.put(name, check);
                }
            });
            if (checks.keySet().stream().noneMatch(n -> n.equals(selector) || n.startsWith(selector))) {
                System.err.println("no check is called " + selector);
                System.exit(2);
            }
        }
        Kafka kafka = new Kafka(bootstrap, zookeeperMode);
        for (String setting : clientConfig) {
            int eq = setting.indexOf('=');
            kafka.clientConfig.put(setting.substring(0, eq), setting.substring(eq + 1));
        }
        ExecutorService executor = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "check");
            t.setDaemon(true);
            return t;
        });
        boolean allPassed = true;
        for (Map.Entry<String, Check> entry : selected.entrySet()) {
            long start = System.nanoTime();
            Throwable failure = null;
            Future<?> future = executor.submit(() -> {
                entry.getValue().run(kafka);
                return null;
            });
            try {
                future.get((long) (timeout * 1000), TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                future.cancel(true);
                failure = new Expect.Failed("did not finish within " + timeout + " s");
            } catch (java.util.concurrent.ExecutionException e) {
                failure = e.getCause();
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            allPassed &= failure == null;
            StringBuilder line = new StringBuilder("{\"check\": ").append(json(entry.getKey()))
                    .append(", \"ok\": ").append(failure == null)
                    .append(String.format(", \"seconds\": %.2f", seconds));
            if (failure != null) {
                StringWriter trace = new StringWriter();
                failure.printStackTrace(new PrintWriter(trace));
                line.append(", \"error\": ").append(json(String.valueOf(failure)))
                    .append(", \"trace\": ").append(json(trace.toString()));
            }
            System.out.println(line.append("}"));
            System.out.flush();
        }
        System.exit(allPassed ? 0 : 1);
    }

    public static String json(String s) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"': out.append("\\\""); break;
                case '\\': out.append("\\\\"); break;
                case '\n': out.append("\\n"); break;
                case '\r': out.append("\\r"); break;
                case '\t': out.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
            }
        }
        return out.append('"').toString();
    }
}

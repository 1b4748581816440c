package minibroker.check;

import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.function.Supplier;

/** Assertions of the checks: a failed one throws {@link Failed} with what was expected and what was seen. */
public final class Expect {
    private Expect() {}

    public static final class Failed extends RuntimeException {
        public Failed(String message) {
            super(message);
        }
    }

    @FunctionalInterface
    public interface Action {
        void run() throws Exception;
    }

    public static void equal(String what, Object expected, Object actual) {
        if (!Objects.equals(expected, actual)) {
            throw new Failed(what + ": expected " + expected + ", got " + actual);
        }
    }

    public static void isTrue(boolean condition, String what) {
        if (!condition) {
            throw new Failed(what);
        }
    }

    public static void isTrue(boolean condition, Supplier<String> what) {
        if (!condition) {
            throw new Failed(what.get());
        }
    }

    /** Runs `action`, which must fail with an exception of `type` (directly, or as the cause of an
     *  ExecutionException or a KafkaException, as the clients wrap them); returns it. */
    public static <T extends Throwable> T raises(Class<T> type, String what, Action action) {
        try {
            action.run();
        } catch (Throwable thrown) {
            for (Throwable t = thrown; t != null; t = t.getCause()) {
                if (type.isInstance(t)) {
                    return type.cast(t);
                }
                if (!(t instanceof ExecutionException || t instanceof org.apache.kafka.common.KafkaException
                        || t instanceof java.util.concurrent.CompletionException)) {
                    break;
                }
            }
            throw new Failed(what + ": expected " + type.getSimpleName() + ", got " + thrown);
        }
        throw new Failed(what + ": expected " + type.getSimpleName() + ", nothing was thrown");
    }

    /** Polls `condition` until it returns something other than null or false, for up to `seconds`. */
    public static <T> T eventually(String what, double seconds, Supplier<T> condition) throws InterruptedException {
        return eventually(() -> what, seconds, condition);
    }

    /** The same, with what was awaited told as it stands when the time is up. */
    public static <T> T eventually(Supplier<String> what, double seconds, Supplier<T> condition)
            throws InterruptedException {
        long deadline = System.nanoTime() + (long) (seconds * 1e9);
        while (true) {
            T value = condition.get();
            if (value != null && !Boolean.FALSE.equals(value)) {
                return value;
            }
            if (System.nanoTime() > deadline) {
                throw new Failed("waited " + seconds + " s for " + what.get());
            }
            Thread.sleep(50);
        }
    }
}

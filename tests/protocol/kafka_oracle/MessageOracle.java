// Apache Kafka's generated message classes as a byte-level oracle for tests/protocol/test_kafka4_messages.py.
// One JSON request per stdin line, one JSON answer per stdout line:
//   {"class": "org.apache.kafka.common.message.XData", "version": 1, "json": {...}}  -> {"hex": "..."}
//       the value read with Kafka's XJsonConverter and serialized with X.write
//   {"class": "...", "version": 1, "hex": "..."}                                    -> {"hex": "...", "json": {...}}
//       the bytes parsed with X's Readable constructor, then serialized again (and shown as JSON)
//   {"serde": "<CoordinatorRecordSerde class>", "keyClass": "...", "valueClass": "...", "version": 0,
//    "key": {...}, "value": {...} or null}                                         -> {"key": "...", "value": "..."}
//       a coordinator record (key and value of an internal topic) as Kafka's serde writes it
//   {"serde": "...", "keyHex": "...", "valueHex": "..." or null}                   -> {"key": "...", "value": "..."}
//       the record read by the serde, then written again
// Any failure answers {"error": "..."} for that line only.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.protocol.Readable;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecordSerde;
import org.apache.kafka.server.common.ApiMessageAndVersion;

public class MessageOracle {
    public static void main(String[] args) throws Exception {
        ObjectMapper mapper = new ObjectMapper();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        String line;
        while ((line = in.readLine()) != null) {
            ObjectNode answer = mapper.createObjectNode();
            try {
                JsonNode request = mapper.readTree(line);
                if (request.has("serde")) {
                    serde(request, answer);
                    out.println(mapper.writeValueAsString(answer));
                    continue;
                }
                Class<?> cls = Class.forName(request.get("class").asText());
                short version = (short) request.get("version").asInt();
                Class<?> converter = Class.forName(cls.getName() + "JsonConverter");
                Message message;
                if (request.has("json")) {
                    Method read = converter.getMethod("read", JsonNode.class, short.class);
                    message = (Message) read.invoke(null, request.get("json"), version);
                } else {
                    byte[] data = HexFormat.of().parseHex(request.get("hex").asText());
                    message = (Message) cls.getConstructor(Readable.class, short.class)
                        .newInstance(new ByteBufferAccessor(ByteBuffer.wrap(data)), version);
                    Method write = converter.getMethod("write", cls, short.class);
                    answer.set("json", (JsonNode) write.invoke(null, message, version));
                }
                ObjectSerializationCache cache = new ObjectSerializationCache();
                ByteBuffer buffer = ByteBuffer.allocate(message.size(cache, version));
                message.write(new ByteBufferAccessor(buffer), cache, version);
                answer.put("hex", HexFormat.of().formatHex(buffer.array()));
            } catch (Throwable e) {
                Throwable cause = e.getCause() != null ? e.getCause() : e;
                answer.put("error", cause.toString());
            }
            out.println(mapper.writeValueAsString(answer));
        }
    }

    static ApiMessage readJson(String className, JsonNode json, short version) throws Exception {
        Class<?> converter = Class.forName(className + "JsonConverter");
        return (ApiMessage) converter.getMethod("read", JsonNode.class, short.class).invoke(null, json, version);
    }

    static void serde(JsonNode request, ObjectNode answer) throws Exception {
        CoordinatorRecordSerde serde = (CoordinatorRecordSerde) Class.forName(request.get("serde").asText())
            .getConstructor().newInstance();
        CoordinatorRecord record;
        if (request.has("keyHex")) {
            JsonNode value = request.get("valueHex");
            record = serde.deserialize(
                ByteBuffer.wrap(HexFormat.of().parseHex(request.get("keyHex").asText())),
                value.isNull() ? null : ByteBuffer.wrap(HexFormat.of().parseHex(value.asText())));
        } else {
            short version = (short) request.get("version").asInt();
            ApiMessage key = readJson(request.get("keyClass").asText(), request.get("key"), (short) 0);
            JsonNode value = request.get("value");
            record = value.isNull() ? CoordinatorRecord.tombstone(key) : CoordinatorRecord.record(key,
                new ApiMessageAndVersion(readJson(request.get("valueClass").asText(), value, version), version));
        }
        answer.put("key", HexFormat.of().formatHex(serde.serializeKey(record)));
        byte[] value = serde.serializeValue(record);
        if (value == null) {
            answer.putNull("value");
        } else {
            answer.put("value", HexFormat.of().formatHex(value));
        }
    }
}

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.MessageUtil;

/**
 * Kafka's own serialization of a message (its generated *Data classes, read from the JSON form of their
 * *DataJsonConverter): one {"message": "LeaderAndIsrRequest", "version": 7, "json": {...}} per input line,
 * one {"hex": "...", "json": {...as Kafka writes it back...}} per output line.
 */
public class MessageOracle {
    static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        StringBuilder out = new StringBuilder();
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            JsonNode c = JSON.readTree(line);
            String name = c.get("message").asText();
            short version = (short) c.get("version").asInt();
            Class<?> converter = Class.forName("org.apache.kafka.common.message." + name + "DataJsonConverter");
            Class<?> data = Class.forName("org.apache.kafka.common.message." + name + "Data");
            Method read = converter.getMethod("read", JsonNode.class, short.class);
            Method write = converter.getMethod("write", data, short.class);
            Message message = (Message) read.invoke(null, c.get("json"), version);
            ByteBuffer buffer = MessageUtil.toByteBuffer(message, version);
            StringBuilder hex = new StringBuilder();
            while (buffer.hasRemaining()) hex.append(String.format("%02x", buffer.get()));
            ObjectNode answer = JSON.createObjectNode();
            answer.put("hex", hex.toString());
            answer.set("json", (JsonNode) write.invoke(null, message, version));
            out.append(JSON.writeValueAsString(answer)).append('\n');
        }
        System.out.print(out);
        System.out.flush();
    }
}

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.*;
import javax.jms.*;
import org.apache.activemq.ActiveMQConnectionFactory;
import org.apache.activemq.broker.BrokerService;
import org.apache.activemq.broker.TransportConnector;

/** An embedded ActiveMQ 5.17.2 with a STOMP connector, for recording STOMP transformations
 *  (tests/plugins/stomp/record_transformations.py). Prints {"port": N}, then answers one JSON line per command:
 *  {"op":"send_map","queue","map":{name: typed value}} {"op":"send_object","queue","object": typed value or absent}
 *  {"op":"send_stream","queue","stream":[typed values]} {"op":"send_text"|"send_bytes","queue","text"} {"op":"receive","queue","timeout_ms"} {"op":"quit"}.
 *  A received ObjectMessage or StreamMessage is reported with its body's bytes (hex) as ActiveMQ holds them.
 *  Typed values as the scripted oracle's: {"short": 5}, {"string": "x"}, ... */
public class StompOracle {
    public static void main(String[] args) throws Exception {
        BrokerService broker = new BrokerService();
        broker.setBrokerName("localhost");
        broker.setPersistent(false);
        broker.setUseJmx(false);
        TransportConnector stomp = broker.addConnector("stomp://127.0.0.1:0");
        broker.start();
        broker.waitUntilStarted();
        System.out.println("{\"port\": " + stomp.getConnectUri().getPort() + "}");
        System.out.flush();
        Connection conn = new ActiveMQConnectionFactory("vm://localhost?create=false").createConnection();
        conn.start();
        Session session = conn.createSession(false, Session.AUTO_ACKNOWLEDGE);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            @SuppressWarnings("unchecked")
            Map<String, Object> op = (Map<String, Object>) ScriptOracle.Parser.parse(line);
            Map<String, Object> answer = new TreeMap<>();
            String name = (String) op.get("op");
            try {
                if (name.equals("quit")) break;
                if (name.equals("send_map")) {
                    MapMessage mm = session.createMapMessage();
                    @SuppressWarnings("unchecked")
                    Map<String, Object> values = (Map<String, Object>) op.get("map");
                    for (Map.Entry<String, Object> e : values.entrySet()) mm.setObject(e.getKey(), ScriptOracle.typed(e.getValue()));
                    MessageProducer p = session.createProducer(session.createQueue((String) op.get("queue")));
                    p.send(mm);
                    p.close();
                } else if (name.equals("send_object")) {
                    ObjectMessage om = session.createObjectMessage();
                    if (op.containsKey("object")) om.setObject((java.io.Serializable) ScriptOracle.typed(op.get("object")));
                    MessageProducer p = session.createProducer(session.createQueue((String) op.get("queue")));
                    p.send(om);
                    p.close();
                } else if (name.equals("send_text") || name.equals("send_bytes")) {
                    Message tm;
                    if (name.equals("send_text")) tm = session.createTextMessage((String) op.get("text"));
                    else { BytesMessage bm = session.createBytesMessage(); bm.writeBytes(((String) op.get("text")).getBytes(StandardCharsets.UTF_8)); tm = bm; }
                    MessageProducer p = session.createProducer(session.createQueue((String) op.get("queue")));
                    p.send(tm);
                    p.close();
                } else if (name.equals("send_stream")) {
                    StreamMessage sm = session.createStreamMessage();
                    @SuppressWarnings("unchecked")
                    List<Object> values = (List<Object>) op.get("stream");
                    for (Object v : values) sm.writeObject(ScriptOracle.typed(v));
                    MessageProducer p = session.createProducer(session.createQueue((String) op.get("queue")));
                    p.send(sm);
                    p.close();
                } else if (name.equals("receive")) {
                    MessageConsumer c = session.createConsumer(session.createQueue((String) op.get("queue")));
                    Message m = c.receive(((Number) op.get("timeout_ms")).longValue());
                    c.close();
                    if (m == null) answer.put("message", null);
                    else {
                        Map<String, Object> e = new TreeMap<>();
                        e.put("class", m.getClass().getSimpleName());
                        if (m instanceof MapMessage) {
                            Map<String, Object> raw = new TreeMap<>();
                            for (Enumeration<?> en = ((MapMessage) m).getMapNames(); en.hasMoreElements();) {
                                String k = (String) en.nextElement();
                                Object v = ((MapMessage) m).getObject(k);
                                raw.put(k, v == null ? null : v.getClass().getSimpleName() + ":" + v);
                            }
                            e.put("map", raw);
                        } else if (m instanceof TextMessage) e.put("text", ((TextMessage) m).getText());
                        else if (m instanceof ObjectMessage) {
                            Object o = ((ObjectMessage) m).getObject();
                            e.put("object", o == null ? null : o.getClass().getName() + ":" + (o instanceof byte[] ? new String((byte[]) o, StandardCharsets.UTF_8) : o));
                        } else if (m instanceof StreamMessage) {
                            List<Object> vs = new ArrayList<>();
                            try { while (true) { Object v = ((StreamMessage) m).readObject(); vs.add(v == null ? null : v.getClass().getSimpleName() + ":" + (v instanceof byte[] ? new String((byte[]) v, StandardCharsets.UTF_8) : v)); } }
                            catch (MessageEOFException eof) { }
                            e.put("stream", vs);
                        } else if (m instanceof BytesMessage) {
                            BytesMessage bm = (BytesMessage) m;
                            byte[] b = new byte[(int) bm.getBodyLength()];
                            bm.readBytes(b);
                            e.put("bytes", new String(b, StandardCharsets.UTF_8));
                        }
                        if (m instanceof org.apache.activemq.command.ActiveMQObjectMessage || m instanceof org.apache.activemq.command.ActiveMQStreamMessage) {
                            org.apache.activemq.util.ByteSequence content = ((org.apache.activemq.command.ActiveMQMessage) m).getContent();
                            StringBuilder hex = new StringBuilder();
                            if (content != null) for (int i = 0; i < content.length; i++) hex.append(String.format("%02x", content.data[content.offset + i] & 0xff));
                            e.put("content", hex.toString());
                        }
                        Map<String, Object> props = new TreeMap<>();
                        for (Enumeration<?> en = m.getPropertyNames(); en.hasMoreElements();) {
                            String k = (String) en.nextElement();
                            props.put(k, String.valueOf(m.getObjectProperty(k)));
                        }
                        e.put("properties", props);
                        answer.put("message", e);
                    }
                }
                answer.put("ok", true);
            } catch (Exception e) {
                answer.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
            }
            System.out.println(Json.write(answer));
            System.out.flush();
        }
        conn.close();
        broker.stop();
        System.exit(0);
    }
}

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
 *  {"op":"send_map","queue","map":{name: typed value}} {"op":"receive","queue","timeout_ms"} {"op":"quit"}.
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

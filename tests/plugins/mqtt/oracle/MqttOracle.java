import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.*;
import javax.jms.*;
import org.apache.activemq.ActiveMQConnectionFactory;
import org.apache.activemq.broker.BrokerService;
import org.apache.activemq.broker.TransportConnector;
import org.apache.activemq.broker.region.DurableTopicSubscription;
import org.apache.activemq.broker.region.Topic;
import org.apache.activemq.command.ActiveMQDestination;
import org.apache.activemq.command.ActiveMQMessage;
import org.apache.activemq.util.SubscriptionKey;

/** An embedded ActiveMQ 5.17.2 with an MQTT connector, for recording MQTT scenarios (tests/plugins/mqtt/record.py).
 *  Prints {"port": N}, then answers one JSON line per command line on stdin (the JMS side of a scenario):
 *  {"op":"jms_consumer","label","topic"} {"op":"jms_receive","label","timeout_ms"} {"op":"jms_send","topic","body","persistent"}
 *  {"op":"durable_subs"} {"op":"quit"}. */
public class MqttOracle {
    public static void main(String[] args) throws Exception {
        BrokerService broker = new BrokerService();
        broker.setBrokerName("localhost");
        broker.setPersistent(false);
        broker.setUseJmx(false);
        broker.setSchedulerSupport(false);
        TransportConnector mqtt = broker.addConnector("mqtt://127.0.0.1:0");
        broker.start();
        broker.waitUntilStarted();
        System.out.println("{\"port\": " + mqtt.getConnectUri().getPort() + "}");
        System.out.flush();
        Connection conn = new ActiveMQConnectionFactory("vm://localhost?create=false").createConnection();
        conn.start();
        Session session = conn.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Map<String, MessageConsumer> consumers = new HashMap<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            @SuppressWarnings("unchecked")
            Map<String, Object> op = (Map<String, Object>) ScriptOracle.Parser.parse(line);
            Map<String, Object> answer = new TreeMap<>();
            String name = (String) op.get("op");
            try {
                if (name.equals("quit")) break;
                if (name.equals("jms_consumer")) {
                    consumers.put((String) op.get("label"), session.createConsumer(session.createTopic((String) op.get("topic"))));
                } else if (name.equals("jms_receive")) {
                    Message m = consumers.get((String) op.get("label")).receive(((Number) op.get("timeout_ms")).longValue());
                    answer.put("message", m == null ? null : describe(m));
                } else if (name.equals("jms_send")) {
                    MessageProducer p = session.createProducer(session.createTopic((String) op.get("topic")));
                    boolean persistent = !Boolean.FALSE.equals(op.get("persistent"));
                    p.send(session.createTextMessage((String) op.get("body")), persistent ? DeliveryMode.PERSISTENT : DeliveryMode.NON_PERSISTENT, 4, 0);
                    p.close();
                } else if (name.equals("durable_subs")) {
                    Thread.sleep(150);
                    List<Map<String, Object>> subs = new ArrayList<>();
                    for (Map.Entry<ActiveMQDestination, org.apache.activemq.broker.region.Destination> en : broker.getBroker().getDestinationMap().entrySet()) {
                        if (!(en.getValue() instanceof Topic)) continue;
                        for (Map.Entry<SubscriptionKey, DurableTopicSubscription> d : ((Topic) en.getValue()).getDurableTopicSubs().entrySet()) {
                            Map<String, Object> s = new TreeMap<>();
                            s.put("clientId", d.getKey().getClientId());
                            s.put("name", d.getKey().getSubscriptionName());
                            s.put("active", d.getValue().isActive());
                            if (!subs.contains(s)) subs.add(s);
                        }
                    }
                    subs.sort(Comparator.comparing(s -> s.get("clientId") + "/" + s.get("name")));
                    answer.put("subs", subs);
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

    static Map<String, Object> describe(Message m) throws JMSException {
        Map<String, Object> e = new TreeMap<>();
        e.put("class", m.getClass().getSimpleName());
        e.put("destination", ((ActiveMQDestination) m.getJMSDestination()).getQualifiedName());
        e.put("persistent", m.getJMSDeliveryMode() == DeliveryMode.PERSISTENT);
        if (m instanceof TextMessage) e.put("body", ((TextMessage) m).getText());
        else if (m instanceof BytesMessage) {
            BytesMessage b = (BytesMessage) m;
            byte[] data = new byte[(int) b.getBodyLength()];
            b.readBytes(data);
            e.put("body", new String(data, StandardCharsets.UTF_8));
        }
        Map<String, Object> props = new TreeMap<>();
        for (Enumeration<?> en = m.getPropertyNames(); en.hasMoreElements();) {
            String k = (String) en.nextElement();
            Object v = m.getObjectProperty(k);
            props.put(k, v == null ? null : v.getClass().getSimpleName() + ":" + v);
        }
        e.put("properties", props);
        return e;
    }
}

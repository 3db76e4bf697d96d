// Drives minibroker's OpenWire listener with Debian's activemq-client 5.17.2, the real JMS client.
// Usage: OpenWireClient <broker url> <scenario>; prints one line per observation, "DONE" at the end; exit 1 on error.
import java.util.Enumeration;
import javax.jms.*;
import org.apache.activemq.ActiveMQConnectionFactory;

public class OpenWireClient {
    static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static String describe(Message m) throws JMSException {
        if (m == null) return "null";
        StringBuilder b = new StringBuilder();
        if (m instanceof TextMessage) {
            b.append("text:").append(((TextMessage) m).getText());
        } else if (m instanceof MapMessage) {
            MapMessage map = (MapMessage) m;
            b.append("map:");
            java.util.TreeSet<String> names = new java.util.TreeSet<>();
            for (Enumeration<?> e = map.getMapNames(); e.hasMoreElements(); ) names.add((String) e.nextElement());
            for (String n : names) b.append(n).append('=').append(map.getObject(n)).append(';');
        } else if (m instanceof BytesMessage) {
            BytesMessage bytes = (BytesMessage) m;
            byte[] data = new byte[(int) bytes.getBodyLength()];
            bytes.readBytes(data);
            b.append("bytes:").append(data.length);
        } else if (m instanceof StreamMessage) {
            StreamMessage s = (StreamMessage) m;
            b.append("stream:");
            try {
                while (true) b.append(s.readObject()).append(';');
            } catch (MessageEOFException end) {
                // the end of the stream
            }
        } else if (m instanceof ObjectMessage) {
            b.append("object:").append(((ObjectMessage) m).getObject());
        } else {
            b.append("message");
        }
        java.util.TreeSet<String> props = new java.util.TreeSet<>();
        for (Enumeration<?> e = m.getPropertyNames(); e.hasMoreElements(); ) props.add((String) e.nextElement());
        for (String p : props) {
            Object v = m.getObjectProperty(p);
            b.append(" ").append(p).append('=').append(v).append('(').append(v == null ? "null" : v.getClass().getSimpleName()).append(')');
        }
        if (m.getJMSRedelivered()) b.append(" redelivered");
        return b.toString();
    }

    public static void main(String[] args) throws Exception {
        String url = args[0];
        String scenario = args[1];
        ActiveMQConnectionFactory factory = new ActiveMQConnectionFactory(url);
        Connection connection = factory.createConnection();
        try {
            connection.start();
            say("CONNECTED " + connection.getClientID());
            switch (scenario) {
                case "connect":
                    break;
                case "messages":
                    messages(connection);
                    break;
                default:
                    throw new IllegalArgumentException("unknown scenario " + scenario);
            }
        } finally {
            connection.close();
        }
        say("DONE");
    }

    static void messages(Connection connection) throws JMSException {
        Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Queue queue = session.createQueue("ow.messages");
        MessageProducer producer = session.createProducer(queue);
        TextMessage text = session.createTextMessage("hello, minibroker");
        text.setStringProperty("kind", "greeting");
        text.setIntProperty("n", 7);
        text.setLongProperty("big", 1L << 40);
        text.setBooleanProperty("flag", true);
        text.setDoubleProperty("ratio", 0.25);
        text.setShortProperty("small", (short) 3);
        producer.send(text);
        MapMessage map = session.createMapMessage();
        map.setString("name", "widget");
        map.setInt("qty", 3);
        map.setDouble("price", 9.5);
        map.setBoolean("ok", true);
        producer.send(map);
        producer.send(session.createTextMessage("non-persistent"), DeliveryMode.NON_PERSISTENT, 4, 0);
        say("SENT 3");

        Session tx = connection.createSession(true, Session.SESSION_TRANSACTED);
        MessageProducer txProducer = tx.createProducer(tx.createQueue("ow.tx"));
        txProducer.send(tx.createTextMessage("in a transaction"));
        tx.commit();
        say("COMMITTED");

        MessageConsumer consumer = session.createConsumer(queue);
        for (int i = 0; i < 3; i++) say("RECEIVED " + describe(consumer.receive(5000)));
        consumer.close();

        Session client = connection.createSession(false, Session.CLIENT_ACKNOWLEDGE);
        MessageConsumer txConsumer = client.createConsumer(client.createQueue("ow.tx"));
        Message received = txConsumer.receive(5000);
        say("RECEIVED " + describe(received));
        received.acknowledge();
        say("ACKED");
        txConsumer.close();
        client.close();
        tx.close();
        session.close();
    }
}

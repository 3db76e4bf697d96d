// ActiveMQ's JMS client (Debian's activemq-client 5.17.2) on a failover: URL, across broker restarts and
// master/slave take-overs (issue 44, item 5). Usage: FailoverClient <failover url> <scenario>; prints one line per
// observation and "DONE" at the end; a line read from stdin is the test's signal that it broke the broker.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import javax.jms.*;
import org.apache.activemq.ActiveMQConnectionFactory;

public class FailoverClient {
    static final BufferedReader IN = new BufferedReader(new InputStreamReader(System.in));

    static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static void await(String what) throws Exception {
        say(what);
        if (IN.readLine() == null) throw new java.io.EOFException("stdin closed at " + what);
    }

    static String text(Message m) throws JMSException {
        if (m == null) return "null";
        String s = ((TextMessage) m).getText();
        return m.getJMSRedelivered() ? s + " redelivered" : s;
    }

    public static void main(String[] args) throws Exception {
        ActiveMQConnectionFactory factory = new ActiveMQConnectionFactory(args[0]);
        Connection connection = factory.createConnection();
        try {
            connection.start();
            switch (args[1]) {
                case "inflight":
                    inflight(connection);
                    break;
                case "duplicates":
                    duplicates(connection);
                    break;
                case "takeover":
                    takeover(connection);
                    break;
                default:
                    throw new IllegalArgumentException(args[1]);
            }
            say("DONE");
        } finally {
            connection.close();
        }
    }

    // A persistent send whose answer never came (the broker died first) is sent again by the failover transport
    // once it has reconnected; the broker drops it as a duplicate. Then everything left on the queue is received, up
    // to the last message sent: a duplicate would come before it.
    static void inflight(Connection connection) throws Exception {
        Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Queue queue = session.createQueue("ow.inflight");
        MessageProducer producer = session.createProducer(queue);
        producer.send(session.createTextMessage("p1"));
        await("SENT p1");
        producer.send(session.createTextMessage("p2")); // answered only by the restarted broker
        say("SENT p2");
        producer.send(session.createTextMessage("p3"));
        say("SENT p3");
        MessageConsumer consumer = session.createConsumer(queue);
        while (true) {
            Message m = consumer.receive(20000);
            say("RECEIVED " + text(m));
            if (m == null || "p3".equals(((TextMessage) m).getText())) break;
        }
        session.close();
    }

    // The well-known symptom: with optimizeAcknowledge the client delivers messages before it acks them; the
    // transport fails, the broker dispatches them again after the reconnect, and the connection's audit finds
    // them delivered already: it poison-acks them ("Suppressing duplicate delivery on connection") and the broker
    // moves them to the DLQ.
    static void duplicates(Connection connection) throws Exception {
        Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Queue queue = session.createQueue("ow.duplicates");
        MessageProducer producer = session.createProducer(queue);
        for (int i = 1; i <= 5; i++) producer.send(session.createTextMessage("d" + i));
        MessageConsumer consumer = session.createConsumer(queue);
        for (int i = 0; i < 5; i++) say("RECEIVED " + text(consumer.receive(5000)));
        await("DELIVERED"); // the broker drops the transport; the test waits for the five in the DLQ
        say("AGAIN " + text(consumer.receiveNoWait()));
        producer.send(session.createTextMessage("d6"));
        say("RECEIVED " + text(consumer.receive(20000)));
        consumer.close();
        MessageConsumer dlq = session.createConsumer(session.createQueue("ActiveMQ.DLQ"));
        for (int i = 0; i < 5; i++) {
            Message m = dlq.receive(5000);
            say("DLQ " + text(m) + " cause=" + m.getStringProperty("dlqDeliveryFailureCause"));
        }
        session.close();
    }

    // Shared-storage master/slave: the master dies, the slave takes the data directory's lock and starts; the
    // client's failover URL finds it and carries on.
    static void takeover(Connection connection) throws Exception {
        Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Queue queue = session.createQueue("ow.takeover");
        MessageProducer producer = session.createProducer(queue);
        for (int i = 1; i <= 3; i++) producer.send(session.createTextMessage("t" + i));
        MessageConsumer consumer = session.createConsumer(queue);
        say("RECEIVED " + text(consumer.receive(5000)));
        await("HALF"); // the test kills the master
        producer.send(session.createTextMessage("t4")); // to the slave, once the client found it
        say("SENT t4");
        for (int i = 0; i < 3; i++) say("RECEIVED " + text(consumer.receive(20000)));
        say("AFTER " + text(consumer.receiveNoWait()));
        session.close();
    }
}

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
            for (String n : names) {
                Object v = map.getObject(n);
                b.append(n).append('=').append(v instanceof byte[] ? "byte[" + ((byte[]) v).length + "]" : v).append(';');
            }
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
                case "bodies":
                    bodies(connection);
                    break;
                case "browse":
                    browse(connection);
                    break;
                case "pull":
                    pull(connection);
                    break;
                case "temp":
                    temp(connection);
                    break;
                case "tempreply":
                    tempReply(factory, connection);
                    break;
                case "failover":
                    failover(connection);
                    break;
                case "options":
                    options(connection);
                    break;
                case "reply":
                    reply(connection, args[2]);
                    break;
                case "bulk":
                    bulk(connection, args.length > 2 ? Integer.parseInt(args[2]) : 2000);
                    break;
                case "acks":
                    acks(connection);
                    break;
                case "poison":
                    poison(connection);
                    break;
                case "full":
                    full(connection, Integer.parseInt(args[2]));
                    break;
                case "rollback":
                    rollback(connection);
                    break;
                case "selector":
                    selector(connection);
                    break;
                case "nolocal":
                    noLocal(connection);
                    break;
                case "window":
                    window(connection);
                    break;
                case "receive":
                    for (String text : receiveAll(connection, args[2])) say("RECEIVED " + text);
                    break;
                case "durable":
                    connection.close();
                    durable(factory);
                    break;
                case "errors":
                    errors(factory, connection);
                    break;
                case "xa":
                    xa(url);
                    break;
                default:
                    throw new IllegalArgumentException("unknown scenario " + scenario);
            }
        } finally {
            connection.close();
        }
        say("DONE");
    }

    static java.util.List<String> receiveAll(Connection connection, String queue) throws JMSException {
        Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
        MessageConsumer consumer = session.createConsumer(session.createQueue(queue));
        java.util.List<String> got = new java.util.ArrayList<>();
        for (Message m = consumer.receive(5000); m != null; m = consumer.receive(500)) got.add(describe(m));
        session.close();
        return got;
    }

    static void bodies(Connection connection) throws JMSException {
        Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
        MessageProducer producer = session.createProducer(session.createQueue("ow.bodies"));
        BytesMessage bytes = session.createBytesMessage();
        bytes.writeBytes(new byte[] {1, 2, 3, 4});
        producer.send(bytes);
        StreamMessage stream = session.createStreamMessage();
        stream.writeString("s");
        stream.writeInt(5);
        stream.writeBoolean(true);
        stream.writeChar('c');
        producer.send(stream);
        producer.send(session.createObjectMessage("serialized"));
        StringBuilder big = new StringBuilder();
        for (int i = 0; i < 2000; i++) big.append("compressible ");
        producer.send(session.createTextMessage(big.toString()));
        MapMessage map = session.createMapMessage();
        map.setBytes("raw", new byte[] {9, 9});
        map.setChar("ch", 'x');
        map.setFloat("f", 1.5f);
        producer.send(map);
        Message plain = session.createMessage();
        try {
            producer.send(plain);
            say("PLAIN SENT");
        } catch (JMSException e) {
            say("PLAIN REFUSED " + e.getMessage());
        }
        for (String text : receiveAll(connection, "ow.bodies")) {
            say("RECEIVED " + (text.length() > 60 ? text.substring(0, 60) + "...(" + text.length() + ")" : text));
        }
        session.close();
    }

    static void browse(Connection connection) throws JMSException {
        Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Queue queue = session.createQueue("ow.browse");
        MessageProducer producer = session.createProducer(queue);
        for (int i = 1; i <= 3; i++) producer.send(session.createTextMessage("m" + i));
        QueueBrowser browser = session.createBrowser(queue);
        StringBuilder seen = new StringBuilder("BROWSED");
        for (Enumeration<?> e = browser.getEnumeration(); e.hasMoreElements(); ) seen.append(' ').append(((TextMessage) e.nextElement()).getText());
        browser.close();
        say(seen.toString());
        for (String text : receiveAll(connection, "ow.browse")) say("RECEIVED " + text);
        session.close();
    }

    static void pull(Connection connection) throws JMSException {
        Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Queue queue = session.createQueue("ow.pull");
        MessageConsumer consumer = session.createConsumer(queue);
        say("NOWAIT " + describe(consumer.receiveNoWait()));
        say("TIMED " + describe(consumer.receive(300)));
        session.createProducer(queue).send(session.createTextMessage("pulled"));
        say("RECEIVED " + describe(consumer.receive(5000)));
        session.close();
    }

    static void temp(Connection connection) throws JMSException {
        Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
        TemporaryQueue replies = session.createTemporaryQueue();
        say("TEMP " + (replies.getQueueName().startsWith("ID:") ? "named by the connection" : replies.getQueueName()));
        MessageConsumer replyConsumer = session.createConsumer(replies);
        Queue requests = session.createQueue("ow.requests");
        MessageConsumer server = session.createConsumer(requests);
        TextMessage request = session.createTextMessage("ping");
        request.setJMSReplyTo(replies);
        request.setJMSCorrelationID("c-1");
        session.createProducer(requests).send(request);
        Message got = server.receive(5000);
        Destination replyTo = got.getJMSReplyTo();
        say("REPLY-TO " + (replyTo instanceof TemporaryQueue ? "temporary queue" : String.valueOf(replyTo)));
        TextMessage reply = session.createTextMessage("pong");
        reply.setJMSCorrelationID(got.getJMSCorrelationID());
        session.createProducer(replyTo).send(reply);
        Message answer = replyConsumer.receive(5000);
        say("ANSWER " + describe(answer) + " correlation=" + answer.getJMSCorrelationID());
        replyConsumer.close();
        replies.delete();
        say("DELETED");
        session.close();
    }

    static void tempReply(ActiveMQConnectionFactory factory, Connection requester) throws JMSException {
        Connection responder = factory.createConnection();
        responder.start();
        try {
            Session serverSession = responder.createSession(false, Session.AUTO_ACKNOWLEDGE);
            MessageConsumer server = serverSession.createConsumer(serverSession.createQueue("ow.requests"));
            Session session = requester.createSession(false, Session.AUTO_ACKNOWLEDGE);
            TemporaryQueue replies = session.createTemporaryQueue();
            MessageConsumer replyConsumer = session.createConsumer(replies);
            TextMessage request = session.createTextMessage("ping");
            request.setJMSReplyTo(replies);
            session.createProducer(session.createQueue("ow.requests")).send(request);
            Message got = server.receive(5000);
            serverSession.createProducer(got.getJMSReplyTo()).send(serverSession.createTextMessage("pong from another connection"));
            say("ANSWER " + describe(replyConsumer.receive(5000)));
            replyConsumer.close();
            replies.delete();
            session.close();
        } finally {
            responder.close();
        }
    }

    static void failover(Connection connection) throws Exception {
        ((org.apache.activemq.ActiveMQConnection) connection).getPrefetchPolicy().setQueuePrefetch(1);
        Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Queue queue = session.createQueue("ow.failover");
        MessageProducer producer = session.createProducer(queue);
        for (int i = 1; i <= 6; i++) producer.send(session.createTextMessage("m" + i));
        MessageConsumer consumer = session.createConsumer(queue);
        for (int i = 0; i < 3; i++) say("RECEIVED " + describe(consumer.receive(5000)));
        say("HALF");
        new java.io.BufferedReader(new java.io.InputStreamReader(System.in)).readLine(); // the broker drops us now
        for (int i = 0; i < 3; i++) say("RECEIVED " + describe(consumer.receive(20000)));
        producer.send(session.createTextMessage("after the reconnect"));
        say("RECEIVED " + describe(consumer.receive(20000)));
        session.close();
    }

    static void options(Connection connection) throws JMSException {
        Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
        MessageConsumer exclusive = session.createConsumer(session.createQueue("ow.options?consumer.exclusive=true"));
        MessageConsumer other = session.createConsumer(session.createQueue("ow.options?consumer.priority=9"));
        MessageProducer producer = session.createProducer(session.createQueue("ow.options"));
        for (int i = 1; i <= 3; i++) producer.send(session.createTextMessage("x" + i));
        for (int i = 0; i < 3; i++) say("EXCLUSIVE " + describe(exclusive.receive(5000)));
        say("OTHER " + describe(other.receiveNoWait()));
        MessageConsumer wild = session.createConsumer(session.createTopic("ow.wild.>"));
        MessageProducer anonymous = session.createProducer(null);
        anonymous.send(session.createTopic("ow.wild.a"), session.createTextMessage("to a"));
        anonymous.send(session.createTopic("ow.wild.b.c"), session.createTextMessage("to b.c"));
        for (int i = 0; i < 2; i++) {
            Message m = wild.receive(5000);
            say("WILDCARD " + describe(m) + " from " + m.getJMSDestination());
        }
        session.close();
    }

    static void reply(Connection connection, String queue) throws JMSException {
        Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Message request = session.createConsumer(session.createQueue(queue)).receive(20000);
        say("REQUEST " + describe(request) + " reply-to " + (request.getJMSReplyTo() instanceof TemporaryQueue ? "a temporary queue" : request.getJMSReplyTo()));
        TextMessage answer = session.createTextMessage("answer to " + ((TextMessage) request).getText());
        answer.setJMSCorrelationID(request.getJMSCorrelationID());
        session.createProducer(request.getJMSReplyTo()).send(answer);
        say("REPLIED");
        session.close();
    }

    static void bulk(Connection connection, int count) throws JMSException {
        Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Queue queue = session.createQueue("ow.bulk");
        MessageConsumer consumer = session.createConsumer(queue);
        MessageProducer producer = session.createProducer(queue);
        producer.setDeliveryMode(DeliveryMode.NON_PERSISTENT);
        for (int i = 0; i < count; i++) producer.send(session.createTextMessage("bulk " + i));
        int got = 0;
        for (Message m = consumer.receive(20000); m != null; m = got == count ? null : consumer.receive(20000)) got++;
        say("BULK " + got);
        session.close();
    }

    static void acks(Connection connection) throws JMSException {
        Session session = connection.createSession(false, Session.CLIENT_ACKNOWLEDGE);
        Queue queue = session.createQueue("ow.acks");
        MessageProducer producer = session.createProducer(queue);
        for (int i = 1; i <= 3; i++) producer.send(session.createTextMessage("c" + i));
        MessageConsumer consumer = session.createConsumer(queue);
        Message last = null;
        for (int i = 0; i < 3; i++) last = consumer.receive(5000);
        last.acknowledge(); // one range ack for all three
        say("CLIENT ACKED " + ((TextMessage) last).getText());
        consumer.close();
        session.close();
        Session individual = connection.createSession(false, org.apache.activemq.ActiveMQSession.INDIVIDUAL_ACKNOWLEDGE);
        MessageProducer p2 = individual.createProducer(queue);
        p2.send(individual.createTextMessage("i1"));
        p2.send(individual.createTextMessage("i2"));
        MessageConsumer c2 = individual.createConsumer(queue);
        c2.receive(5000);
        Message second = c2.receive(5000);
        second.acknowledge(); // this one only
        say("INDIVIDUAL ACKED " + ((TextMessage) second).getText());
        c2.close();
        for (String text : receiveAll(connection, "ow.acks")) say("LEFT " + text);
        individual.close();
    }

    static void poison(Connection connection) throws JMSException {
        Session session = connection.createSession(true, Session.SESSION_TRANSACTED);
        Queue queue = session.createQueue("ow.poison");
        session.createProducer(queue).send(session.createTextMessage("bad"));
        session.commit();
        MessageConsumer consumer = session.createConsumer(queue);
        for (int i = 0; i < 3; i++) {
            Message m = consumer.receive(1000);
            say("ATTEMPT " + describe(m));
            session.rollback();
        }
        consumer.close();
        session.close();
    }

    static void full(Connection connection, int count) throws JMSException {
        Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
        MessageProducer producer = session.createProducer(session.createQueue("limited.q"));
        char[] kilo = new char[1024];
        java.util.Arrays.fill(kilo, 'k');
        int sent = 0;
        try {
            for (; sent < count; sent++) producer.send(session.createTextMessage(new String(kilo)));
            say("SENT " + sent);
        } catch (JMSException e) {
            say("FULL after " + (sent > 0 ? "some" : "none") + " " + e.getClass().getName());
        }
        session.close();
    }

    static void rollback(Connection connection) throws JMSException {
        Session session = connection.createSession(true, Session.SESSION_TRANSACTED);
        Queue queue = session.createQueue("ow.rollback");
        session.createProducer(queue).send(session.createTextMessage("again"));
        session.commit();
        MessageConsumer consumer = session.createConsumer(queue);
        say("FIRST " + describe(consumer.receive(5000)));
        session.rollback();
        Message second = consumer.receive(5000);
        say("SECOND " + describe(second) + " count=" + second.getIntProperty("JMSXDeliveryCount"));
        session.commit();
        say("AFTER " + describe(consumer.receive(300)));
        session.close();
    }

    static void selector(Connection connection) throws JMSException {
        Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Queue queue = session.createQueue("ow.selector");
        MessageProducer producer = session.createProducer(queue);
        for (String color : new String[] {"blue", "red"}) {
            TextMessage m = session.createTextMessage(color);
            m.setStringProperty("color", color);
            producer.send(m);
        }
        MessageConsumer red = session.createConsumer(queue, "color = 'red'");
        say("SELECTED " + ((TextMessage) red.receive(5000)).getText());
        say("NO MORE " + describe(red.receive(300)));
        try {
            session.createConsumer(queue, "color = = 'x'");
            say("BAD SELECTOR ACCEPTED");
        } catch (JMSException e) {
            say("BAD SELECTOR " + e.getClass().getName());
        }
        red.close();
        say("LEFT " + describe(session.createConsumer(queue).receive(5000)));
        session.close();
    }

    static void noLocal(Connection connection) throws JMSException {
        Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Topic topic = session.createTopic("ow.nolocal");
        MessageConsumer local = session.createConsumer(topic, null, true);
        MessageConsumer everyone = session.createConsumer(topic);
        session.createProducer(topic).send(session.createTextMessage("news"));
        say("EVERYONE " + describe(everyone.receive(5000)));
        say("NOLOCAL " + describe(local.receive(300)));
        session.close();
    }

    static void window(Connection connection) throws JMSException {
        Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Queue queue = session.createQueue("ow.window");
        MessageProducer producer = session.createProducer(queue);
        producer.setDeliveryMode(DeliveryMode.NON_PERSISTENT);
        for (int i = 0; i < 200; i++) producer.send(session.createTextMessage("w" + i));
        say("SENT 200");
        say("RECEIVED " + receiveAll(connection, "ow.window").size());
        session.close();
    }

    static void durable(ActiveMQConnectionFactory factory) throws JMSException {
        Connection connection = factory.createConnection();
        connection.setClientID("durable-client");
        connection.start();
        Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Topic topic = session.createTopic("ow.durable");
        session.createDurableSubscriber(topic, "sub1").close();
        MessageProducer producer = session.createProducer(topic);
        producer.send(session.createTextMessage("while away 1"));
        producer.send(session.createTextMessage("while away 2"));
        TopicSubscriber subscriber = session.createDurableSubscriber(topic, "sub1");
        say("DURABLE " + describe(subscriber.receive(5000)));
        say("DURABLE " + describe(subscriber.receive(5000)));
        try {
            session.unsubscribe("sub1");
            say("UNSUBSCRIBED WHILE ACTIVE");
        } catch (JMSException e) {
            say("IN USE " + e.getClass().getSimpleName());
        }
        subscriber.close();
        session.unsubscribe("sub1");
        say("UNSUBSCRIBED");
        connection.close();
    }

    static void errors(ActiveMQConnectionFactory factory, Connection connection) throws JMSException {
        Connection twin = factory.createConnection();
        try {
            twin.setClientID(connection.getClientID());
            twin.start();
            say("TWIN ACCEPTED");
        } catch (JMSException e) {
            say("TWIN " + e.getClass().getName());
        } finally {
            try {
                twin.close();
            } catch (JMSException e) {
                // already failed
            }
        }
    }

    static void xa(String url) throws Exception {
        org.apache.activemq.ActiveMQXAConnectionFactory factory = new org.apache.activemq.ActiveMQXAConnectionFactory(url);
        XAConnection connection = factory.createXAConnection();
        try {
            connection.start();
            XASession session = connection.createXASession();
            javax.transaction.xa.Xid xid = new javax.transaction.xa.Xid() {
                public int getFormatId() { return 1; }
                public byte[] getGlobalTransactionId() { return new byte[] {1}; }
                public byte[] getBranchQualifier() { return new byte[] {2}; }
            };
            try {
                session.getXAResource().start(xid, javax.transaction.xa.XAResource.TMNOFLAGS);
                session.getXAResource().end(xid, javax.transaction.xa.XAResource.TMSUCCESS);
                session.getXAResource().prepare(xid);
                say("XA ACCEPTED");
            } catch (javax.transaction.xa.XAException e) {
                Throwable cause = e.getCause() == null ? e : e.getCause();
                say("XA REFUSED " + cause.getMessage());
            }
        } finally {
            connection.close();
        }
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

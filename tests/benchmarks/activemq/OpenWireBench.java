import javax.jms.BytesMessage;
import javax.jms.Connection;
import javax.jms.DeliveryMode;
import javax.jms.Message;
import javax.jms.MessageConsumer;
import javax.jms.MessageProducer;
import javax.jms.Queue;
import javax.jms.Session;
import org.apache.activemq.ActiveMQConnectionFactory;

/** The OpenWire benchmark's JMS clients (openwire_bench.py): ActiveMQ 5.17's own client, two roles:
 *  <ul>
 *  <li>{@code consume URL QUEUE N}: an AUTO_ACKNOWLEDGE consumer; prints "ready" once subscribed, then, after N
 *      messages, "done FIRST LAST BYTES" (wall-clock nanoseconds of the first and last receive);</li>
 *  <li>{@code produce URL QUEUE N SIZE PERSISTENT}: sends N BytesMessages of SIZE bytes (persistent: each send
 *      waits for the broker's response, as ActiveMQ's client does by default); prints "done START END".</li>
 *  </ul>
 *  Times are wall-clock (epoch) nanoseconds, so the producer's start and the consumer's end compare across the two
 *  processes. */
public class OpenWireBench {
    static long now() {
        java.time.Instant t = java.time.Instant.now();
        return t.getEpochSecond() * 1_000_000_000L + t.getNano();
    }

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "consume" -> consume(args[1], args[2], Integer.parseInt(args[3]));
            case "produce" -> produce(args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]),
                Boolean.parseBoolean(args[5]));
            default -> throw new IllegalArgumentException(args[0]);
        }
    }

    static void consume(String url, String name, int n) throws Exception {
        Connection connection = new ActiveMQConnectionFactory(url).createConnection();
        connection.start();
        Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Queue queue = session.createQueue(name);
        MessageConsumer consumer = session.createConsumer(queue);
        System.out.println("ready");
        System.out.flush();
        long first = 0;
        long bytes = 0;
        for (int i = 0; i < n; i++) {
            Message m = consumer.receive(60_000);
            if (m == null) {
                throw new IllegalStateException("no message within 60 s after " + i);
            }
            if (i == 0) {
                first = now();
            }
            bytes += ((BytesMessage) m).getBodyLength();
        }
        long last = now();
        System.out.println("done " + first + " " + last + " " + bytes);
        System.out.flush();
        connection.close();
    }

    static void produce(String url, String name, int n, int size, boolean persistent) throws Exception {
        Connection connection = new ActiveMQConnectionFactory(url).createConnection();
        connection.start();
        Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
        MessageProducer producer = session.createProducer(session.createQueue(name));
        producer.setDeliveryMode(persistent ? DeliveryMode.PERSISTENT : DeliveryMode.NON_PERSISTENT);
        byte[] body = new byte[size];
        for (int i = 0; i < size; i++) {
            body[i] = (byte) ('a' + i % 26);
        }
        long start = now();
        for (int i = 0; i < n; i++) {
            BytesMessage m = session.createBytesMessage();
            m.writeBytes(body);
            producer.send(m);
        }
        long end = now();
        System.out.println("done " + start + " " + end);
        System.out.flush();
        connection.close();
    }
}

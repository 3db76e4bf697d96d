// An embedded ActiveMQ 5.17.2 broker (no store, no JMX) whose OpenWire connector offers what minibroker offers:
// loose encoding, no marshal cache, no stack traces. Prints "PORT <n>", then runs until its standard input closes.
import java.net.URI;
import org.apache.activemq.broker.BrokerService;
import org.apache.activemq.broker.TransportConnector;

public class EmbeddedActiveMQ {
    public static void main(String[] args) throws Exception {
        BrokerService broker = new BrokerService();
        broker.setBrokerName("localhost");
        broker.setPersistent(false);
        broker.setUseJmx(false);
        broker.setUseShutdownHook(false);
        TransportConnector connector = broker.addConnector(
            "tcp://127.0.0.1:0?wireFormat.tightEncodingEnabled=false&wireFormat.cacheEnabled=false"
            + "&wireFormat.stackTraceEnabled=false");
        broker.start();
        broker.waitUntilStarted();
        System.out.println("PORT " + new URI(connector.getPublishableConnectString()).getPort());
        System.out.flush();
        while (System.in.read() != -1) {
            // until the test closes our input
        }
        broker.stop();
        broker.waitUntilStopped();
    }
}

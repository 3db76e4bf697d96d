import java.io.BufferedReader;
import java.io.InputStreamReader;
import org.apache.activemq.broker.BrokerService;
import org.apache.activemq.broker.TransportConnector;

/** ActiveMQ 5.17 for the OpenWire benchmark (openwire_bench.py): a BrokerService with one OpenWire connector at its
 *  defaults (tight encoding, marshal cache), no store and no JMX, as {@code minibroker serve} without --data-dir keeps
 *  messages in memory. Prints "port N", then stops when its input ends. */
public class OpenWireBroker {
    public static void main(String[] args) throws Exception {
        BrokerService broker = new BrokerService();
        broker.setBrokerName("bench");
        broker.setPersistent(false);
        broker.setUseJmx(false);
        broker.setUseShutdownHook(false);
        TransportConnector connector = broker.addConnector("tcp://127.0.0.1:0");
        broker.start();
        broker.waitUntilStarted();
        System.out.println("port " + connector.getConnectUri().getPort());
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        while (in.readLine() != null) {
            // until the benchmark closes our input
        }
        broker.stop();
        broker.waitUntilStopped();
    }
}

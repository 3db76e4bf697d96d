import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import org.apache.activemq.broker.BrokerService;
import org.apache.activemq.broker.TransportConnector;

/** A fresh embedded ActiveMQ 5.17.2 for the runs with --minibroker-external: ActiveMQ's default OpenWire connector
 *  (tcp://, its default wire format: tight encoding, cache, inactivity check), a STOMP and an MQTT connector, all on
 *  free loopback ports, not persistent, no JMX. Prints one line, {"openwire": N, "stomp": M, "mqtt": K}, then runs
 *  until stdin closes or says "quit". */
public class ExternalActiveMQ {
    public static void main(String[] args) throws Exception {
        BrokerService broker = new BrokerService();
        broker.setBrokerName("localhost");
        broker.setPersistent(false);
        broker.setUseJmx(false);
        TransportConnector openwire = broker.addConnector("tcp://127.0.0.1:0");
        TransportConnector stomp = broker.addConnector("stomp://127.0.0.1:0");
        TransportConnector mqtt = broker.addConnector("mqtt://127.0.0.1:0");
        broker.start();
        broker.waitUntilStarted();
        System.out.println("{\"openwire\": " + openwire.getConnectUri().getPort() + ", \"stomp\": "
            + stomp.getConnectUri().getPort() + ", \"mqtt\": " + mqtt.getConnectUri().getPort() + "}");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null && !line.trim().equals("quit")) { }
        broker.stop();
        broker.waitUntilStopped();
        System.exit(0);
    }
}

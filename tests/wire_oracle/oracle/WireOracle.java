import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import org.apache.activemq.broker.BrokerService;
import org.apache.activemq.broker.TransportConnector;

/** A fresh embedded ActiveMQ 5.17.2 with a STOMP and an MQTT connector on loopback, everything else at ActiveMQ's
 *  defaults (advisories on), not persistent unless the first argument is "persistent". Prints one line,
 *  {"stomp": N, "mqtt": M}, then runs until stdin closes or says "quit". Used by tests/wire_oracle/record.py. */
public class WireOracle {
    public static void main(String[] args) throws Exception {
        BrokerService broker = new BrokerService();
        broker.setBrokerName("localhost");
        broker.setPersistent(args.length > 0 && args[0].equals("persistent"));
        broker.setUseJmx(false);
        TransportConnector stomp = broker.addConnector("stomp://127.0.0.1:0");
        TransportConnector mqtt = broker.addConnector("mqtt://127.0.0.1:0");
        broker.start();
        broker.waitUntilStarted();
        System.out.println("{\"stomp\": " + stomp.getConnectUri().getPort() + ", \"mqtt\": " + mqtt.getConnectUri().getPort() + "}");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null && !line.trim().equals("quit")) { }
        broker.stop();
        broker.waitUntilStopped();
        System.exit(0);
    }
}

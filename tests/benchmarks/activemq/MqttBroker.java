import java.io.BufferedReader;
import java.io.InputStreamReader;
import org.apache.activemq.broker.BrokerService;
import org.apache.activemq.broker.TransportConnector;

/** ActiveMQ 5.17 with one MQTT connector, for the MQTT benchmark's same-run comparison (mqtt_bench.py): an embedded
 *  BrokerService in memory (no store, no JMX, no scheduler), as ``minibroker serve`` without a data directory is.
 *  Prints "port N", then stops at "quit" or the end of its input. */
public class MqttBroker {
    public static void main(String[] args) throws Exception {
        BrokerService broker = new BrokerService();
        broker.setBrokerName("bench");
        broker.setPersistent(false);
        broker.setUseJmx(false);
        broker.setSchedulerSupport(false);
        TransportConnector mqtt = broker.addConnector("mqtt://127.0.0.1:0");
        broker.start();
        broker.waitUntilStarted();
        System.out.println("port " + mqtt.getConnectUri().getPort());
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null && !line.trim().equals("quit")) {
        }
        broker.stop();
        broker.waitUntilStopped();
    }
}

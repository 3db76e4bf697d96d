import java.io.BufferedReader;
import java.io.InputStreamReader;
import org.apache.activemq.broker.BrokerService;
import org.apache.activemq.broker.TransportConnector;

/** ActiveMQ 5.17 with one STOMP connector, for the STOMP benchmark's same-run comparison (stomp_bench.py
 *  --broker activemq): an embedded BrokerService as minibroker's benchmark child is an in-memory Broker (no store,
 *  no JMX). Prints "port N", then stops at "quit" or the end of its input. */
public class StompBroker {
    public static void main(String[] args) throws Exception {
        BrokerService broker = new BrokerService();
        broker.setBrokerName("bench");
        broker.setPersistent(false);
        broker.setUseJmx(false);
        broker.setAdvisorySupport(false);
        TransportConnector stomp = broker.addConnector("stomp://127.0.0.1:0");
        broker.start();
        broker.waitUntilStarted();
        System.out.println("port " + stomp.getConnectUri().getPort());
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null && !line.trim().equals("quit")) {
        }
        broker.stop();
        broker.waitUntilStopped();
    }
}

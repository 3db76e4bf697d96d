import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Enumeration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import javax.jms.Connection;
import javax.jms.DeliveryMode;
import javax.jms.JMSException;
import javax.jms.Message;
import javax.jms.MessageConsumer;
import javax.jms.MessageProducer;
import javax.jms.QueueBrowser;
import javax.jms.Session;
import javax.jms.TextMessage;

import org.apache.activemq.ActiveMQConnection;
import org.apache.activemq.ActiveMQConnectionFactory;
import org.apache.activemq.ActiveMQSession;
import org.apache.activemq.RedeliveryPolicy;
import org.apache.activemq.broker.BrokerService;
import org.apache.activemq.broker.region.Destination;
import org.apache.activemq.broker.region.DestinationStatistics;
import org.apache.activemq.broker.region.policy.DeadLetterStrategy;
import org.apache.activemq.broker.region.policy.IndividualDeadLetterStrategy;
import org.apache.activemq.broker.region.policy.PolicyEntry;
import org.apache.activemq.broker.region.policy.PolicyMap;
import org.apache.activemq.broker.region.policy.SharedDeadLetterStrategy;
import org.apache.activemq.command.ActiveMQDestination;
import org.apache.activemq.command.ActiveMQMessage;
import org.apache.activemq.command.ActiveMQTempDestination;
import org.apache.activemq.broker.region.Topic;
import org.apache.activemq.broker.region.DurableTopicSubscription;
import org.apache.activemq.util.SubscriptionKey;

/**
 * JSON-scripted scenario interpreter for the ActiveMQ Classic oracle.
 *
 *   java ScriptOracle [--out DIR] SCRIPT.json|DIR [...]
 *
 * Each script runs on a fresh embedded broker; one JSON line {"script", "events"} per script on stdout.
 * See README.md in this directory for the script format.
 */
public class ScriptOracle {

    // ================================================================== tiny JSON parser
    static final class Parser {
        final String s; int i = 0;
        Parser(String s) { this.s = s; }
        static Object parse(String text) {
            Parser p = new Parser(text);
            Object v = p.value();
            p.ws();
            if (p.i != p.s.length()) throw p.err("trailing characters");
            return v;
        }
        RuntimeException err(String m) { return new IllegalArgumentException("JSON: " + m + " at offset " + i); }
        void ws() {
            while (i < s.length()) {
                char c = s.charAt(i);
                if (c == ' ' || c == '\t' || c == '\n' || c == '\r') i++;
                else if (c == '/' && i + 1 < s.length() && s.charAt(i + 1) == '/') { while (i < s.length() && s.charAt(i) != '\n') i++; }
                else break;
            }
        }
        Object value() {
            ws();
            if (i >= s.length()) throw err("unexpected end");
            char c = s.charAt(i);
            if (c == '{') {
                i++; Map<String, Object> m = new LinkedHashMap<>(); ws();
                if (s.charAt(i) == '}') { i++; return m; }
                while (true) {
                    ws(); String k = str(); ws(); expect(':'); m.put(k, value()); ws();
                    if (s.charAt(i) == ',') { i++; continue; }
                    expect('}'); return m;
                }
            }
            if (c == '[') {
                i++; List<Object> l = new ArrayList<>(); ws();
                if (s.charAt(i) == ']') { i++; return l; }
                while (true) {
                    l.add(value()); ws();
                    if (s.charAt(i) == ',') { i++; continue; }
                    expect(']'); return l;
                }
            }
            if (c == '"') return str();
            if (s.startsWith("true", i)) { i += 4; return Boolean.TRUE; }
            if (s.startsWith("false", i)) { i += 5; return Boolean.FALSE; }
            if (s.startsWith("null", i)) { i += 4; return null; }
            int st = i;
            while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) i++;
            String n = s.substring(st, i);
            if (n.isEmpty()) throw err("unexpected character '" + c + "'");
            if (n.contains(".") || n.contains("e") || n.contains("E")) return Double.parseDouble(n);
            return Long.parseLong(n);
        }
        void expect(char c) { if (i >= s.length() || s.charAt(i) != c) throw err("expected '" + c + "'"); i++; }
        String str() {
            expect('"');
            StringBuilder b = new StringBuilder();
            while (true) {
                if (i >= s.length()) throw err("unterminated string");
                char c = s.charAt(i++);
                if (c == '"') return b.toString();
                if (c == '\\') {
                    char e = s.charAt(i++);
                    switch (e) {
                        case 'n': b.append('\n'); break;
                        case 't': b.append('\t'); break;
                        case 'r': b.append('\r'); break;
                        case 'b': b.append('\b'); break;
                        case 'f': b.append('\f'); break;
                        case 'u': b.append((char) Integer.parseInt(s.substring(i, i + 4), 16)); i += 4; break;
                        default: b.append(e);
                    }
                } else b.append(c);
            }
        }
    }

    // ================================================================== per-script state
    static final class ScriptError extends RuntimeException { ScriptError(String m) { super(m); } }

    static int BROKER_SEQ = 0;
    BrokerService broker;
    String brokerName;
    long t0;
    final List<Map<String, Object>> events = new ArrayList<>();
    final Map<String, Connection> conns = new HashMap<>();
    final Map<String, Session> sessions = new HashMap<>();
    final Map<String, Boolean> sessionTx = new HashMap<>();
    final Map<String, MessageConsumer> consumers = new HashMap<>();
    final Map<String, Message> lastByBody = new HashMap<>();
    final Map<String, Message> lastByConsumer = new HashMap<>();   // minibroker extension: ack/reply by consumer
    final List<Connection> open = new ArrayList<>();
    Connection producerConn;
    final Map<String, javax.jms.Destination> temps = new LinkedHashMap<>();   // temp label -> TemporaryQueue/TemporaryTopic
    Session producerSession;

    // minibroker extension: the minibroker mode (`--minibroker HOST:PORT`, README.md). Instead of an embedded broker,
    // each script asks the Python driver on that control address (tests/openwire_replay/driver.py) for a fresh
    // minibroker with the script's broker options, connects to it over tcp:// and reads what only a broker knows
    // (statistics, destinations, durable subscriptions) through the driver: one JSON line per request and answer.
    static String CONTROL = null;
    // minibroker extension: `--tcp` runs the embedded broker with a tcp:// connector and connects the script's clients
    // through it, as the minibroker mode does, to tell what the transport changes from what the broker does.
    static boolean TCP = false;
    java.net.Socket control;
    java.io.BufferedReader controlIn;
    java.io.Writer controlOut;
    String brokerUrl;
    /** minibroker extension: the broker refused the script's options: this exception event (where broker.start). */
    Map<String, Object> startError;

    /** The URL the script's connections use: the embedded broker's vm:// or (minibroker extension) the driver's. */
    String url() { return brokerUrl != null ? brokerUrl : "vm://" + brokerName + "?create=false"; }

    /** minibroker extension: a fresh minibroker for this script, with its broker options, from the driver. */
    void startMinibroker(Map<String, Object> cfg) throws Exception {
        int colon = CONTROL.lastIndexOf(':');
        control = new java.net.Socket(CONTROL.substring(0, colon), Integer.parseInt(CONTROL.substring(colon + 1)));
        controlIn = new java.io.BufferedReader(new java.io.InputStreamReader(control.getInputStream(), StandardCharsets.UTF_8));
        controlOut = new java.io.OutputStreamWriter(control.getOutputStream(), StandardCharsets.UTF_8);
        Map<String, Object> a = ask(m("op", "start", "broker", cfg == null ? new HashMap<String, Object>() : cfg));
        brokerName = (String) a.get("brokerName");
        brokerUrl = (String) a.get("url");
        startError = obj(a, "startError");
    }

    /** minibroker extension: one request to the driver, its answer (an "error" answer throws). */
    @SuppressWarnings("unchecked")
    Map<String, Object> ask(Map<String, Object> request) {
        try {
            controlOut.write(Json.write(request));
            controlOut.write("\n");
            controlOut.flush();
            String line = controlIn.readLine();
            if (line == null) throw new IllegalStateException("the minibroker driver closed the control connection");
            Map<String, Object> a = (Map<String, Object>) Parser.parse(line);
            if (a.containsKey("error")) throw new IllegalStateException(String.valueOf(a.get("error")));
            return a;
        } catch (java.io.IOException e) { throw new RuntimeException(e); }
    }

    /** minibroker extension: the event the driver made from the broker's own state. */
    @SuppressWarnings("unchecked")
    void evAsked(Map<String, Object> request) { ev((Map<String, Object>) ask(request).get("event")); }

    /** Does the broker hold this (non-temporary) queue? */
    boolean queueExists(String q) {
        if (control != null) return (Boolean) ask(m("op", "exists", "dest", q)).get("exists");  // minibroker extension
        return dest(q) != null;
    }

    static long now() { return System.nanoTime() / 1_000_000L; }
    static long r10(long ms) { return Math.round(ms / 10.0) * 10; }
    long tms() { return r10(now() - t0); }
    static void sleep(long ms) { try { Thread.sleep(ms); } catch (InterruptedException e) { throw new RuntimeException(e); } }

    static Map<String, Object> m(Object... kv) {
        Map<String, Object> r = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) r.put((String) kv[i], kv[i + 1]);
        return r;
    }
    void ev(Map<String, Object> e) {
        // minibroker extension (tests/conformance/EXTENSIONS.md): the running op's silent/omit/extra apply to the events
        // it records itself, on the script thread
        Map<String, Object> op = currentOp;
        if (op != null && Thread.currentThread() == scriptThread) {
            if (bool(op, "silent", false)) return;
            Object omit = op.get("omit");
            if (omit instanceof List) for (Object k : (List<?>) omit) e.remove(String.valueOf(k));
            Map<String, Object> extra = obj(op, "extra");
            if (extra != null) e.putAll(extra);
        }
        synchronized (events) { events.add(e); }
    }
    volatile Map<String, Object> currentOp;   // minibroker extension: the op the script thread runs
    Thread scriptThread;

    String normB(String s) {
        if (s == null) return null;
        s = norm(s);
        return brokerName == null ? s : s.replace(brokerName, "<broker>").replaceAll("vm://<broker>#[0-9]+", "vm://<broker>#<n>");
    }

    static String norm(String s) {
        if (s == null) return null;
        return s.replaceAll("TopicSubDiscard\\. ID:\\S+", "TopicSubDiscard. ID:<consumer>")
                .replaceAll("ID:[A-Za-z0-9_.\\-]+(:[0-9]+)*", "ID:<id>")
                .replaceAll("Expiration:[0-9]+", "Expiration:<epoch_ms>");
    }

    // ---- typed access to op fields
    static Object get(Map<String, Object> o, String k) { return o.get(k); }
    static String str(Map<String, Object> o, String k, String def) { Object v = o.get(k); return v == null ? def : v.toString(); }
    static String req(Map<String, Object> o, String k) {
        Object v = o.get(k);
        if (v == null) throw new ScriptError("op '" + o.get("op") + "' needs field '" + k + "'");
        return v.toString();
    }
    static long lng(Map<String, Object> o, String k, long def) { Object v = o.get(k); return v == null ? def : ((Number) v).longValue(); }
    static double dbl(Map<String, Object> o, String k, double def) { Object v = o.get(k); return v == null ? def : ((Number) v).doubleValue(); }
    static boolean bool(Map<String, Object> o, String k, boolean def) { Object v = o.get(k); return v == null ? def : (Boolean) v; }
    @SuppressWarnings("unchecked") static Map<String, Object> obj(Map<String, Object> o, String k) { return (Map<String, Object>) o.get(k); }

    <T> T lookup(Map<String, T> map, String kind, String label) {
        T v = map.get(label);
        if (v == null) throw new ScriptError("unknown " + kind + " '" + label + "'");
        return v;
    }

    // ================================================================== broker
    void startBroker(Map<String, Object> cfg) throws Exception {
        if (CONTROL != null) { startMinibroker(cfg); return; }  // minibroker extension
        if (cfg == null) cfg = new HashMap<>();
        BrokerService b = new BrokerService();
        brokerName = "script" + (++BROKER_SEQ);
        b.setBrokerName(brokerName);
        b.setPersistent(false);
        b.setUseJmx(false);
        b.setUseShutdownHook(false);
        b.setSchedulerSupport(bool(cfg, "schedulerSupport", false));
        List<Object> entries = new ArrayList<>();
        boolean policy = cfg.containsKey("prioritizedMessages") || cfg.containsKey("deadLetterStrategy")
                || cfg.containsKey("processNonPersistent") || cfg.containsKey("dlqPrefix") || cfg.containsKey("processExpired")
                || cfg.containsKey("maxBrowsePageSize");  // minibroker extension: maxBrowsePageSize
        if (policy) {
            PolicyEntry pe = new PolicyEntry();
            pe.setQueue(">");
            if (cfg.containsKey("prioritizedMessages")) pe.setPrioritizedMessages(bool(cfg, "prioritizedMessages", false));
            if (cfg.containsKey("maxBrowsePageSize")) pe.setMaxBrowsePageSize((int) lng(cfg, "maxBrowsePageSize", 400));  // minibroker extension
            String strat = str(cfg, "deadLetterStrategy", "shared");
            DeadLetterStrategy st;
            if (strat.equals("individual")) {
                IndividualDeadLetterStrategy ind = new IndividualDeadLetterStrategy();
                if (cfg.containsKey("dlqPrefix")) ind.setQueuePrefix(str(cfg, "dlqPrefix", null));
                st = ind;
            } else if (strat.equals("shared")) {
                st = new SharedDeadLetterStrategy();
            } else throw new ScriptError("deadLetterStrategy must be shared|individual");
            if (cfg.containsKey("processNonPersistent")) st.setProcessNonPersistent(bool(cfg, "processNonPersistent", false));
            if (cfg.containsKey("processExpired")) st.setProcessExpired(bool(cfg, "processExpired", true));
            pe.setDeadLetterStrategy(st);
            entries.add(pe);
        }
        if (cfg.containsKey("topicPendingMessageLimit")) {  // minibroker extension: a slow topic subscriber's limit
            PolicyEntry te = new PolicyEntry();
            te.setTopic(">");
            org.apache.activemq.broker.region.policy.ConstantPendingMessageLimitStrategy limit =
                    new org.apache.activemq.broker.region.policy.ConstantPendingMessageLimitStrategy();
            limit.setLimit((int) lng(cfg, "topicPendingMessageLimit", -1));
            te.setPendingMessageLimitStrategy(limit);
            entries.add(te);
        }
        if (!entries.isEmpty()) {
            PolicyMap pm = new PolicyMap();
            pm.setPolicyEntries(entries);
            b.setDestinationPolicy(pm);
        }
        if (TCP) b.addConnector("tcp://127.0.0.1:0");  // minibroker extension: --tcp
        b.start();
        b.waitUntilStarted();
        broker = b;
        if (TCP) brokerUrl = b.getTransportConnectors().get(0).getPublishableConnectString() + "?jms.alwaysSyncSend=true";
    }

    Destination dest(String name) { return dest(name, false); }
    Destination dest(String name, boolean topic) {
        try {
            for (Map.Entry<ActiveMQDestination, Destination> en : broker.getBroker().getDestinationMap().entrySet())
                if ((topic ? en.getKey().isTopic() : en.getKey().isQueue()) && !en.getKey().isTemporary()
                        && en.getKey().getPhysicalName().equals(name)) return en.getValue();
        } catch (Exception e) { throw new RuntimeException(e); }
        return null;
    }

    void stats(String queue) { stats(queue, false); }
    void stats(String queue, boolean topic) {
        if (control != null) { evAsked(m("op", "stats", "dest", queue, "topic", topic)); return; }  // minibroker extension
        Destination d = dest(queue, topic);
        Map<String, Object> e = topic ? m("event", "topic_stats", "topic", queue) : m("event", "queue_stats", "queue", queue);
        if (d == null) { e.put("exists", false); ev(e); return; }
        DestinationStatistics s = d.getDestinationStatistics();
        e.put("size", s.getMessages().getCount());
        e.put("inflight", s.getInflight().getCount());
        e.put("enqueues", s.getEnqueues().getCount());
        e.put("dequeues", s.getDequeues().getCount());
        e.put("expired", s.getExpired().getCount());
        e.put("consumers", s.getConsumers().getCount());
        ev(e);
    }

    // ================================================================== messages
    static String body(Message msg) throws JMSException {
        if (msg instanceof TextMessage) return ((TextMessage) msg).getText();
        if (msg instanceof javax.jms.BytesMessage) {
            javax.jms.BytesMessage bm = (javax.jms.BytesMessage) msg;
            bm.reset();
            byte[] b = new byte[(int) bm.getBodyLength()];
            bm.readBytes(b);
            return new String(b, StandardCharsets.UTF_8);
        }
        if (msg instanceof javax.jms.MapMessage) return null;   // content in the "map" field
        return msg.getClass().getSimpleName();   // StreamMessage, ObjectMessage: content in "stream" / "object"
    }

    /** minibroker extension: a stream or object value as "Class:value" (byte[] as UTF-8 text, Float as its text). */
    static Object classed(Object v) {
        if (v == null) return null;
        String text = v instanceof byte[] ? new String((byte[]) v, StandardCharsets.UTF_8) : String.valueOf(v);
        return (v instanceof byte[] ? "byte[]" : v.getClass().getSimpleName()) + ":" + text;
    }

    /** minibroker extension: "reads:int,string,..." reads a StreamMessage from its start with readInt, readString,
     *  ... and records each value (classed) or the exception's class; a failed read does not advance. */
    static List<Object> streamReads(javax.jms.StreamMessage sm, String spec) throws JMSException {
        sm.reset();
        List<Object> r = new ArrayList<>();
        for (String t : spec.split(",")) {
            try {
                switch (t) {
                    case "boolean": r.add(classed(sm.readBoolean())); break;
                    case "byte": r.add(classed(sm.readByte())); break;
                    case "short": r.add(classed(sm.readShort())); break;
                    case "int": r.add(classed(sm.readInt())); break;
                    case "long": r.add(classed(sm.readLong())); break;
                    case "float": r.add(classed(sm.readFloat())); break;
                    case "double": r.add(classed(sm.readDouble())); break;
                    case "string": r.add(classed(sm.readString())); break;
                    case "object": r.add(classed(sm.readObject())); break;
                    case "bytes": { byte[] b = new byte[64]; int n = sm.readBytes(b); r.add(n < 0 ? null : "byte[]:" + new String(b, 0, n, StandardCharsets.UTF_8)); break; }
                    default: r.add("unknown read " + t);
                }
            } catch (Exception ex) {
                r.add(ex.getClass().getSimpleName());
            }
        }
        return r;
    }

    /** minibroker extension: a typed value {"short": 5}, {"byte": 1}, {"int": 3}, {"long": 4}, {"float": 1.5},
     *  {"double": 2.5}, {"boolean": true}, {"string": "x"}, {"bytes": "text"} as the Java object; else null. */
    @SuppressWarnings("unchecked")
    static Object typed(Object v) {
        if (!(v instanceof Map)) return null;
        Map<String, Object> t = (Map<String, Object>) v;
        if (t.size() != 1) return null;
        Map.Entry<String, Object> e = t.entrySet().iterator().next();
        Object x = e.getValue();
        switch (e.getKey()) {
            case "byte": return ((Number) x).byteValue();
            case "short": return ((Number) x).shortValue();
            case "int": return ((Number) x).intValue();
            case "long": return ((Number) x).longValue();
            case "float": return ((Number) x).floatValue();
            case "double": return ((Number) x).doubleValue();
            case "boolean": return (Boolean) x;
            case "string": return String.valueOf(x);
            case "char": return String.valueOf(x).charAt(0);
            case "bytes": return String.valueOf(x).getBytes(StandardCharsets.UTF_8);
            default: return null;
        }
    }

    /** minibroker extension: the Java class of each value, by name ({"p": "Short", ...}). */
    static Map<String, Object> typesOf(Map<String, Object> values) {
        Map<String, Object> r = new TreeMap<>();
        for (Map.Entry<String, Object> e : values.entrySet()) r.put(e.getKey(), e.getValue() == null ? null : e.getValue().getClass().getSimpleName());
        return r;
    }

    /** minibroker extension: a JMS getter's answer, "get:<type>:<name>" -> the value or the exception's class. */
    static Object getter(Message msg, String type, String name) {
        try {
            switch (type) {
                case "boolean": return msg.getBooleanProperty(name);
                case "byte": return (int) msg.getByteProperty(name);
                case "short": return (int) msg.getShortProperty(name);
                case "int": return msg.getIntProperty(name);
                case "long": return msg.getLongProperty(name);
                case "float": return (double) msg.getFloatProperty(name);
                case "double": return msg.getDoubleProperty(name);
                case "string": return msg.getStringProperty(name);
                default: return "unknown getter " + type;
            }
        } catch (Exception ex) {
            return ex.getClass().getSimpleName();
        }
    }

    static Map<String, Object> mapBody(javax.jms.MapMessage mm) throws JMSException {
        Map<String, Object> r = new TreeMap<>();
        for (Enumeration<?> en = mm.getMapNames(); en.hasMoreElements();) {
            String k = (String) en.nextElement();
            Object v = mm.getObject(k);
            if (v instanceof byte[]) v = new String((byte[]) v, StandardCharsets.UTF_8);
            else if (v instanceof Float) v = ((Float) v).doubleValue();
            else if (v instanceof Short || v instanceof Byte) v = ((Number) v).intValue();
            else if (v instanceof Character) v = v.toString();
            r.put(k, v);
        }
        return r;
    }

    /** A stable token for a destination: temp:LABEL for the script's temporary destinations, else queue://X / topic://X. */
    String destToken(javax.jms.Destination d) {
        if (d == null) return null;
        for (Map.Entry<String, javax.jms.Destination> en : temps.entrySet())
            if (en.getValue().equals(d)) return "temp:" + en.getKey();
        ActiveMQDestination ad = (ActiveMQDestination) d;
        if (ad.isTemporary()) return (ad.isQueue() ? "temp-queue:" : "temp-topic:") + "<unknown>";
        return ad.getQualifiedName();
    }

    Map<String, Object> props(Message msg) throws JMSException {
        Map<String, Object> p = new TreeMap<>();
        for (Enumeration<?> en = msg.getPropertyNames(); en.hasMoreElements();) {
            String k = (String) en.nextElement();
            Object v = msg.getObjectProperty(k);
            p.put(k, v instanceof String ? normB((String) v) : v);
        }
        return p;
    }

    Map<String, Object> describe(String consumer, Message msg, List<Object> record) throws JMSException {
        Map<String, Object> e = m("event", "received", "consumer", consumer);
        e.put("body", body(msg));
        if (msg instanceof javax.jms.MapMessage) e.put("map", mapBody((javax.jms.MapMessage) msg));
        if (msg instanceof javax.jms.StreamMessage) {
            javax.jms.StreamMessage sm = (javax.jms.StreamMessage) msg;
            List<Object> vs = new ArrayList<>();
            try { while (true) vs.add(classed(sm.readObject())); } catch (javax.jms.MessageEOFException eof) { }
            sm.reset();
            e.put("stream", vs);
        }
        if (msg instanceof javax.jms.ObjectMessage) {
            Object o = ((javax.jms.ObjectMessage) msg).getObject();
            e.put("object", o == null ? null : (o instanceof byte[] ? "byte[]" : o.getClass().getName()) + ":" + (o instanceof byte[] ? new String((byte[]) o, StandardCharsets.UTF_8) : o));
        }
        e.put("redelivered", msg.getJMSRedelivered());
        e.put("deliveryCount", msg.getIntProperty("JMSXDeliveryCount"));
        e.put("redeliveryCounter", ((ActiveMQMessage) msg).getRedeliveryCounter());
        e.put("t_ms", tms());
        if (record != null) for (Object o : record) {
            String p = o.toString();
            if (p.equals("priority")) e.put("priority", msg.getJMSPriority());
            else if (p.equals("persistent")) e.put("persistent", msg.getJMSDeliveryMode() == DeliveryMode.PERSISTENT);
            else if (p.equals("properties")) e.put("properties", props(msg));
            else if (p.equals("reply_to")) e.put("reply_to", destToken(msg.getJMSReplyTo()));
            else if (p.equals("correlation_id")) e.put("correlation_id", msg.getJMSCorrelationID());
            else if (p.equals("destination")) e.put("destination", destToken(msg.getJMSDestination()));
            else if (p.equals("propertyTypes")) {
                Map<String, Object> raw = new TreeMap<>();
                for (Enumeration<?> en = msg.getPropertyNames(); en.hasMoreElements();) {
                    String k = (String) en.nextElement();
                    raw.put(k, msg.getObjectProperty(k));
                }
                e.put("propertyTypes", typesOf(raw));
            }
            else if (p.equals("mapTypes") && msg instanceof javax.jms.MapMessage) {
                javax.jms.MapMessage mm = (javax.jms.MapMessage) msg;
                Map<String, Object> raw = new TreeMap<>();
                for (Enumeration<?> en = mm.getMapNames(); en.hasMoreElements();) {
                    String k = (String) en.nextElement();
                    raw.put(k, mm.getObject(k));
                }
                e.put("mapTypes", typesOf(raw));
            }
            else if (p.startsWith("get:")) {
                String[] parts = p.split(":", 3);
                e.put(p, getter(msg, parts[1], parts[2]));
            }
            else if (p.startsWith("reads:") && msg instanceof javax.jms.StreamMessage) e.put(p, streamReads((javax.jms.StreamMessage) msg, p.substring(6)));
            else if (p.equals("brokerSequenceId")) e.put(p, ((ActiveMQMessage) msg).getMessageId().getBrokerSequenceId());  // minibroker extension
            else if (p.equals("destinationInfo")) {  // minibroker extension: "add|remove <qualified destination>"
                Object ds = ((ActiveMQMessage) msg).getDataStructure();
                if (ds instanceof org.apache.activemq.command.DestinationInfo) {
                    org.apache.activemq.command.DestinationInfo di = (org.apache.activemq.command.DestinationInfo) ds;
                    e.put(p, (di.isAddOperation() ? "add " : di.isRemoveOperation() ? "remove " : "op" + di.getOperationType() + " ")
                            + normB(di.getDestination().getQualifiedName()));
                } else e.put(p, null);
            }
            else if (p.equals("dataStructure")) {
                Object ds = ((ActiveMQMessage) msg).getDataStructure();
                e.put("dataStructure", ds == null ? null : ds.getClass().getSimpleName());
            }
            else { Object v = msg.getObjectProperty(p); e.put(p, v instanceof String ? normB((String) v) : v); }
        }
        return e;
    }

    /** minibroker extension: the received_headers event (tests/conformance/EXTENSIONS.md). */
    Map<String, Object> headers(Message msg) throws JMSException {
        Map<String, Object> props = new TreeMap<>();
        for (Enumeration<?> en = msg.getPropertyNames(); en.hasMoreElements();) {
            String k = (String) en.nextElement();
            Object v = msg.getObjectProperty(k);
            props.put(k, (v == null ? "null" : v.getClass().getSimpleName()) + ":" + (v instanceof String ? normB((String) v) : v));
        }
        long exp = msg.getJMSExpiration();
        Map<String, Object> e = m("event", "received_headers", "body", body(msg));
        e.put("JMSMessageID_prefix", msg.getJMSMessageID().substring(0, 3));
        e.put("JMSCorrelationID", msg.getJMSCorrelationID());
        e.put("JMSType", msg.getJMSType());
        e.put("JMSReplyTo", String.valueOf(msg.getJMSReplyTo()));
        e.put("JMSDestination", String.valueOf(msg.getJMSDestination()));
        e.put("JMSDeliveryMode", msg.getJMSDeliveryMode());
        e.put("JMSPriority", msg.getJMSPriority());
        e.put("JMSExpiration_is_zero", exp == 0);
        e.put("JMSExpiration_minus_JMSTimestamp", exp == 0 ? null : (Object) (exp - msg.getJMSTimestamp()));
        e.put("JMSTimestamp_nonzero", msg.getJMSTimestamp() != 0);
        e.put("JMSRedelivered", msg.getJMSRedelivered());
        e.put("properties", props);
        e.put("JMSXDeliveryCount", msg.getIntProperty("JMSXDeliveryCount"));
        return e;
    }

    javax.jms.Destination jmsDest(Session s, Map<String, Object> op) throws JMSException {
        if (op.containsKey("temp")) return lookup(temps, "temp", req(op, "temp"));
        String d = req(op, "dest");
        return bool(op, "topic", false) ? s.createTopic(d) : s.createQueue(d);
    }

    // ================================================================== ops
    @SuppressWarnings("unchecked")
    void exec(Map<String, Object> op) throws Exception {
        String name = req(op, "op");
        switch (name) {
            case "connect": {
                String label = req(op, "conn");
                ActiveMQConnectionFactory f = new ActiveMQConnectionFactory(url());
                Map<String, Object> rp = obj(op, "redeliveryPolicy");
                if (rp != null) {
                    RedeliveryPolicy p = new RedeliveryPolicy();
                    if (rp.containsKey("maximumRedeliveries")) p.setMaximumRedeliveries((int) lng(rp, "maximumRedeliveries", 6));
                    if (rp.containsKey("initialRedeliveryDelay")) p.setInitialRedeliveryDelay(lng(rp, "initialRedeliveryDelay", 1000));
                    if (rp.containsKey("redeliveryDelay")) p.setRedeliveryDelay(lng(rp, "redeliveryDelay", 1000));
                    if (rp.containsKey("useExponentialBackOff")) p.setUseExponentialBackOff(bool(rp, "useExponentialBackOff", false));
                    if (rp.containsKey("backOffMultiplier")) p.setBackOffMultiplier(dbl(rp, "backOffMultiplier", 5));
                    if (rp.containsKey("maximumRedeliveryDelay")) p.setMaximumRedeliveryDelay(lng(rp, "maximumRedeliveryDelay", -1));
                    f.setRedeliveryPolicy(p);
                }
                if (op.containsKey("nonBlockingRedelivery")) f.setNonBlockingRedelivery(bool(op, "nonBlockingRedelivery", false));
                if (op.containsKey("prefetch")) f.getPrefetchPolicy().setAll((int) lng(op, "prefetch", 1000));
                if (op.containsKey("messagePrioritySupported")) f.setMessagePrioritySupported(bool(op, "messagePrioritySupported", false));
                if (op.containsKey("watchTopicAdvisories")) f.setWatchTopicAdvisories(bool(op, "watchTopicAdvisories", true));
                Connection c = f.createConnection();
                open.add(c);
                if (op.containsKey("clientId")) c.setClientID(req(op, "clientId"));
                if (bool(op, "start", true)) c.start();
                conns.put(label, c);
                break;
            }
            case "start_connection": lookup(conns, "conn", req(op, "conn")).start(); break;
            case "session": {
                String label = req(op, "session");
                Connection c = lookup(conns, "conn", req(op, "conn"));
                String mode = str(op, "mode", "AUTO");
                Session s;
                switch (mode) {
                    case "AUTO": s = c.createSession(false, Session.AUTO_ACKNOWLEDGE); break;
                    case "CLIENT": s = c.createSession(false, Session.CLIENT_ACKNOWLEDGE); break;
                    case "DUPS_OK": s = c.createSession(false, Session.DUPS_OK_ACKNOWLEDGE); break;
                    case "TRANSACTED": s = c.createSession(true, Session.SESSION_TRANSACTED); break;
                    case "INDIVIDUAL": s = c.createSession(false, ActiveMQSession.INDIVIDUAL_ACKNOWLEDGE); break;
                    default: throw new ScriptError("unknown session mode " + mode);
                }
                sessions.put(label, s);
                sessionTx.put(label, mode.equals("TRANSACTED"));
                break;
            }
            case "send": {
                String sl = str(op, "session", null);
                Session s;
                boolean tx = false;
                if (sl == null) {
                    if (producerConn == null) {
                        producerConn = new ActiveMQConnectionFactory(url()).createConnection();
                        open.add(producerConn);
                        producerConn.start();
                        producerSession = producerConn.createSession(false, Session.AUTO_ACKNOWLEDGE);
                    }
                    s = producerSession;
                } else { s = lookup(sessions, "session", sl); tx = sessionTx.get(sl); }
                String body = op.containsKey("map") || op.containsKey("stream") || op.containsKey("object") ? str(op, "body", null) : req(op, "body");
                boolean persistent = bool(op, "persistent", true);
                int priority = (int) lng(op, "priority", 4);
                long ttl = lng(op, "ttl_ms", 0);
                String group = str(op, "group", null);
                boolean topic = bool(op, "topic", false);
                Map<String, Object> e = op.containsKey("temp") ? m("event", "sent", "temp", req(op, "temp"))
                        : m("event", "sent", topic ? "topic" : "queue", req(op, "dest"));
                if (body != null) e.put("body", body);
                if (op.containsKey("map")) e.put("map", new TreeMap<>(obj(op, "map")));
                if (op.containsKey("stream")) e.put("stream", op.get("stream"));
                if (op.containsKey("object")) e.put("object", op.get("object"));
                if (!persistent) e.put("persistent", false);
                if (priority != 4) e.put("priority", priority);
                if (ttl != 0) e.put("ttl_ms", ttl);
                if (group != null) e.put("group", group);
                if (op.containsKey("delay_ms")) e.put("delay_ms", lng(op, "delay_ms", 0));
                if (op.containsKey("period_ms")) e.put("period_ms", lng(op, "period_ms", 0));
                if (op.containsKey("repeat")) e.put("repeat", lng(op, "repeat", 0));
                if (op.containsKey("cron")) e.put("cron", req(op, "cron"));
                if (op.containsKey("reply_to")) e.put("reply_to", req(op, "reply_to"));
                if (op.containsKey("correlation_id")) e.put("correlation_id", req(op, "correlation_id"));
                if (tx) e.put("transacted", true);
                ev(e);   // recorded before the send (like the listener-safe mode of the hard-coded oracle)
                sendMsg(s, jmsDest(s, op), op, body, persistent, priority, ttl, group);
                break;
            }
            case "reply": {
                // send to the JMSReplyTo of the last received message with body `to`
                Session s = lookup(sessions, "session", req(op, "session"));
                Message req;
                String to;
                if (!op.containsKey("to")) {  // minibroker extension: the consumer's last received message
                    String cl = req(op, "consumer");
                    synchronized (lastByBody) { req = lastByConsumer.get(cl); }
                    if (req == null) throw new ScriptError("no message received by consumer '" + cl + "'");
                    to = body(req);
                } else {
                    to = req(op, "to");
                    synchronized (lastByBody) { req = lastByBody.get(to); }
                    if (req == null) throw new ScriptError("no received message with body '" + to + "'");
                }
                javax.jms.Destination rd = req.getJMSReplyTo();
                String body = req(op, "body");
                Map<String, Object> e = m("event", "sent", "reply_to_of", to, "dest", destToken(rd), "body", body);
                if (op.containsKey("correlation_id")) e.put("correlation_id", req(op, "correlation_id"));
                if (sessionTx.get(req(op, "session"))) e.put("transacted", true);
                ev(e);
                if (rd == null) throw new ScriptError("message '" + to + "' has no JMSReplyTo");
                sendMsg(s, rd, op, body, true, 4, 0, null);
                break;
            }
            case "temp_queue": case "temp_topic": {
                Session s = lookup(sessions, "session", req(op, "session"));
                String label = req(op, "temp");
                temps.put(label, name.equals("temp_queue") ? s.createTemporaryQueue() : s.createTemporaryTopic());
                break;
            }
            case "delete_temp": {
                String label = req(op, "temp");
                javax.jms.Destination d = lookup(temps, "temp", label);
                ev(m("event", "action", "action", "delete_temp", "temp", label));
                if (d instanceof javax.jms.TemporaryQueue) ((javax.jms.TemporaryQueue) d).delete();
                else ((javax.jms.TemporaryTopic) d).delete();
                break;
            }
            case "temp_exists": {
                // does the broker still hold this temp destination?
                String label = req(op, "temp");
                javax.jms.Destination d = lookup(temps, "temp", label);
                sleep(lng(op, "settle_ms", 150));
                if (control != null) {  // minibroker extension
                    ActiveMQDestination td = (ActiveMQDestination) d;
                    evAsked(m("op", "temp_exists", "temp", label, "dest", td.getQualifiedName()));
                    break;
                }
                org.apache.activemq.broker.region.RegionBroker rb = (org.apache.activemq.broker.region.RegionBroker) broker.getRegionBroker();
                ActiveMQDestination ad = (ActiveMQDestination) d;
                boolean exists = (ad.isQueue() ? rb.getTempQueueRegion() : rb.getTempTopicRegion()).getDestinationMap().containsKey(ad);
                ev(m("event", "temp_exists", "temp", label, "exists", exists));
                break;
            }
            case "durable_subscriber": {
                String label = req(op, "consumer");
                Session s = lookup(sessions, "session", req(op, "session"));
                javax.jms.Topic t = s.createTopic(req(op, "dest"));
                MessageConsumer c = s.createDurableSubscriber(t, req(op, "name"), str(op, "selector", null), bool(op, "noLocal", false));
                consumers.put(label, c);
                break;
            }
            case "unsubscribe": {
                String sl = req(op, "session");
                Session s = lookup(sessions, "session", sl);
                String nm = req(op, "name");
                ev(m("event", "action", "action", "unsubscribe", "session", sl, "name", nm));
                s.unsubscribe(nm);
                break;
            }
            case "durable_subs": {
                // durable subscriptions the broker holds on a topic: [{clientId, name, active, pending}], sorted
                String t = req(op, "dest");
                sleep(lng(op, "settle_ms", 150));
                if (control != null) { evAsked(m("op", "durable_subs", "dest", t)); break; }  // minibroker extension
                Destination d = dest(t, true);
                Map<String, Object> e = m("event", "durable_subs", "topic", t);
                if (!(d instanceof Topic)) { e.put("exists", false); ev(e); break; }
                List<Map<String, Object>> subs = new ArrayList<>();
                for (Map.Entry<SubscriptionKey, DurableTopicSubscription> en : ((Topic) d).getDurableTopicSubs().entrySet()) {
                    DurableTopicSubscription ds = en.getValue();
                    subs.add(m("clientId", en.getKey().getClientId(), "name", en.getKey().getSubscriptionName(),
                            "active", ds.isActive(), "pending", ds.getPendingQueueSize()));
                }
                subs.sort((a, b) -> (a.get("clientId") + "/" + a.get("name")).compareTo(b.get("clientId") + "/" + b.get("name")));
                e.put("subs", subs);
                ev(e);
                break;
            }
            case "consumer": {
                String label = req(op, "consumer");
                Session s = lookup(sessions, "session", req(op, "session"));
                javax.jms.Destination jd;
                if (op.containsKey("temp")) jd = lookup(temps, "temp", req(op, "temp"));
                else {
                    String d = req(op, "dest");
                    if (op.containsKey("prefetch")) d = d + "?consumer.prefetchSize=" + lng(op, "prefetch", 1000);
                    jd = bool(op, "topic", false) ? s.createTopic(d) : s.createQueue(d);
                }
                MessageConsumer c = s.createConsumer(jd, str(op, "selector", null));
                consumers.put(label, c);
                break;
            }
            case "receive": {
                String label = req(op, "consumer");
                MessageConsumer c = lookup(consumers, "consumer", label);
                long timeout = lng(op, "timeout_ms", 0);
                if (timeout < 0) throw new ScriptError("timeout_ms must be >= 0 (0 = receiveNoWait)");
                Message msg = timeout == 0 ? c.receiveNoWait() : c.receive(timeout);
                if (msg == null) {
                    ev(m("event", "null_receive", "consumer", label, "timeout_ms", timeout == 0 ? "noWait" : (Object) timeout));
                } else if (bool(op, "headers", false)) {  // minibroker extension: the message's JMS headers
                    ev(headers(msg));
                    synchronized (lastByBody) { lastByBody.put(body(msg), msg); }
                } else {
                    ev(describe(label, msg, (List<Object>) op.get("record")));
                    synchronized (lastByBody) { lastByBody.put(body(msg), msg); lastByConsumer.put(label, msg); }
                }
                break;
            }
            case "ack": {
                Message msg;
                if (!op.containsKey("message")) {  // minibroker extension: the consumer's last received message
                    String cl = req(op, "consumer");
                    synchronized (lastByBody) { msg = lastByConsumer.get(cl); }
                    if (msg == null) throw new ScriptError("no message received by consumer '" + cl + "'");
                    ev(m("event", "action", "action", "acknowledge", "consumer", cl, "body", body(msg)));
                    msg.acknowledge();
                    break;
                }
                String b = req(op, "message");
                synchronized (lastByBody) { msg = lastByBody.get(b); }
                if (msg == null) throw new ScriptError("no received message with body '" + b + "'");
                ev(m("event", "action", "action", "acknowledge", "body", b));
                msg.acknowledge();
                break;
            }
            case "recover": case "commit": case "rollback": {
                String sl = req(op, "session");
                Session s = lookup(sessions, "session", sl);
                ev(m("event", "action", "action", name, "session", sl));
                if (name.equals("recover")) s.recover();
                else if (name.equals("commit")) s.commit();
                else s.rollback();
                break;
            }
            case "listener": {
                String label = req(op, "consumer");
                MessageConsumer c = lookup(consumers, "consumer", label);
                String behaviour = str(op, "behaviour", "ok");
                if (!behaviour.equals("ok") && !behaviour.equals("throw")) throw new ScriptError("behaviour must be ok|throw");
                final List<Object> record = (List<Object>) op.get("record");
                ev(m("event", "listener_set", "consumer", label, "behaviour", behaviour));
                c.setMessageListener(msg -> {
                    try {
                        ev(describe(label, msg, record));
                        synchronized (lastByBody) { lastByBody.put(body(msg), msg); lastByConsumer.put(label, msg); }
                    } catch (JMSException ex) { throw new RuntimeException(ex); }
                    if (behaviour.equals("throw")) throw new RuntimeException("boom");
                });
                break;
            }
            case "close_consumer": {
                String label = req(op, "consumer");
                MessageConsumer c = lookup(consumers, "consumer", label);
                ev(m("event", "action", "action", "close_consumer", "consumer", label));
                c.close();
                break;
            }
            case "close_session": {
                String label = req(op, "session");
                Session s = lookup(sessions, "session", label);
                ev(m("event", "action", "action", "close_session", "session", label));
                s.close();
                break;
            }
            case "close_connection": {
                String label = req(op, "conn");
                Connection c = lookup(conns, "conn", label);
                ev(m("event", "action", "action", "close_connection", "conn", label));
                c.close();
                break;
            }
            case "sleep": sleep(lng(op, "ms", 0)); break;
            case "stats": sleep(lng(op, "settle_ms", 150)); stats(req(op, "dest"), bool(op, "topic", false)); break;
            case "dlq": {
                String q = str(op, "dest", "ActiveMQ.DLQ");
                sleep(lng(op, "settle_ms", 150));
                stats(q);
                if (!queueExists(q)) break;
                dlq(q, bool(op, "consume", false));
                break;
            }
            case "browse": {
                String q = req(op, "dest");
                sleep(lng(op, "settle_ms", 150));
                if (!queueExists(q)) { ev(m("event", "browsed", "queue", q, "exists", false)); break; }
                List<String> bodies = new ArrayList<>();
                Connection c = new ActiveMQConnectionFactory(url()).createConnection();
                try {
                    c.start();
                    Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
                    String selector = str(op, "selector", null);  // minibroker extension: a browser's selector
                    QueueBrowser br = selector == null ? s.createBrowser(s.createQueue(q)) : s.createBrowser(s.createQueue(q), selector);
                    for (Enumeration<?> en = br.getEnumeration(); en.hasMoreElements();) bodies.add(body((Message) en.nextElement()));
                    br.close();
                } finally { c.close(); }
                ev(m("event", "browsed", "queue", q, "bodies", bodies));
                break;
            }
            case "queues": {  // minibroker extension: the names of the broker's queues (not temporary), sorted
                sleep(lng(op, "settle_ms", 150));
                if (control != null) { evAsked(m("op", "queues")); break; }  // minibroker extension
                List<String> names = new ArrayList<>();
                for (ActiveMQDestination d : broker.getBroker().getDestinationMap().keySet())
                    if (d.isQueue() && !d.isTemporary()) names.add(d.getPhysicalName());
                Collections.sort(names);
                ev(m("event", "queues", "names", names));
                break;
            }
            case "note": ev(m("event", "note", "text", str(op, "text", ""))); break;
            case "emit": ev(new LinkedHashMap<>(obj(op, "event"))); break;  // minibroker extension: a verbatim event
            case "dlq_queues": {  // minibroker extension: the existing queues whose names contain DLQ, sorted
                sleep(lng(op, "settle_ms", 150));
                if (control != null) { evAsked(m("op", "dlq_queues")); break; }
                List<String> names = new ArrayList<>();
                for (ActiveMQDestination d : broker.getBroker().getDestinationMap().keySet())
                    if (d.isQueue() && !d.isTemporary() && d.getPhysicalName().contains("DLQ")) names.add(d.getPhysicalName());
                Collections.sort(names);
                ev(m("event", "dlq_queues", "names", names));
                break;
            }
            default: throw new ScriptError("unknown op '" + name + "'");
        }
    }

    @SuppressWarnings("unchecked")
    void sendMsg(Session s, javax.jms.Destination dd, Map<String, Object> op, String body, boolean persistent, int priority, long ttl, String group) throws Exception {
        MessageProducer p = s.createProducer(dd);
        Message tm;
        if (op.containsKey("map")) {
            javax.jms.MapMessage mm = s.createMapMessage();
            for (Map.Entry<String, Object> me : obj(op, "map").entrySet()) {
                Object v = me.getValue();
                Object t = typed(v);
                if (t != null) mm.setObject(me.getKey(), t);
                else if (v instanceof Long) {
                    long l = (Long) v;
                    if (l >= Integer.MIN_VALUE && l <= Integer.MAX_VALUE) mm.setInt(me.getKey(), (int) l); else mm.setLong(me.getKey(), l);
                } else if (v instanceof Double) mm.setDouble(me.getKey(), (Double) v);
                else if (v instanceof Boolean) mm.setBoolean(me.getKey(), (Boolean) v);
                else mm.setString(me.getKey(), String.valueOf(v));
            }
            tm = mm;
        } else if (op.containsKey("stream")) {
            javax.jms.StreamMessage sm = s.createStreamMessage();
            @SuppressWarnings("unchecked") List<Object> vs = (List<Object>) op.get("stream");
            for (Object v : vs) { Object t = typed(v); sm.writeObject(t != null || v == null ? t : v instanceof Long && (Long) v >= Integer.MIN_VALUE && (Long) v <= Integer.MAX_VALUE ? (Object) ((Long) v).intValue() : v); }
            tm = sm;
        } else if (op.containsKey("object")) {
            javax.jms.ObjectMessage om = s.createObjectMessage();
            Object v = op.get("object");
            if (v != null) om.setObject((java.io.Serializable) typed(v));
            tm = om;
        } else tm = s.createTextMessage(body);
        if (group != null) tm.setStringProperty("JMSXGroupID", group);
        if (op.containsKey("delay_ms")) tm.setLongProperty("AMQ_SCHEDULED_DELAY", lng(op, "delay_ms", 0));
        if (op.containsKey("period_ms")) tm.setLongProperty("AMQ_SCHEDULED_PERIOD", lng(op, "period_ms", 0));
        if (op.containsKey("repeat")) tm.setIntProperty("AMQ_SCHEDULED_REPEAT", (int) lng(op, "repeat", 0));
        if (op.containsKey("cron")) tm.setStringProperty("AMQ_SCHEDULED_CRON", req(op, "cron"));
        if (op.containsKey("correlation_id")) tm.setJMSCorrelationID(req(op, "correlation_id"));
        if (op.containsKey("type")) tm.setJMSType(req(op, "type"));  // minibroker extension: JMSType
        if (op.containsKey("reply_to") && !op.get("op").equals("reply")) {
            String rt = req(op, "reply_to");
            javax.jms.Destination rd;
            if (temps.containsKey(rt)) rd = temps.get(rt);
            else if (rt.startsWith("topic://")) rd = s.createTopic(rt.substring(8));
            else if (rt.startsWith("queue://")) rd = s.createQueue(rt.substring(8));
            else rd = s.createQueue(rt);
            tm.setJMSReplyTo(rd);
        }
        Map<String, Object> props = obj(op, "props");
        if (props != null) for (Map.Entry<String, Object> pe : props.entrySet()) {
            Object v = pe.getValue();
            Object t = typed(v);
            if (t != null) tm.setObjectProperty(pe.getKey(), t);
            else if (v instanceof Long) {
                long l = (Long) v;
                if (l >= Integer.MIN_VALUE && l <= Integer.MAX_VALUE) tm.setIntProperty(pe.getKey(), (int) l);
                else tm.setLongProperty(pe.getKey(), l);
            } else if (v instanceof Double) tm.setDoubleProperty(pe.getKey(), (Double) v);
            else if (v instanceof Boolean) tm.setBooleanProperty(pe.getKey(), (Boolean) v);
            else tm.setStringProperty(pe.getKey(), String.valueOf(v));
        }
        try {
            p.send(tm, persistent ? DeliveryMode.PERSISTENT : DeliveryMode.NON_PERSISTENT, priority, ttl);
        } finally { p.close(); }
    }

    /** One dlq event per message: browsed (default, leaves the DLQ untouched) or consumed (consume:true). */
    void dlq(String q, boolean consume) throws JMSException {
        Connection c = new ActiveMQConnectionFactory(url()).createConnection();
        try {
            c.start();
            Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
            List<Message> msgs = new ArrayList<>();
            if (consume) {
                MessageConsumer mc = s.createConsumer(s.createQueue(q));
                Message msg;
                while ((msg = mc.receive(300)) != null) msgs.add(msg);
                mc.close();
            } else {
                QueueBrowser br = s.createBrowser(s.createQueue(q));
                for (Enumeration<?> en = br.getEnumeration(); en.hasMoreElements();) msgs.add((Message) en.nextElement());
                br.close();
            }
            for (Message msg : msgs) {
                ActiveMQMessage am = (ActiveMQMessage) msg;
                Map<String, Object> e = m("event", "dlq", "queue", q, "body", body(msg));
                if (!(msg instanceof TextMessage)) e.put("messageClass", msg.getClass().getSimpleName());
                Object cause = msg.getObjectProperty("dlqDeliveryFailureCause");
                e.put("cause", cause == null ? null : norm(cause.toString()));
                e.put("originalDestination", am.getOriginalDestination() == null ? null : am.getOriginalDestination().getQualifiedName());
                e.put("persistent", msg.getJMSDeliveryMode() == DeliveryMode.PERSISTENT);
                e.put("expiration", msg.getJMSExpiration());
                e.put("redelivered", msg.getJMSRedelivered());
                e.put("redeliveryCounter", am.getRedeliveryCounter());
                e.put("priority", msg.getJMSPriority());
                e.put("properties", props(msg));
                ev(e);
            }
        } finally { c.close(); }
    }

    // ================================================================== script runner
    @SuppressWarnings("unchecked")
    Map<String, Object> run(Map<String, Object> script, String fallbackName) {
        String name = str(script, "name", fallbackName);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("script", name);
        long wall0 = now();
        try {
            startBroker(obj(script, "broker"));
            scriptThread = Thread.currentThread();
            t0 = now();
            List<Object> ops = (List<Object>) script.get("ops");
            if (startError != null) { ev(startError); ops = new ArrayList<>(); }  // minibroker extension: no broker, no ops
            if (ops == null) throw new ScriptError("script has no 'ops'");
            for (Object o : ops) {
                Map<String, Object> op = (Map<String, Object>) o;
                try {
                    currentOp = op;
                    exec(op);
                } catch (Throwable t) {
                    Throwable c = t;
                    currentOp = null;
                    Map<String, Object> e = m("event", "exception");
                    if (op.containsKey("where")) e.put("where", op.get("where"));  // minibroker extension: where
                    else e.put("op", String.valueOf(op.get("op")));
                    e.put("type", c instanceof ScriptError ? "ScriptError" : c.getClass().getName());
                    e.put("message", normB(String.valueOf(c.getMessage())));
                    ev(e);
                } finally { currentOp = null; }
            }
        } catch (Throwable t) {
            out.put("error", t.getClass().getName() + ": " + t.getMessage());
        } finally {
            for (Connection c : open) { try { c.close(); } catch (Throwable ignore) { } }
            if (broker != null) { try { broker.stop(); broker.waitUntilStopped(); } catch (Throwable ignore) { } }
            if (control != null) { try { ask(m("op", "stop")); control.close(); } catch (Throwable ignore) { } }  // minibroker extension
        }
        synchronized (events) { out.put("events", new ArrayList<>(events)); }
        if (out.containsKey("error")) { Object e = out.remove("error"); out.put("error", e); }
        System.err.println("[script] " + name + "  " + (now() - wall0) + " ms");
        return out;
    }

    @SuppressWarnings("unchecked")
    public static void main(String[] args) throws Exception {
        String outDir = System.getProperty("script.out");
        int parallel = 1;
        List<String> files = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--out")) { outDir = args[++i]; continue; }
            if (args[i].equals("--minibroker")) { CONTROL = args[++i]; continue; }  // minibroker extension
            if (args[i].equals("--tcp")) { TCP = true; continue; }  // minibroker extension
            if (args[i].equals("--parallel")) { parallel = Integer.parseInt(args[++i]); continue; }  // minibroker extension
            File f = new File(args[i]);
            if (f.isDirectory()) {
                String[] names = f.list((d, n) -> n.endsWith(".json") && !n.equals("MANIFEST.json"));
                Arrays.sort(names);
                for (String n : names) files.add(new File(f, n).getPath());
            } else files.add(args[i]);
        }
        if (files.isEmpty()) {
            System.err.println("usage: run-script.sh [--out DIR] [--minibroker HOST:PORT [--parallel N]] SCRIPT.json|DIR [...]");
            System.exit(2);
        }
        if (parallel > 1 && CONTROL == null) throw new IllegalArgumentException("--parallel needs --minibroker");
        if (outDir != null) Files.createDirectories(Paths.get(outDir));
        int errors = 0;
        List<Object[]> runs = new ArrayList<>();   // {script, fallback name} in file order
        for (String file : files) {
            List<Object> scripts;
            String base = Paths.get(file).getFileName().toString().replaceAll("\\.json$", "");
            try {
                Object parsed = Parser.parse(new String(Files.readAllBytes(Paths.get(file)), StandardCharsets.UTF_8));
                // minibroker extension: a recording ({"script": ..., "events": ...}) runs its script
                if (parsed instanceof Map && ((Map<String, Object>) parsed).containsKey("events")
                        && ((Map<String, Object>) parsed).get("script") instanceof Map) parsed = ((Map<String, Object>) parsed).get("script");
                scripts = parsed instanceof List ? (List<Object>) parsed : Collections.singletonList(parsed);
            } catch (Throwable t) {
                errors++;
                System.out.println(Json.write(m("script", base, "events", new ArrayList<>(), "error", "parse: " + t.getMessage())));
                continue;
            }
            int k = 0;
            for (Object so : scripts) {
                runs.add(new Object[] {so, scripts.size() == 1 ? base : base + "#" + k});
                k++;
            }
        }
        // minibroker extension: --parallel N runs N scripts at a time (each on a broker of its own), printed in order
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(parallel);
        List<java.util.concurrent.Future<Map<String, Object>>> results = new ArrayList<>();
        for (Object[] r : runs) results.add(pool.submit(() -> new ScriptOracle().run((Map<String, Object>) r[0], (String) r[1])));
        for (java.util.concurrent.Future<Map<String, Object>> fr : results) {
            Map<String, Object> res = fr.get();
            if (res.containsKey("error")) errors++;
            System.out.println(Json.write(res));
            System.out.flush();
            if (outDir != null) {
                Path p = Paths.get(outDir, res.get("script") + ".json");
                Files.write(p, Json.pretty(res).getBytes(StandardCharsets.UTF_8));
            }
        }
        pool.shutdown();
        System.exit(errors == 0 ? 0 : 1);
    }
}

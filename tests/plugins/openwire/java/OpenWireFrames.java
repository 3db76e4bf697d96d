// Marshals OpenWire commands with activemq-client's own OpenWireFormat (version 12, loose encoding, no cache, no
// stack traces: what minibroker's listener negotiates) and prints "<name> <hex of the frame>" per command.
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.activemq.command.*;
import org.apache.activemq.openwire.OpenWireFormat;
import org.apache.activemq.openwire.OpenWireFormatFactory;
import org.apache.activemq.util.ByteSequence;

public class OpenWireFrames {
    static final Map<String, Object> FRAMES = new LinkedHashMap<>();

    static String hex(ByteSequence bytes) {
        StringBuilder b = new StringBuilder();
        for (int i = bytes.offset; i < bytes.offset + bytes.length; i++) b.append(String.format("%02x", bytes.data[i]));
        return b.toString();
    }

    static <T extends BaseCommand> T command(T c, int id, boolean response) {
        c.setCommandId(id);
        c.setResponseRequired(response);
        return c;
    }

    public static void main(String[] args) throws Exception {
        ConnectionId connectionId = new ConnectionId("ID:host-40000-1700000000000-0:1");
        SessionId sessionId = new SessionId(connectionId, 1);
        ConsumerId consumerId = new ConsumerId(sessionId, 2);
        ProducerId producerId = new ProducerId(sessionId, 3);
        ActiveMQQueue queue = new ActiveMQQueue("orders");
        ActiveMQTopic topic = new ActiveMQTopic("prices.eu");
        MessageId messageId = new MessageId(producerId, 17);
        messageId.setBrokerSequenceId(99);
        MessageId firstId = new MessageId(producerId, 15);
        LocalTransactionId txId = new LocalTransactionId(connectionId, 5);

        FRAMES.put("wire_format_info", ((OpenWireFormat) new OpenWireFormatFactory().createWireFormat()).getPreferedWireFormatInfo());

        ConnectionInfo connection = command(new ConnectionInfo(connectionId), 1, true);
        connection.setClientId("client-7");
        connection.setUserName("alice");
        connection.setPassword("s3cret");
        connection.setManageable(true);
        connection.setFaultTolerant(true);
        connection.setClientIp("tcp://127.0.0.1:50000");
        FRAMES.put("connection_info", connection);

        FRAMES.put("session_info", command(new SessionInfo(sessionId), 2, false));

        ConsumerInfo consumer = command(new ConsumerInfo(consumerId), 3, true);
        consumer.setDestination(topic);
        consumer.setPrefetchSize(1000);
        consumer.setSelector("color = 'red' AND weight > 5");
        consumer.setSubscriptionName("audit");
        consumer.setClientId("client-7");
        consumer.setNoLocal(true);
        consumer.setExclusive(true);
        consumer.setPriority((byte) 5);
        consumer.setDispatchAsync(true);
        FRAMES.put("consumer_info", consumer);

        ConsumerInfo browser = command(new ConsumerInfo(new ConsumerId(sessionId, 4)), 4, true);
        browser.setDestination(queue);
        browser.setBrowser(true);
        browser.setPrefetchSize(500);
        FRAMES.put("consumer_info_browser", browser);

        ProducerInfo producer = command(new ProducerInfo(producerId), 5, true);
        producer.setDestination(queue);
        producer.setWindowSize(1024 * 1024);
        FRAMES.put("producer_info", producer);

        TransactionInfo begin = command(new TransactionInfo(connectionId, txId, TransactionInfo.BEGIN), 6, false);
        FRAMES.put("transaction_info_begin", begin);
        FRAMES.put("transaction_info_commit", command(new TransactionInfo(connectionId, txId, TransactionInfo.COMMIT_ONE_PHASE), 7, true));
        XATransactionId xid = new XATransactionId();
        xid.setFormatId(4660);
        xid.setGlobalTransactionId(new byte[] {1, 2, 3});
        xid.setBranchQualifier(new byte[] {9});
        FRAMES.put("transaction_info_xa", command(new TransactionInfo(connectionId, xid, TransactionInfo.PREPARE), 8, true));

        DestinationInfo temp = command(new DestinationInfo(connectionId, DestinationInfo.ADD_OPERATION_TYPE,
                new ActiveMQTempQueue("ID:host-40000-1700000000000-0:1:1")), 9, true);
        FRAMES.put("destination_info", temp);

        RemoveInfo remove = command(new RemoveInfo(consumerId), 10, true);
        remove.setLastDeliveredSequenceId(42);
        FRAMES.put("remove_info", remove);

        RemoveSubscriptionInfo unsubscribe = command(new RemoveSubscriptionInfo(), 11, true);
        unsubscribe.setConnectionId(connectionId);
        unsubscribe.setClientId("client-7");
        unsubscribe.setSubscriptionName("audit");
        FRAMES.put("remove_subscription_info", unsubscribe);

        MessageAck ack = command(new MessageAck(), 12, false);
        ack.setDestination(queue);
        ack.setConsumerId(consumerId);
        ack.setAckType(MessageAck.POISON_ACK_TYPE);
        ack.setFirstMessageId(firstId);
        ack.setLastMessageId(messageId);
        ack.setMessageCount(3);
        ack.setTransactionId(txId);
        ack.setPoisonCause(new Throwable("Delivery[7] exceeds redelivery policy limit"));
        FRAMES.put("message_ack", ack);

        MessagePull pull = command(new MessagePull(), 13, false);
        pull.setConsumerId(consumerId);
        pull.setDestination(queue);
        pull.setTimeout(-1);
        FRAMES.put("message_pull", pull);

        FRAMES.put("keep_alive_info", command(new KeepAliveInfo(), 14, false));
        FRAMES.put("shutdown_info", command(new ShutdownInfo(), 15, false));
        FRAMES.put("flush_command", command(new FlushCommand(), 16, false));

        Response response = command(new Response(), 0, false);
        response.setCorrelationId(3);
        FRAMES.put("response", response);
        ExceptionResponse failure = command(new ExceptionResponse(new javax.jms.InvalidSelectorException("bad selector")), 0, false);
        failure.setCorrelationId(4);
        FRAMES.put("exception_response", failure);
        IntegerResponse integer = command(new IntegerResponse(7), 0, false);
        integer.setCorrelationId(5);
        FRAMES.put("integer_response", integer);
        DataArrayResponse array = command(new DataArrayResponse(new DataStructure[] {txId, null}), 0, false);
        array.setCorrelationId(6);
        FRAMES.put("data_array_response", array);

        ActiveMQTextMessage text = new ActiveMQTextMessage();
        text.setCommandId(20);
        text.setResponseRequired(true);
        text.setMessageId(messageId);
        text.setProducerId(producerId);
        text.setDestination(queue);
        text.setText("héllo, wörld \u0000 \uD83D\uDE00");
        text.setPersistent(true);
        text.setPriority((byte) 7);
        text.setTimestamp(1700000000123L);
        text.setExpiration(1700000060123L);
        text.setCorrelationId("corr-1");
        text.setType("order");
        text.setGroupID("group-A");
        text.setGroupSequence(2);
        text.setJMSReplyTo(new ActiveMQTempQueue("ID:host-40000-1700000000000-0:1:1"));
        text.setBooleanProperty("flag", true);
        text.setByteProperty("b", (byte) -3);
        text.setShortProperty("s", (short) 300);
        text.setIntProperty("i", -70000);
        text.setLongProperty("l", 1L << 40);
        text.setFloatProperty("f", 1.5f);
        text.setDoubleProperty("d", -2.25);
        text.setStringProperty("str", "ünïcode");
        FRAMES.put("text_message", text);

        ActiveMQMapMessage map = new ActiveMQMapMessage();
        map.setCommandId(21);
        map.setMessageId(new MessageId(producerId, 18));
        map.setProducerId(producerId);
        map.setDestination(topic);
        map.setTransactionId(txId);
        map.setString("name", "widget");
        map.setInt("qty", 3);
        map.setDouble("price", 9.5);
        map.setBoolean("ok", true);
        map.setChar("grade", 'A');
        map.setBytes("raw", new byte[] {0, 1, 2, (byte) 255});
        map.setLong("id", -1L);
        map.setShort("sh", (short) -2);
        map.setByte("by", (byte) 127);
        map.setFloat("fl", 0.1f);
        map.setString("nothing", null);
        FRAMES.put("map_message", map);

        ActiveMQBytesMessage bytes = new ActiveMQBytesMessage();
        bytes.setCommandId(22);
        bytes.setMessageId(new MessageId(producerId, 19));
        bytes.setProducerId(producerId);
        bytes.setDestination(queue);
        bytes.writeBytes(new byte[] {10, 20, 30, 40, 50});
        bytes.reset(); // stores the body, as a send does
        FRAMES.put("bytes_message", bytes);

        ActiveMQStreamMessage stream = new ActiveMQStreamMessage();
        stream.setCommandId(23);
        stream.setMessageId(new MessageId(producerId, 20));
        stream.setProducerId(producerId);
        stream.setDestination(queue);
        stream.writeString("first");
        stream.writeInt(2);
        stream.writeBoolean(false);
        stream.writeDouble(3.5);
        stream.writeBytes(new byte[] {7, 8});
        stream.writeObject(null);
        stream.writeLong(4L);
        stream.reset();
        FRAMES.put("stream_message", stream);

        ActiveMQObjectMessage object = new ActiveMQObjectMessage();
        object.setCommandId(24);
        object.setMessageId(new MessageId(producerId, 21));
        object.setProducerId(producerId);
        object.setDestination(queue);
        object.setObject("a serialized string");
        FRAMES.put("object_message", object);

        ActiveMQTextMessage dispatched = new ActiveMQTextMessage();
        dispatched.setMessageId(messageId);
        dispatched.setProducerId(producerId);
        dispatched.setDestination(queue);
        dispatched.setText("for you");
        dispatched.setRedeliveryCounter(2);
        dispatched.setTimestamp(1700000000123L);
        dispatched.setBrokerInTime(1700000000124L);
        dispatched.setBrokerOutTime(1700000000125L);
        MessageDispatch dispatch = command(new MessageDispatch(), 0, false);
        dispatch.setConsumerId(consumerId);
        dispatch.setDestination(queue);
        dispatch.setMessage(dispatched);
        dispatch.setRedeliveryCounter(2);
        FRAMES.put("message_dispatch", dispatch);
        MessageDispatch end = command(new MessageDispatch(), 0, false);
        end.setConsumerId(consumerId);
        end.setDestination(queue);
        FRAMES.put("message_dispatch_end", end);

        BrokerInfo broker = command(new BrokerInfo(), 0, false);
        broker.setBrokerId(new BrokerId("ID:broker-1"));
        broker.setBrokerName("localhost");
        broker.setBrokerURL("tcp://localhost:61616");
        broker.setPeerBrokerInfos(new BrokerInfo[0]);
        FRAMES.put("broker_info", broker);

        ConnectionControl control = command(new ConnectionControl(), 0, false);
        control.setFaultTolerant(true);
        control.setReconnectTo("tcp://other:61616");
        control.setToken(new byte[] {5});
        FRAMES.put("connection_control", control);
        ConsumerControl consumerControl = command(new ConsumerControl(), 0, false);
        consumerControl.setConsumerId(consumerId);
        consumerControl.setDestination(queue);
        consumerControl.setPrefetch(10);
        consumerControl.setStart(true);
        FRAMES.put("consumer_control", consumerControl);
        ProducerAck producerAck = command(new ProducerAck(producerId, 1500), 0, false);
        FRAMES.put("producer_ack", producerAck);
        ConnectionError error = command(new ConnectionError(), 0, false);
        error.setConnectionId(connectionId);
        error.setException(new javax.jms.JMSException("gone"));
        FRAMES.put("connection_error", error);
        FRAMES.put("control_command", command(new ControlCommand(), 30, true));
        ((ControlCommand) FRAMES.get("control_command")).setCommand("shutdown");
        MessageDispatchNotification note = command(new MessageDispatchNotification(), 31, false);
        note.setConsumerId(consumerId);
        note.setDestination(queue);
        note.setDeliverySequenceId(8);
        note.setMessageId(messageId);
        FRAMES.put("message_dispatch_notification", note);

        OpenWireFormat format = new OpenWireFormat(12);
        format.setTightEncodingEnabled(false);
        format.setCacheEnabled(false);
        format.setStackTraceEnabled(false);
        format.setSizePrefixDisabled(false);
        for (Map.Entry<String, Object> e : FRAMES.entrySet()) {
            System.out.println(e.getKey() + " " + hex(format.marshal(e.getValue())));
        }
    }
}

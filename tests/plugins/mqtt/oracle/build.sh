#!/bin/sh
# Compile the MQTT oracle (MqttOracle.java, with the scripted oracle's JSON reader and writer) into $MQTT_ORACLE_BUILD.
# Needs Java 17 and Debian's activemq, libactivemq-java and libmqtt-client-java.
set -eu
HERE="$(cd "$(dirname "$0")" && pwd)"
B=${MQTT_ORACLE_BUILD:-${XDG_CACHE_HOME:-$HOME/.cache}/minibroker-mqtt-oracle}
J=/usr/share/java
CP="$J/activemq-broker.jar:$J/activemq-client.jar:$J/activemq-mqtt.jar:$J/mqtt-client.jar:$J/hawtdispatch.jar:$J/hawtdispatch-transport.jar:$J/geronimo-jms_1.1_spec.jar:$J/geronimo-j2ee-management-1.1-spec.jar:$J/hawtbuf.jar:$J/slf4j-api.jar"
rm -rf "$B" && mkdir -p "$B"
javac -Xlint:none -nowarn -d "$B" -cp "$CP" "$HERE/MqttOracle.java" "$HERE/../../../differential/oracle/ScriptOracle.java" "$HERE/../../../differential/oracle/Json.java"
echo "$B:$CP:$J/slf4j-nop.jar"

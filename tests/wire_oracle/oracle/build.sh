#!/bin/sh
# Compile WireOracle.java into $WIRE_ORACLE_BUILD and print the class path to run it with. Needs Java 17 and Debian's
# activemq, libactivemq-java, libxstream-java, libxpp3-java, libjettison-java, libmqtt-client-java, libhawtdispatch-java
# (xstream, xpp3 and jettison: ActiveMQ's advisory messages over STOMP are converted with them).
set -eu
HERE="$(cd "$(dirname "$0")" && pwd)"
B=${WIRE_ORACLE_BUILD:-${XDG_CACHE_HOME:-$HOME/.cache}/minibroker-wire-oracle}
J=/usr/share/java
CP="$J/activemq-broker.jar:$J/activemq-client.jar:$J/activemq-stomp.jar:$J/activemq-mqtt.jar:$J/mqtt-client.jar"
CP="$CP:$J/hawtdispatch.jar:$J/hawtdispatch-transport.jar:$J/hawtbuf.jar:$J/xstream.jar:$J/jettison.jar:$J/xpp3.jar"
CP="$CP:$J/geronimo-jms_1.1_spec.jar:$J/geronimo-j2ee-management-1.1-spec.jar:$J/slf4j-api.jar"
rm -rf "$B" && mkdir -p "$B"
javac -Xlint:none -nowarn -d "$B" -cp "$CP" "$HERE/WireOracle.java"
echo "$B:$CP:$J/slf4j-nop.jar"

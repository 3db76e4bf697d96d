#!/bin/sh
# Compile the OpenWire test programs (the real JMS client's driver and the frame capture) into $OPENWIRE_JAVA_BUILD;
# print the classpath to run them with. Needs Java 17 and Debian's libactivemq-java (activemq-client 5.17.2).
set -eu
HERE="$(cd "$(dirname "$0")" && pwd)"
B=${OPENWIRE_JAVA_BUILD:-${XDG_CACHE_HOME:-$HOME/.cache}/minibroker-openwire-java}
J=/usr/share/java
CP="$J/activemq-broker.jar:$J/activemq-client.jar:$J/geronimo-jms_1.1_spec.jar:$J/geronimo-j2ee-management-1.1-spec.jar:$J/hawtbuf.jar:$J/slf4j-api.jar"
rm -rf "$B" && mkdir -p "$B"
javac -Xlint:none -nowarn -d "$B" -cp "$CP" "$HERE"/*.java
echo "$B:$CP:$J/slf4j-nop.jar"

#!/bin/sh
# Compile the STOMP oracle (StompOracle.java, with the scripted oracle's JSON code) into $STOMP_ORACLE_BUILD and print
# the class path to run it with. Needs Java 17 and Debian's activemq, libactivemq-java and libxstream-java.
set -eu
HERE="$(cd "$(dirname "$0")" && pwd)"
B=${STOMP_ORACLE_BUILD:-${XDG_CACHE_HOME:-$HOME/.cache}/minibroker-stomp-oracle}
J=/usr/share/java
CP="$J/activemq-broker.jar:$J/activemq-client.jar:$J/activemq-stomp.jar:$J/xstream.jar:$J/jettison.jar:$J/xpp3.jar:$J/xmlpull.jar:$J/geronimo-jms_1.1_spec.jar:$J/geronimo-j2ee-management-1.1-spec.jar:$J/hawtbuf.jar:$J/slf4j-api.jar"
rm -rf "$B" && mkdir -p "$B"
javac -Xlint:none -nowarn -d "$B" -cp "$CP" "$HERE/StompOracle.java" "$HERE/../../../differential/oracle/ScriptOracle.java" "$HERE/../../../differential/oracle/Json.java"
echo "$B:$CP:$J/slf4j-nop.jar"

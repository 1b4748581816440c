#!/bin/bash
# The two commands of ZooKeeper's zkServer.sh that the official image and docker-compose.yml use: Debian's own
# script comes with the `zookeeper` package, which pulls a desktop JRE (libzookeeper-java is the server alone).
# ZooKeeper logs through SLF4J: the Log4j 1.2 binding sends its log to the console (log4j.properties).
CLASSPATH=/conf:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar
case "$1" in
    start-foreground)
        exec java $JVMFLAGS -cp "$CLASSPATH" org.apache.zookeeper.server.quorum.QuorumPeerMain /conf/zoo.cfg ;;
    status)
        # As zkServer.sh status: the four-letter word srvr answers with the server's mode once it serves.
        port=$(sed -n 's/^clientPort=//p' /conf/zoo.cfg)
        exec 3<>"/dev/tcp/127.0.0.1/${port:-2181}" || exit 1
        printf srvr >&3
        mode=$(timeout 5 grep -m1 '^Mode: ' <&3) || { echo "Error contacting service. It is probably not running."; exit 1; }
        echo "$mode" ;;
    *)
        echo "usage: zkServer.sh start-foreground|status" >&2
        exit 2 ;;
esac

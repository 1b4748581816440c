#!/bin/sh
# The official zookeeper image's entry point, as far as docker-compose.yml uses it: on first start, zoo.cfg
# from the ZOO_* variables (the same names and defaults), then the command (zkServer.sh start-foreground).
set -e
if [ ! -f /conf/zoo.cfg ]; then
    mkdir -p /data /datalog
    cat > /conf/zoo.cfg <<CFG
dataDir=/data
dataLogDir=/datalog
clientPort=2181
tickTime=${ZOO_TICK_TIME:-2000}
initLimit=${ZOO_INIT_LIMIT:-5}
syncLimit=${ZOO_SYNC_LIMIT:-2}
maxClientCnxns=${ZOO_MAX_CLIENT_CNXNS:-60}
standaloneEnabled=${ZOO_STANDALONE_ENABLED:-true}
4lw.commands.whitelist=${ZOO_4LW_COMMANDS_WHITELIST:-srvr}
autopurge.snapRetainCount=${ZOO_AUTOPURGE_SNAPRETAINCOUNT:-3}
autopurge.purgeInterval=${ZOO_AUTOPURGE_PURGEINTERVAL:-0}
CFG
    # Debian's zookeeper package has no Jetty: its AdminServer cannot start (the official image's can).
    echo "admin.enableServer=false" >> /conf/zoo.cfg
    [ -f /data/myid ] || echo "${ZOO_MY_ID:-1}" > /data/myid
fi
exec "$@"

#!/bin/sh
# One KRaft node (broker and controller) of a StatefulSet: node id from the pod's ordinal, static
# controller quorum of all replicas, storage formatted once. Settings beyond these (TLS, SASL,
# retention, ...) come from files in /etc/kafka/extra/*.properties, appended in name order.
set -eu
: "${KAFKA_CLUSTER_ID:?set KAFKA_CLUSTER_ID (22 characters of base64url, the same for every node)}"
: "${KAFKA_REPLICAS:?set KAFKA_REPLICAS (the StatefulSet's replica count)}"
: "${KAFKA_HEADLESS:?set KAFKA_HEADLESS (the headless Service: <name>.<namespace>.svc.<domain>)}"
POD=${POD_NAME:-$(hostname)}
ID=${POD##*-}
case $ID in ''|*[!0-9]*) echo "kafka-start: pod name $POD does not end in an ordinal" >&2; exit 2 ;; esac
STS=${POD%-*}
DATA=${KAFKA_DATA_DIR:-/var/lib/kafka/data}
CONF=/tmp/kafka/server.properties
mkdir -p /tmp/kafka "$DATA"
voters=""
i=0
while [ "$i" -lt "$KAFKA_REPLICAS" ]; do
  voters="$voters${voters:+,}$i@$STS-$i.$KAFKA_HEADLESS:9093"
  i=$((i + 1))
done
cat >"$CONF" <<PROPS
process.roles=broker,controller
node.id=$ID
controller.quorum.voters=$voters
controller.listener.names=CONTROLLER
listeners=${KAFKA_LISTENERS:-CLIENT://:9092,CONTROLLER://:9093}
advertised.listeners=${KAFKA_ADVERTISED_LISTENERS:-CLIENT://$POD.$KAFKA_HEADLESS:9092}
listener.security.protocol.map=${KAFKA_PROTOCOL_MAP:-CLIENT:PLAINTEXT,CONTROLLER:PLAINTEXT}
inter.broker.listener.name=${KAFKA_INTER_BROKER_LISTENER:-CLIENT}
log.dirs=$DATA
PROPS
for f in /etc/kafka/extra/*.properties; do [ -f "$f" ] && cat "$f" >>"$CONF"; done
CP="/opt/kafka/lib/*"
JAVA="java ${KAFKA_HEAP_OPTS:--Xmx512m -Xms512m} -XX:+UseG1GC -XX:+ExitOnOutOfMemoryError -Dlog4j2.configurationFile=/opt/kafka/config/log4j2.yaml"
if [ ! -f "$DATA/meta.properties" ]; then
  $JAVA -cp "$CP" kafka.tools.StorageTool format --cluster-id "$KAFKA_CLUSTER_ID" --config "$CONF" --ignore-formatted
fi
exec $JAVA -cp "$CP" kafka.Kafka "$CONF"

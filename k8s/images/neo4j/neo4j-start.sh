#!/bin/sh
# Neo4j 5 Community from its Maven artefacts, configured like the official image: every
# NEO4J_<setting> variable becomes a line of neo4j.conf (_ -> ., __ -> _), NEO4J_AUTH=neo4j/<password>
# sets the initial password on the first start (NEO4J_AUTH=none turns authentication off).
set -eu
HOME_DIR=/var/lib/neo4j
# The admin tool and the server read these.
export NEO4J_HOME=$HOME_DIR NEO4J_CONF=/tmp/neo4j-conf
CONF_DIR=/tmp/neo4j-conf
mkdir -p "$CONF_DIR" /data/dbms /logs
{
  echo "server.directories.data=/data"
  echo "server.directories.logs=/logs"
  echo "server.directories.import=${NEO4J_server_directories_import:-/import}"
  echo "server.default_listen_address=0.0.0.0"
  env | grep '^NEO4J_' | grep -v -E '^NEO4J_(AUTH|HOME|CONF|server_directories_import)=' | while IFS='=' read -r k v; do
    k=${k#NEO4J_}
    # __ is a literal underscore, _ a dot (the official image's convention).
    printf '%s=%s\n' "$(printf '%s' "$k" | sed -e 's/__/\x01/g' -e 's/_/./g' -e 's/\x01/_/g')" "$v"
  done
} >"$CONF_DIR/neo4j.conf"
CP="/opt/neo4j/lib/*"
case "${NEO4J_AUTH:-}" in
  none) echo "dbms.security.auth_enabled=false" >>"$CONF_DIR/neo4j.conf" ;;
  neo4j/*)
    if [ ! -f /data/dbms/auth.ini ] && [ ! -d /data/databases/system ]; then
      java -cp "$CP" org.neo4j.cli.AdminTool dbms set-initial-password "${NEO4J_AUTH#neo4j/}" >/dev/null
    fi ;;
  *) echo "neo4j-start: set NEO4J_AUTH to neo4j/<password> or none" >&2; exit 2 ;;
esac
unset NEO4J_AUTH
# The heap settings are the server's launcher's to apply; this starts the server's JVM directly.
exec java -Xms"${NEO4J_server_memory_heap_initial__size:-512m}" -Xmx"${NEO4J_server_memory_heap_max__size:-512m}" \
  ${NEO4J_server_jvm_additional:-} -XX:+ExitOnOutOfMemoryError -cp "$CP" org.neo4j.server.CommunityEntryPoint \
  --home-dir="$HOME_DIR" --config-dir="$CONF_DIR"

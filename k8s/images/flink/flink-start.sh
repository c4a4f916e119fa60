#!/bin/sh
# Flink 2.2 processes from Maven artefacts, in place of the distribution's scripts (flink-dist is not
# published on Maven Central):
#   flink-start.sh jobmanager [--job-classname CLASS] [JOB ARGS...]   the application's JobManager
#   flink-start.sh taskmanager                                         a TaskManager
# JVM memory flags come from the configuration (config.yaml in $FLINK_CONF_DIR) through Flink's own
# BashJavaUtils, as the distribution's scripts do.
set -eu
CONF=${FLINK_CONF_DIR:-/opt/flink/conf}
CP="/opt/flink/lib/*:/opt/flink/usrlib/*"
LOG="-Dlog4j.configurationFile=file:$CONF/log4j-console.properties -Dlog.file=/tmp/flink.log"
# Flink's JVM options for Java 17 (module opens its serializers need), from the distribution's config.
OPENS="--add-exports=java.base/sun.net.util=ALL-UNNAMED --add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED
--add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.net=ALL-UNNAMED
--add-opens=java.base/java.io=ALL-UNNAMED --add-opens=java.base/java.nio=ALL-UNNAMED
--add-opens=java.base/sun.nio.ch=ALL-UNNAMED --add-opens=java.base/java.lang.reflect=ALL-UNNAMED
--add-opens=java.base/java.text=ALL-UNNAMED --add-opens=java.base/java.time=ALL-UNNAMED
--add-opens=java.base/java.util=ALL-UNNAMED --add-opens=java.base/java.util.concurrent=ALL-UNNAMED
--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED --add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED"
# DYNAMIC: -D key=value pairs appended to the process's arguments (the pod's own address for HA).
DYNAMIC=""
[ -n "${POD_IP:-}" ] && DYNAMIC="-D jobmanager.rpc.address=$POD_IP"
result() { # the last BASH_JAVA_UTILS_EXEC_RESULT lines of BashJavaUtils
  java -cp "$CP" org.apache.flink.runtime.util.bash.BashJavaUtils "$@" --configDir "$CONF" 2>/dev/null \
    | sed -n 's/^BASH_JAVA_UTILS_EXEC_RESULT://p'
}
role=${1:-}
[ $# -gt 0 ] && shift
case $role in
  jobmanager)
    jvm=$(result GET_JM_RESOURCE_PARAMS | head -n 1)
    # shellcheck disable=SC2086
    exec java $jvm $OPENS $LOG ${FLINK_JVM_OPTS:-} -cp "$CP" \
      org.apache.flink.container.entrypoint.StandaloneApplicationClusterEntryPoint --configDir "$CONF" $DYNAMIC "$@" ;;
  taskmanager)
    out=$(result GET_TM_RESOURCE_PARAMS)
    jvm=$(echo "$out" | sed -n 1p)
    dyn=$(echo "$out" | sed -n 2p)
    [ -n "${POD_IP:-}" ] && dyn="$dyn -D taskmanager.host=$POD_IP"
    # shellcheck disable=SC2086
    exec java $jvm $OPENS $LOG ${FLINK_JVM_OPTS:-} -cp "$CP" \
      org.apache.flink.runtime.taskexecutor.TaskManagerRunner --configDir "$CONF" $dyn "$@" ;;
  *) echo "usage: flink-start.sh jobmanager|taskmanager [ARGS...]" >&2; exit 2 ;;
esac

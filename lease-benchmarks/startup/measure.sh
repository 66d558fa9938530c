#!/bin/bash
# The agent's start-up cost (docs/benchmarks.md, "Start-up cost after issue 37"): JVM uptime and
# loaded classes when the first query has returned, without the agent and with each agent jar given,
# interleaved, N runs each (default 7), on PostgreSQL and MariaDB (the CI databases), for a plain
# DriverManager application and a HikariCP one. Needs the drivers, HikariCP and slf4j-api in ~/.m2
# (a build of this project puts them there).
#   lease-benchmarks/startup/measure.sh lease-agent/target/lease-agent.jar [OTHER-AGENT.jar ...]
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 AGENT.jar [AGENT.jar ...]" >&2; exit 2; }
AGENTS=("$@")
N=${N:-7}
M=~/.m2/repository
PG=$M/org/postgresql/postgresql/42.7.14/postgresql-42.7.14.jar
MD=$M/org/mariadb/jdbc/mariadb-java-client/3.5.8/mariadb-java-client-3.5.8.jar
HK=$M/com/zaxxer/HikariCP/7.1.0/HikariCP-7.1.0.jar
SL=$M/org/slf4j/slf4j-api/2.0.20/slf4j-api-2.0.20.jar
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
javac -cp "$HK" -d "$WORK" "$(dirname "$0")"/*.java
for db in postgresql mariadb; do
  if [ $db = postgresql ]; then URL="jdbc:postgresql://127.0.0.1:5432/test?user=postgres"; DRV=$PG
  else URL="jdbc:mariadb://127.0.0.1:3306/test?user=root&password="; DRV=$MD; fi
  printf 'mode=leader\nlease=startup-leader\nurl=%s\ntable=startup_leases\ncreate-table=true\nlease-duration=15s\n' "$URL" > "$WORK/agent-$db.properties"
  for app in FirstQuery HikariFirstQuery; do
    CP=$WORK:$DRV:$HK:$SL
    : > "$WORK/none.txt"
    for k in "${!AGENTS[@]}"; do : > "$WORK/agent$k.txt"; done
    for i in $(seq "$N"); do
      java -cp "$CP" $app "$URL" 2>/dev/null | grep uptime >> "$WORK/none.txt"
      for k in "${!AGENTS[@]}"; do
        java -javaagent:"${AGENTS[$k]}"=config="$WORK/agent-$db.properties" -cp "$CP" $app "$URL" 2>/dev/null \
          | grep uptime >> "$WORK/agent$k.txt"
      done
    done
    for f in none $(for k in "${!AGENTS[@]}"; do echo agent$k; done); do
      label=$f; [ $f = none ] && label="without the agent" || label="${AGENTS[${f#agent}]}"
      med() { awk "{print \$$1}" "$WORK/$f.txt" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
      echo "$db $app, $label: median $(med 2) ms, $(med 5) classes (runs: $(awk '{print $2}' "$WORK/$f.txt" | tr '\n' ' '))"
    done
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

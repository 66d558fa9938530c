#!/bin/bash
# STRICT's lock on PostgreSQL, FOR KEY SHARE (what ships) beside a transaction-scoped shared
# advisory lock (the design issue 36 asked to evaluate), at the SQL level with pgbench, so that only
# the lock differs (docs/benchmarks.md, "STRICT's lock on PostgreSQL"): throughput, server CPU per
# transaction (the postmaster's reaped children, so the benchmark's backends), WAL bytes per
# transaction and MultiXacts made (the counter is read after a CHECKPOINT). Each transaction
# updates one random row of 10,000; raw has no verify, fks.sql the verify with FOR KEY SHARE,
# adv.sql the advisory lock in a statement of its own and then the read (the only shape that holds
# even in READ COMMITTED: StrictLockChoiceTest). Runs on the CI's PostgreSQL as user postgres.
#   lease-benchmarks/strict-lock/measure.sh [CLIENTS...]   (default: 1 8)
set -euo pipefail
cd "$(dirname "$0")"
PSQL=(psql -q -At -h 127.0.0.1 -U postgres -d test)
PM=$("${PSQL[@]}" -c "SELECT pg_backend_pid()" >/dev/null; head -1 "$("${PSQL[@]}" -c "SHOW data_directory")/postmaster.pid")
"${PSQL[@]}" <<'SQL'
DROP TABLE IF EXISTS adv_leases, adv_rows;
CREATE TABLE adv_leases (name text PRIMARY KEY, holder text NOT NULL, term bigint NOT NULL, expires_at_ms bigint NOT NULL);
INSERT INTO adv_leases VALUES ('cost', 'h1', 42, 99999999999999);
CREATE TABLE adv_rows (id int PRIMARY KEY, v bigint NOT NULL);
INSERT INTO adv_rows SELECT g, 0 FROM generate_series(0, 9999) g;
SQL
cpu() { awk '{print $16 + $17}' "/proc/$PM/stat"; } # ticks of 10 ms
q() { "${PSQL[@]}" -c "$1"; }
# until pgbench's backends have exited (and the postmaster has counted their CPU)
gone() { until [ "$(q "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pgbench'")" = 0 ]; do :; done; }
echo "| clients | variant | tx/s | server CPU µs/tx | WAL B/tx | MultiXacts/tx |"
echo "|---|---|---|---|---|---|"
[ $# -gt 0 ] || set -- 1 8
for c in "$@"; do
  for round in 1 2 3; do
    for s in raw fks adv; do
      per=$((16000 / c)); tx=$((c * per))
      q "CHECKPOINT"
      # touch every page once after the checkpoint, so its full-page images are not counted
      pgbench -h 127.0.0.1 -U postgres -n -M prepared -f $s.sql -c "$c" -j "$c" -t 300 test >/dev/null 2>&1
      gone
      lsn0=$(q "SELECT pg_current_wal_lsn()"); mx0=$(q "SELECT next_multixact_id FROM pg_control_checkpoint()"); c0=$(cpu)
      tps=$(pgbench -h 127.0.0.1 -U postgres -n -M prepared -f $s.sql -c "$c" -j "$c" -t "$per" test 2>&1 | awk '/^tps/ {printf "%.0f", $3}')
      gone
      c1=$(cpu); lsn1=$(q "SELECT pg_current_wal_lsn()")
      q "CHECKPOINT"; mx1=$(q "SELECT next_multixact_id FROM pg_control_checkpoint()")
      wal=$(q "SELECT (pg_wal_lsn_diff('$lsn1', '$lsn0') / $tx)::int")
      echo "| $c | $s | $tps | $(( (c1 - c0) * 10000 / tx )) | $wal | $(awk "BEGIN {printf \"%.2f\", ($mx1 - $mx0) / $tx}") |"
    done
  done
done
q "DROP TABLE adv_leases, adv_rows"

package dev.lease.benchmarks;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What the STRICT verify's text costs MariaDB's server, beside cheaper texts (issue 36): one
 * connection, autocommit off, each variant run as {@code <verify>; UPDATE one row; COMMIT} in
 * alternating blocks; the figure is the median of the blocks' {@code mariadbd} CPU (the whole
 * process, from {@code /proc/<pid>/stat}, in 10 ms ticks) per transaction, minus the raw {@code
 * UPDATE; COMMIT}. The variants strip the verify one feature at a time: the session bounds read
 * along, the server-side refusal ({@code CASE}/{@code COUNT(*)}), the partition reference, the
 * server clock; and a server-prepared text ({@code useServerPrepStmts=true}).
 *
 * <pre>
 * java -cp lease-benchmarks/target/benchmarks.jar dev.lease.benchmarks.MySqlVerifyText [--blocks 9] [--tx 2000]
 * </pre>
 */
public final class MySqlVerifyText {

  private static final String URL = "jdbc:mariadb://127.0.0.1:3306/test?user=root&password=";
  private static final String T = "`test`.`vt_leases` PARTITION (p0)";
  private static final String CLOCK =
      "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)";
  private static final String WHERE =
      " WHERE name = ? AND holder = ? AND term = ? AND expires_at_ms > "
          + CLOCK
          + " LIMIT 1 LOCK IN SHARE MODE";
  private static final String REFUSAL =
      "SELECT CASE WHEN COUNT(*) = 1 THEN MAX(term) ELSE COUNT(*) + 9223372036854775807"
          + " + LENGTH('LF001 lease not held 0123456789abcdefghi') END AS term";
  private static final String BOUNDS =
      ", @@session.innodb_lock_wait_timeout, @@session.idle_transaction_timeout";

  private MySqlVerifyText() {}

  public static void main(String[] args) throws Exception {
    int blocks = 9;
    int tx = 2000;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--blocks" -> blocks = Integer.parseInt(args[++i]);
        case "--tx" -> tx = Integer.parseInt(args[++i]);
        default -> throw new IllegalArgumentException("unknown option " + args[i]);
      }
    }
    Map<String, String> variants = new LinkedHashMap<>();
    variants.put("raw (no verify)", null);
    variants.put("the STRICT verify (as shipped)", REFUSAL + BOUNDS + " FROM " + T + WHERE);
    variants.put("without the session bounds", REFUSAL + " FROM " + T + WHERE);
    variants.put(
        "without the refusal (client-checked)", "SELECT term" + BOUNDS + " FROM " + T + WHERE);
    variants.put(
        "without the partition reference", REFUSAL + BOUNDS + " FROM `test`.`vt_leases`" + WHERE);
    variants.put(
        "plain locking read (none of the above)",
        "SELECT term FROM `test`.`vt_leases` WHERE name = ? AND holder = ? AND term = ? LIMIT 1"
            + " LOCK IN SHARE MODE");
    variants.put(
        "primary-key read, no lock",
        "SELECT term FROM `test`.`vt_leases` WHERE name = ? AND holder = ? AND term = ? LIMIT 1");
    Map<String, List<Double>> perTx = new LinkedHashMap<>();
    Map<String, List<Double>> prepared = new LinkedHashMap<>();
    try (Connection c = DriverManager.getConnection(URL);
        Connection sp = DriverManager.getConnection(URL + "&useServerPrepStmts=true")) {
      long pid = setUp(c);
      for (Connection conn : List.of(c, sp)) {
        conn.setAutoCommit(false);
      }
      for (int b = 0; b <= blocks; b++) {
        for (Map.Entry<String, String> v : variants.entrySet()) {
          for (Connection conn : List.of(c, sp)) {
            double cpu = block(conn, v.getValue(), tx, pid);
            if (b > 0) { // the first block warms up
              (conn == c ? perTx : prepared)
                  .computeIfAbsent(v.getKey(), k -> new ArrayList<>())
                  .add(cpu);
            }
          }
        }
      }
      try (Statement s = c.createStatement()) {
        s.execute("DROP TABLE vt_leases, vt_rows");
      }
    }
    double raw = median(perTx.get("raw (no verify)"));
    double rawPrepared = median(prepared.get("raw (no verify)"));
    System.out.println(
        "| verify text | server CPU µs/tx added (client-prepared) | added (server-prepared) |");
    System.out.println("|---|---|---|");
    for (String k : variants.keySet()) {
      System.out.printf(
          Locale.ROOT,
          "| %s | %+.0f | %+.0f |%n",
          k,
          median(perTx.get(k)) - raw,
          median(prepared.get(k)) - rawPrepared);
    }
    System.out.printf(
        Locale.ROOT,
        "raw UPDATE + COMMIT: %.0f µs/tx client-prepared, %.0f server-prepared (%d blocks of %d)%n",
        raw,
        rawPrepared,
        blocks,
        tx);
  }

  private static long setUp(Connection c) throws Exception {
    try (Statement s = c.createStatement()) {
      s.execute("DROP TABLE IF EXISTS vt_leases, vt_rows");
      s.execute(
          "CREATE TABLE vt_leases (name varchar(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
              + " NOT NULL PRIMARY KEY, holder varchar(64) CHARACTER SET ascii NOT NULL, term"
              + " bigint NOT NULL, expires_at_ms bigint NOT NULL) ENGINE=InnoDB PARTITION BY KEY"
              + " (name) PARTITIONS 1");
      s.execute("INSERT INTO vt_leases VALUES ('cost', 'h1', 42, 99999999999999)");
      s.execute("CREATE TABLE vt_rows (id int PRIMARY KEY, v bigint NOT NULL)");
      s.execute("INSERT INTO vt_rows SELECT seq, 0 FROM seq_0_to_999");
      try (ResultSet rs = s.executeQuery("SELECT @@pid_file")) {
        rs.next();
        return Long.parseLong(Files.readString(Path.of(rs.getString(1))).trim());
      }
    }
  }

  /** Server CPU µs per transaction over one block of {@code tx}. */
  private static double block(Connection c, String verify, int tx, long pid) throws Exception {
    long before = cpuTicks(pid);
    for (int i = 0; i < tx; i++) {
      if (verify != null) {
        try (PreparedStatement ps = c.prepareStatement(verify)) {
          ps.setString(1, "cost");
          ps.setString(2, "h1");
          ps.setLong(3, 42);
          try (ResultSet rs = ps.executeQuery()) {
            rs.next();
          }
        }
      }
      try (PreparedStatement u = c.prepareStatement("UPDATE vt_rows SET v = v + 1 WHERE id = ?")) {
        u.setInt(1, i % 1000);
        u.executeUpdate();
      }
      c.commit();
    }
    return (cpuTicks(pid) - before) * 10_000.0 / tx;
  }

  private static long cpuTicks(long pid) throws Exception {
    String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    return Long.parseLong(f[11]) + Long.parseLong(f[12]);
  }

  private static double median(List<Double> xs) {
    double[] a = xs.stream().mapToDouble(Double::doubleValue).toArray();
    Arrays.sort(a);
    return a.length % 2 == 1 ? a[a.length / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
  }
}

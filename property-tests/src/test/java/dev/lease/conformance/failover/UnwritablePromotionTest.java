package dev.lease.conformance.failover;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.conformance.ConformanceProperty;
import dev.lease.conformance.PropertyResult;
import dev.lease.conformance.Size;
import dev.lease.conformance.Target;
import java.io.IOException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Issue 41 item 3: a failover whose promoted server does not take writes ends the run with a
 * message that says so, within the bound, instead of leaving holders and clean-up waiting. The
 * "failover" here makes a database of its own on the shared PostgreSQL server read-only and ends
 * its sessions (what a standby promoted without taking writes looks like to a client); no replica
 * is needed, so this runs without {@code .ci/replicas}.
 */
class UnwritablePromotionTest {

  private static final String ADMIN_URL = "jdbc:postgresql://127.0.0.1:5432/test";
  private static final String DATABASE = "lease_fo_unwritable";

  @Test
  @DisplayName(
      "postgresql: a promoted server that takes no write ends the run with a clear message")
  void aPromotedServerThatTakesNoWriteEndsTheRunWithAClearMessage() throws Exception {
    admin("DROP DATABASE IF EXISTS " + DATABASE + " WITH (FORCE)", "CREATE DATABASE " + DATABASE);
    FailoverHook readOnly =
        new FailoverHook() {
          @Override
          public void failOver() throws IOException {
            try {
              admin(
                  "ALTER DATABASE " + DATABASE + " SET default_transaction_read_only = on",
                  "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '"
                      + DATABASE
                      + "'");
            } catch (SQLException e) {
              throw new IOException(e);
            }
          }

          @Override
          public String describe() {
            return "a failover to a server that takes no write";
          }
        };
    long started = System.nanoTime();
    PropertyResult r;
    try {
      r =
          new FailoverProperty(readOnly, 1, 1, false, FailoverProperty.Break.NONE)
              .writableWithin(Duration.ofSeconds(2))
              .check(
                  new Target(
                      "jdbc:postgresql://127.0.0.1:5432/" + DATABASE + "?connectTimeout=2",
                      "postgres",
                      ""),
                  Size.QUICK,
                  37L,
                  ConformanceProperty.Progress.NONE);
    } finally {
      admin("DROP DATABASE IF EXISTS " + DATABASE + " WITH (FORCE)");
    }
    long seconds = (System.nanoTime() - started) / 1_000_000_000L;
    System.out.println("unwritable promotion: " + seconds + " s: " + r);
    assertEquals(PropertyResult.Verdict.FAILS, r.verdict(), r.toString());
    assertTrue(
        r.failure() != null
            && r.failure().contains("the promoted server did not take a write within 2.0 s")
            && r.failure().contains("read-only"),
        r.failure());
    // the holders' round, the probe's bound and the bounded clean-up: far from the 10 minutes seen
    assertTrue(seconds < 90, seconds + " s");
  }

  private static void admin(String... sql) throws SQLException {
    try (Connection c = DriverManager.getConnection(ADMIN_URL, "postgres", "");
        Statement s = c.createStatement()) {
      for (String q : sql) {
        s.execute(q);
      }
    }
  }
}

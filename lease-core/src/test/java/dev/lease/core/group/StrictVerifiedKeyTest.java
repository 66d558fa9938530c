package dev.lease.core.group;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Fixture;
import dev.lease.core.Lease;
import dev.lease.core.LeaseManager;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.testing.OnEveryServer;
import dev.lease.testing.OnPostgresql;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;

/**
 * STRICT: no key is claimed for term t+1 while a transaction verified under term t is open. The
 * batched claim locks the rows {@code FOR UPDATE SKIP LOCKED}, which conflicts with the strict
 * verify's lock ({@code FOR KEY SHARE} on PostgreSQL, {@code LOCK IN SHARE MODE} on InnoDB): the
 * key is skipped while the transaction is open and claimed at the first pass after it ended. (On
 * SQLite the claim needs the database's write lock, which the strict verify took: it waits like
 * every claim there.)
 */
class StrictVerifiedKeyTest {

  @OnEveryServer
  void aKeyUnderAnOpenStrictVerifiedTransactionIsSkippedThenClaimed(TestDatabase db)
      throws Exception {
    try (Fixture f = new Fixture(db)) {
      Outcome o = run(f, null);
      assertFalse(
          o.claimedWhileOpen, "k0 was claimed while a transaction verified under it was open");
      assertTrue(o.otherKeysClaimed, "the other keys were claimed meanwhile");
      assertTrue(
          o.heldAfter && o.termAfter > o.oldTerm, "k0 claimed at the first pass after the commit");
    }
  }

  /**
   * Negative control: a claim that does not lock the row first takes the key under the open
   * transaction (PostgreSQL: a plain UPDATE does not conflict with {@code FOR KEY SHARE}; on InnoDB
   * any UPDATE waits for the share lock, so the control has nothing to break there).
   */
  @OnPostgresql
  void aClaimWithoutTheRowLockIsCaught(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      Outcome o = run(f, WeakenedGroup.CLAIM_WITHOUT_ROW_LOCK);
      assertTrue(o.claimedWhileOpen, "the broken claim took k0 under the open transaction");
    }
  }

  record Outcome(
      long oldTerm,
      boolean claimedWhileOpen,
      boolean otherKeysClaimed,
      long termAfter,
      boolean heldAfter) {}

  private static Outcome run(Fixture f, WeakenedGroup fault) throws Exception {
    LeaseManager old = f.manager("old", Fixture.timings(600, 200, 400, 300, 100));
    Lease lease = old.tryClaim("k0").orElseThrow(); // not held: it expires by itself
    LeaseManager m = f.manager("new", GroupWorld.TIMINGS);
    LeaseGroup.Builder b =
        LeaseGroup.builder(m, "strict")
            .keys(() -> List.of("k0", "k1", "k2"))
            .passInterval(Duration.ofMillis(50))
            .createTableIfMissing();
    if (fault != null) {
      fault.applyTo(b);
    }
    LeaseGroup g = f.track(b.build());
    boolean claimedWhileOpen;
    boolean others;
    try (Connection c = f.pool(1).getConnection()) {
      c.setAutoCommit(false);
      assertTrue(LeaseInternals.verifyInTransaction(lease, c, true, Duration.ofSeconds(30)));
      long expiry = f.row("k0").expiresAtMs();
      Fixture.await(
          "k0 to expire by the database clock",
          Duration.ofSeconds(10),
          () -> m.databaseTimeMillis() >= expiry);
      g.runPass(); // announces
      g.runPass(); // claims what it can
      claimedWhileOpen = g.held().contains("k0") || f.row("k0").term() != lease.term();
      others = g.held().containsAll(List.of("k1", "k2"));
      c.commit();
    }
    g.runPass();
    return new Outcome(
        lease.term(), claimedWhileOpen, others, f.row("k0").term(), g.held().contains("k0"));
  }
}

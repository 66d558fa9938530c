package dev.lease.core.group;

import dev.lease.core.internal.GroupFirstPass;
import dev.lease.core.internal.GroupInternals;
import dev.lease.core.internal.GroupRules;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.function.Supplier;

/**
 * A lease group's {@link GroupRules} broken on purpose, one mechanism each, for the negative
 * controls of the group tests; never in the jar. Applied with {@link #applyTo} ({@link
 * GroupInternals#rulesForTesting}, honoured only in a test JVM).
 */
enum WeakenedGroup implements GroupRules {

  /** Claims every free key, whatever the fair share, and never sheds. */
  IGNORE_SHARE {
    @Override
    public int share(int fairShare, int candidates) {
      return candidates;
    }
  },

  /** Runs the release (or transfer) statement before {@link GroupCallbacks#onReleasing}. */
  RELEASE_BEFORE_CALLBACK {
    @Override
    public void giveBack(Runnable callbacks, Runnable giveBack) {
      giveBack.run(); // the bug: the key's work still runs
      callbacks.run();
    }
  },

  /** Claims without locking the rows first (PostgreSQL: does not wait for strict verifies). */
  CLAIM_WITHOUT_ROW_LOCK {
    @Override
    public String claimLock(String lock) {
      return "";
    }
  },

  /**
   * The first pass as it was: heartbeat (inserting the row), purge of dead members by a range
   * DELETE and count in one transaction, not retried (MySQL/MariaDB deadlocked when members started
   * together).
   */
  FIRST_PASS_IN_ONE_TRANSACTION {
    @Override
    public int firstPass(GroupFirstPass steps) {
      String members = steps.membersTable();
      String clock = steps.clock();
      return steps.inOneTransaction(
          c -> {
            if (steps.beat(c) == 0) {
              steps.announce(c);
            }
            // the purge of members silent for ten member timeouts, one range DELETE: on
            // MySQL/MariaDB it locks every row of the group it scans, and waits for a peer's row
            // inserted in a transaction still open
            try (PreparedStatement ps =
                c.prepareStatement(
                    "DELETE FROM "
                        + members
                        + " WHERE group_name = ? AND heartbeat_ms < "
                        + clock
                        + " - ?")) {
              ps.setString(1, steps.group());
              ps.setLong(2, 10 * steps.memberTimeoutMs());
              ps.executeUpdate();
            }
            try (PreparedStatement ps =
                c.prepareStatement(
                    "SELECT COUNT(*) FROM "
                        + members
                        + " WHERE group_name = ? AND draining = 0 AND heartbeat_ms > "
                        + clock
                        + " - ?")) {
              ps.setString(1, steps.group());
              ps.setLong(2, steps.memberTimeoutMs());
              try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
              }
            }
          });
    }
  },

  /**
   * Moves keys as before issue 23: a release, then the member that needs them claims them at its
   * next pass, so a third process can claim a key in between.
   */
  MOVE_BY_RELEASE {
    @Override
    public <T> T move(Supplier<T> byTransfer, Supplier<T> byRelease) {
      return byRelease.get();
    }
  };

  /** Builds {@code b}'s group with these rules. */
  LeaseGroup.Builder applyTo(LeaseGroup.Builder b) {
    return GroupInternals.rulesForTesting(b, this);
  }
}

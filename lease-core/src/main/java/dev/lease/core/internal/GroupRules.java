package dev.lease.core.internal;

import java.util.function.Supplier;

/**
 * The rules of a {@link dev.lease.core.group.LeaseGroup} that the negative controls of the tests
 * break one at a time: how many keys a member takes, the order of a key's callback and its release,
 * how keys move to the members that need them, how a member's first pass writes its row, and the
 * claim's row lock. The default methods are the rules; production runs {@link #PRODUCTION}.
 *
 * <p>A weakened implementation (the control of one mechanism) lives in test sources only (or in the
 * conformance runner), never in the jar, and reaches a group through {@link
 * GroupInternals#rulesForTesting}, honoured only in a test JVM. Production code asks a rule here
 * and branches on no test switch.
 *
 * <p>Not API: it may change in any release.
 */
public interface GroupRules {

  /** The rules every production group runs. */
  GroupRules PRODUCTION = new GroupRules() {};

  /**
   * How many of the candidate keys a member that is not draining holds: its fair share {@code
   * ceil(keys / live members)}; it claims up to it and sheds above it.
   *
   * @param fairShare the fair share
   * @param candidates how many candidate keys there are
   */
  default int share(int fairShare, int candidates) {
    return fairShare;
  }

  /**
   * Gives keys back (a release, a shed, a drain's or a move's transfer): each key's {@code
   * onReleasing} callback returns first (the application stops the key's work), then the statement
   * gives the rows away, so no work acts under a row another process may already hold.
   *
   * @param callbacks runs each key's {@code onReleasing} and forgets the keys
   * @param giveBack the release or transfer statements
   */
  default void giveBack(Runnable callbacks, Runnable giveBack) {
    callbacks.run();
    giveBack.run();
  }

  /**
   * How keys above the fair share (or all, draining) move to the members below it: by transfer to a
   * named member in the statement that fences this holder, so no third process can claim a key in
   * between.
   *
   * @param byTransfer moves the keys by transfer
   * @param byRelease releases them instead; whoever is below its share claims them
   * @return the keys transferred, each to the member it named
   */
  default <T> T move(Supplier<T> byTransfer, Supplier<T> byRelease) {
    return byTransfer.get();
  }

  /**
   * A member's first pass writes its row apart: the announcement in a transaction of its own
   * (retried on a deadlock), then the heartbeat with the live members in another. One transaction
   * of heartbeat, purge and count deadlocked on MySQL/MariaDB when members started together.
   *
   * @param steps the production pass ({@link GroupFirstPass#announceApart}) and its pieces
   * @return the live members that are not draining
   */
  default int firstPass(GroupFirstPass steps) {
    return steps.announceApart();
  }

  /**
   * The lock clause of the batched claim's read ({@code {lock}} in its text; PostgreSQL, MySQL,
   * MariaDB): it waits for strict verifies of the rows and skips rows a peer's batch is claiming.
   *
   * @param lock the clause, {@code " FOR UPDATE SKIP LOCKED"}
   */
  default String claimLock(String lock) {
    return lock;
  }
}

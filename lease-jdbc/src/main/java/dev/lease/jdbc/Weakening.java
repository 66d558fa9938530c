package dev.lease.jdbc;

import dev.lease.core.dialect.Dialect;
import java.sql.SQLException;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Deliberately broken variants of the fence, for negative controls only: each switches one of its
 * mechanisms off, so a test can show that the mechanism is what stops the attack it targets. Tests
 * in this package set them through {@code FencingOptions.Builder.weaken}; other modules' tests (the
 * property tests) through the system property {@value #PROPERTY}, a comma-separated list of the
 * constants' names, read when options are built and honoured only when a test-only marker class is
 * on the class path ({@link #MARKERS}; refused otherwise). Never in production: a weakened fence
 * logs an error for every connection it fences.
 */
enum Weakening {
  /** Read a text's kind from its first keyword only, as the first release did (issue 9). */
  LEADING_KEYWORD,
  /**
   * Trust the verify's lock after errors, savepoint rollbacks, and (MySQL/MariaDB) batches,
   * multi-statement texts and driver objects handed out by unwrap: no re-verify.
   */
  NO_REVERIFY,
  /** Leave a verified transaction begun as SQL open at close. */
  NO_ROLLBACK_AT_CLOSE,
  /** Let a loss reported as a transaction ends poison the next transaction (no generations). */
  NO_GENERATIONS,
  /** Leave MySQL session bounds in place for borrowers without a lease. */
  NO_SESSION_RESTORE,
  /** Commit the wrapped transaction of an autocommit query when it returns (cursors break). */
  NO_CURSOR_FIX,
  /** Ignore the driver's view of the session (SQL BEGIN, SET autocommit as SQL, ...). */
  NO_DRIVER_SESSION,
  /** Keep a verified transaction open for the next thread a pool hands the connection to. */
  NO_ABANDON_CHECK,
  /**
   * Run commits written as SQL (COMMIT, END, MySQL implicit commits, SET autocommit = 1) and {@code
   * setAutoCommit(true)} without the checks of {@code commit()}, and let MySQL/MariaDB {@code XA
   * PREPARE} through under STRICT.
   */
  NO_COMMIT_CHECKS,
  /**
   * Take {@code isReadOnly()} for the server's answer: a flagged connection whose transaction can
   * write gets no lock, and SKIP no verify.
   */
  TRUST_READ_ONLY_FLAG,
  /** Hand out driver objects through {@code unwrap} after the transaction's verify only. */
  NO_UNWRAP_CHECKS,
  /** Send the verify in the same round trip as the first statement but ignore an empty result. */
  PIGGYBACK_IGNORES_REFUSAL,
  /**
   * Hand out the driver's arrays, LOBs, refs, structs and {@code getObject} values unwrapped, as
   * before issue 25 (their result sets and writes bypass the fence).
   */
  RAW_DRIVER_OBJECTS,
  /** Keep a refusal by the database to the fence: the lease stays held locally (issue 23). */
  REFUSAL_NOT_REPORTED,
  /**
   * Commit without reading the lease's own state: only the loss listener, which runs later on the
   * loss executor, poisons a transaction whose lease was lost (issue 23).
   */
  COMMIT_TRUSTS_LOSS_LISTENER,
  /**
   * Report a failure of a transaction whose lease is no longer held as the database's error alone
   * (no lease-lost cause), and fail the rollback of a session the server already ended (issue 20).
   */
  LOSS_AS_DATABASE_ERROR,
  /**
   * The refusal mechanism before issue 25 ({@link Refusal#CLIENT}: the client reads the verify's
   * empty result, commits carry no proof, the server's transaction state is not read), for the
   * conformance runner's negative controls, which cannot reach {@code
   * FencingOptions.Builder.refusal} (another package); tests in this package use that seam.
   */
  PREVIOUS_REFUSAL,
  /**
   * Read MySQL/MariaDB implicit-commit statements as ordinary ones, as for a statement the lexer
   * does not know commits (MariaDB's CREATE TEMPORARY SEQUENCE before the review): shows what the
   * server's transaction state and the re-verify after batches catch without the lexer.
   */
  UNKNOWN_IMPLICIT_COMMITS,
  /**
   * Take any error whose message contains {@code Dialect.REFUSAL_MARKER} for the server's refusal,
   * as before the review: an application's error echoing the marker from user data (a duplicate
   * key) loses a held lease.
   */
  REFUSAL_BY_MARKER_TEXT,
  /**
   * PostgreSQL: commit a read-only transaction without a proof, as before the review (its NOTIFY
   * reaches listeners after a successor's claim).
   */
  NO_READ_ONLY_PROOF,
  /**
   * MySQL/MariaDB: send a LOCK TABLES under a lease without checking that its list names the lease
   * table, as before issue 25 item 6 (every later statement fails with the server's "was not locked
   * with LOCK TABLES").
   */
  LOCK_TABLES_UNCHECKED;

  static final String PROPERTY = "lease.jdbc.testing.weaken";

  private static final Logger log = LoggerFactory.getLogger(Weakening.class);

  /**
   * Classes only test support and the conformance runner contain: without one on the class path the
   * property is refused, so a leftover flag cannot weaken a production fence (review S6).
   */
  static final List<String> MARKERS =
      List.of(
          "dev.lease.testing.WeakenedFencesAllowed", "dev.lease.conformance.WeakenedFencesAllowed");

  static Set<Weakening> fromSystemProperty() {
    return parse(System.getProperty(PROPERTY), Weakening.class.getClassLoader());
  }

  static Set<Weakening> parse(String value, ClassLoader loader) {
    Set<Weakening> set = EnumSet.noneOf(Weakening.class);
    if (value == null || value.isBlank()) {
      return set;
    }
    if (MARKERS.stream().noneMatch(m -> present(m, loader)) && !agentTestJvm(loader)) {
      throw new IllegalStateException(
          "system property "
              + PROPERTY
              + "="
              + value
              + " deliberately weakens lease-jdbc's fence (negative controls of lease's own tests);"
              + " it is honoured only with lease's test support or conformance runner on the class"
              + " path, and refused here: remove the property");
    }
    for (String name : value.split(",")) {
      set.add(Weakening.valueOf(name.trim().toUpperCase(Locale.ROOT)));
    }
    return set;
  }

  /**
   * Inside lease-agent's jar (which carries no test support) the agent's own test-JVM marker stands
   * in: the agent refuses to start with any testing switch unless {@code
   * -Dlease.agent.testJvm=true} is set, and then logs at ERROR what is weakened.
   */
  private static boolean agentTestJvm(ClassLoader loader) {
    return Boolean.getBoolean("lease.agent.testJvm")
        && present("dev.lease.agent.LeaseAgent", loader);
  }

  private static boolean present(String marker, ClassLoader loader) {
    try {
      Class.forName(marker, false, loader);
      return true;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }

  /** The check {@link #REFUSAL_BY_MARKER_TEXT} restores: the marker anywhere in the chain. */
  static boolean mentionsMarker(SQLException e) {
    for (Throwable t = e; t != null && t.getCause() != t; t = t.getCause()) {
      if (String.valueOf(t.getMessage()).contains(Dialect.REFUSAL_MARKER)
          || (t instanceof SQLException s
              && s.getNextException() != null
              && String.valueOf(s.getNextException().getMessage())
                  .contains(Dialect.REFUSAL_MARKER))) {
        return true;
      }
    }
    return false;
  }

  static void warn(Set<Weakening> set, Object what) {
    if (!set.isEmpty()) {
      log.error("{} is fenced by a DELIBERATELY WEAKENED fence {} (tests only)", what, set);
    }
  }
}

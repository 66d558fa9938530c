package dev.lease.jdbc;

import java.util.EnumSet;
import java.util.Locale;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Deliberately broken variants of the fence, for negative controls only: each switches one of its
 * mechanisms off, so a test can show that the mechanism is what stops the attack it targets. Tests
 * in this package set them through {@code FencingOptions.Builder.weaken}; other modules' tests (the
 * property tests) through the system property {@value #PROPERTY}, a comma-separated list of the
 * constants' names, read when options are built. Never in production: a weakened fence logs an
 * error for every connection it fences.
 */
enum Weakening {
  /** Read a text's kind from its first keyword only, as the first release did (issue 9). */
  LEADING_KEYWORD,
  /** Trust the verify's lock after errors and savepoint rollbacks: no re-verify. */
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
   * setAutoCommit(true)} without the checks of {@code commit()}.
   */
  NO_COMMIT_CHECKS;

  static final String PROPERTY = "lease.jdbc.testing.weaken";

  private static final Logger log = LoggerFactory.getLogger(Weakening.class);

  static Set<Weakening> fromSystemProperty() {
    String value = System.getProperty(PROPERTY);
    Set<Weakening> set = EnumSet.noneOf(Weakening.class);
    if (value == null || value.isBlank()) {
      return set;
    }
    for (String name : value.split(",")) {
      set.add(Weakening.valueOf(name.trim().toUpperCase(Locale.ROOT)));
    }
    return set;
  }

  static void warn(Set<Weakening> set, Object what) {
    if (!set.isEmpty()) {
      log.error("{} is fenced by a DELIBERATELY WEAKENED fence {} (tests only)", what, set);
    }
  }
}

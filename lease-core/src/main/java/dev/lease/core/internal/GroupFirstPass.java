package dev.lease.core.internal;

import dev.lease.core.dialect.Dialect;
import java.sql.Connection;
import java.sql.SQLException;

/**
 * A member's first pass, as {@link GroupRules#firstPass} receives it: the production pass, and the
 * pieces a weakened one (a negative control, in test sources only) puts together its own way.
 *
 * <p>Not API: it may change in any release.
 */
public interface GroupFirstPass {

  /**
   * The production first pass: the member's row announced in a transaction of its own (retried on a
   * deadlock), then its heartbeat with the live members in another.
   *
   * @return the live members that are not draining
   */
  int announceApart();

  /** Runs {@code call} in one transaction on the manager's connection, not retried. */
  <T> T inOneTransaction(Dialect.SqlCall<T> call);

  /** Writes the member's heartbeat and draining flag; the rows it changed (0: the row is gone). */
  int beat(Connection c) throws SQLException;

  /** Inserts the member's row unless it exists. */
  void announce(Connection c) throws SQLException;

  /** The group's name ({@code group_name} of the members table). */
  String group();

  /** The members table's name. */
  String membersTable();

  /** The database clock in milliseconds, as an SQL expression. */
  String clock();

  /** How long a member's heartbeat stays live, in milliseconds. */
  long memberTimeoutMs();
}

package dev.lease.core.group;

import dev.lease.core.LeaseException;
import dev.lease.core.LeaseManager;
import dev.lease.core.dialect.Dialect;
import dev.lease.core.internal.GroupFirstPass;
import dev.lease.core.internal.LeaseInternals;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One member's row in the members table: its announcement, its heartbeat (which reads the live
 * members in the same transaction), its removal, and the purge of members long gone.
 */
final class Membership {

  private static final Logger log = LoggerFactory.getLogger(LeaseGroup.class);

  /** How many times a statement the database refused as a deadlock is tried in one pass. */
  private static final int CONFLICT_ATTEMPTS = 3;

  private final LeaseManager manager;
  private final String group;
  private final String member;
  private final GroupSql sql;
  private final long memberTimeoutMs;

  Membership(
      LeaseManager manager, String group, String member, GroupSql sql, long memberTimeoutMs) {
    this.manager = manager;
    this.group = group;
    this.member = member;
    this.sql = sql;
    this.memberTimeoutMs = memberTimeoutMs;
  }

  /**
   * Inserts this member's row in a transaction of its own ({@link GroupSql#announce}), retried at
   * once if the database refuses it as a deadlock, so that a member starting with others is counted
   * by them before any of them claims.
   */
  void announce(boolean leaving) {
    executeRetrying(
        "announce member " + member + " of group " + group,
        c -> {
          sql.announce(c, group, member, manager.instance(), leaving);
          return null;
        });
  }

  /**
   * The heartbeat and the live members, one transaction; if the member's row was gone (purged while
   * this process was paused), announces it again and reads again.
   */
  List<GroupSql.MemberRow> heartbeat(boolean leaving) {
    int[] beat = new int[1];
    List<GroupSql.MemberRow> live =
        executeRetrying(
            "heartbeat of member " + member + " of group " + group,
            c -> {
              beat[0] = sql.beat(c, group, member, leaving);
              return sql.liveMemberRows(c, group, memberTimeoutMs);
            });
    if (beat[0] > 0) {
      return live;
    }
    announce(leaving);
    return executeRetrying(
        "count the members of group " + group, c -> sql.liveMemberRows(c, group, memberTimeoutMs));
  }

  /** This member's first pass, for {@link dev.lease.core.internal.GroupRules#firstPass}. */
  FirstPass firstPass(boolean leaving) {
    return new FirstPass(leaving);
  }

  /** The live members that are not draining. */
  static int notDraining(List<GroupSql.MemberRow> rows) {
    return (int) rows.stream().filter(r -> !r.draining()).count();
  }

  /** The first pass and its pieces; {@link #rows} holds the members the production pass read. */
  final class FirstPass implements GroupFirstPass {

    private final boolean leaving;
    private List<GroupSql.MemberRow> rows = List.of();

    private FirstPass(boolean leaving) {
      this.leaving = leaving;
    }

    /** The live members the production pass read (none if the pass ran otherwise). */
    List<GroupSql.MemberRow> rows() {
      return rows;
    }

    @Override
    public int announceApart() {
      Membership.this.announce(leaving);
      rows = heartbeat(leaving);
      return notDraining(rows);
    }

    @Override
    public <T> T inOneTransaction(Dialect.SqlCall<T> call) {
      return LeaseInternals.execute(
          manager, "heartbeat of member " + member + " of group " + group, call);
    }

    @Override
    public int beat(Connection c) throws SQLException {
      return sql.beat(c, group, member, leaving);
    }

    @Override
    public void announce(Connection c) throws SQLException {
      sql.announce(c, group, member, manager.instance(), leaving);
    }

    @Override
    public String group() {
      return group;
    }

    @Override
    public String membersTable() {
      return sql.members();
    }

    @Override
    public String clock() {
      return sql.clock();
    }

    @Override
    public long memberTimeoutMs() {
      return memberTimeoutMs;
    }
  }

  /** Deletes the rows of members silent for ten member timeouts. */
  void forgetTheLongGone() {
    executeRetrying(
        "forget the long gone members of group " + group,
        c -> sql.forgetDead(c, group, 10 * memberTimeoutMs));
  }

  /** Deletes this member's row, so the peers count it out at once; else its heartbeat ages out. */
  void remove() {
    try {
      LeaseInternals.execute(
          manager,
          "remove member " + member + " of group " + group,
          c -> {
            sql.deleteMember(c, group, member);
            return null;
          });
    } catch (LeaseException e) {
      log.warn(
          "group {}: could not remove member {}; its heartbeat ages out: {}",
          group,
          member,
          e.getMessage());
    }
  }

  /**
   * One attempt of the manager, tried again at once (up to {@link #CONFLICT_ATTEMPTS}) when the
   * database rolled it back as a deadlock or serialization failure: the statements are idempotent
   * (the heartbeat, the announcement, the purge), and the rollback undid the attempt as a whole.
   */
  private <T> T executeRetrying(String what, Dialect.SqlCall<T> call) {
    for (int attempt = 1; ; attempt++) {
      try {
        return LeaseInternals.execute(manager, what, call);
      } catch (LeaseException e) {
        if (attempt >= CONFLICT_ATTEMPTS || !rolledBackAsConflict(e)) {
          throw e;
        }
        log.debug(
            "group {}: {} was rolled back as a conflict; again: {}", group, what, e.getMessage());
      }
    }
  }

  /** SQLSTATE 40001 (MySQL/MariaDB deadlock 1213, serialization failure), 40P01 (PG deadlock). */
  static boolean rolledBackAsConflict(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SQLException s
          && ("40001".equals(s.getSQLState())
              || "40P01".equals(s.getSQLState())
              || s.getErrorCode() == 1213)) {
        return true;
      }
    }
    return false;
  }
}

package dev.lease.conformance;

import dev.lease.core.Lease;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.internal.FenceInternals;
import dev.lease.jdbc.internal.FenceRules;
import dev.lease.jdbc.internal.sql.SqlKind;
import dev.lease.jdbc.internal.sql.SqlLexer;
import dev.lease.jdbc.internal.sql.SqlStatement;
import dev.lease.jdbc.internal.sql.SqlSummary;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/**
 * The runner's negative controls of lease-jdbc's fence: weakened {@link FenceRules}, each switching
 * one mechanism off, applied to one builder through lease-jdbc's guarded entry {@link
 * FenceInternals#rulesForTesting} (honoured here: the runner carries its marker, {@link
 * WeakenedFencesAllowed}). Per builder, so a control never weakens another property's fence built
 * at the same moment.
 */
public enum WeakenedFences {
  /**
   * The refusal mechanism before issue 25: the client reads the verify's empty result, commits
   * carry no proof, the server's transaction state is not read.
   */
  PREVIOUS_REFUSAL,
  /** Read a text's kind from its first keyword only, as lease-jdbc's first release did. */
  LEADING_KEYWORD,
  /**
   * Hand out the driver's arrays, LOBs and {@code getObject} values unwrapped (before issue 25).
   */
  RAW_DRIVER_OBJECTS,
  /**
   * The fence before issue 35, which trusted the session it guards: the verify names the lease
   * table as configured (a temporary table, a search_path or USE decide what it reads; PostgreSQL's
   * operators are the session's), statements whose effect lands outside the verify's lock run after
   * a verify of their own, and driver objects outlive their transaction.
   */
  TRUSTS_THE_SESSION;

  /** {@code b} with the mechanisms {@code off} switched off. */
  public static FencingOptions.Builder weaken(FencingOptions.Builder b, WeakenedFences... off) {
    return FenceInternals.rulesForTesting(b, new Rules(EnumSet.copyOf(List.of(off))));
  }

  private static final class Rules implements FenceRules {
    private final Set<WeakenedFences> off;

    Rules(Set<WeakenedFences> off) {
      this.off = Set.copyOf(off);
    }

    @Override
    public String verifySql(Lease lease, boolean strict) {
      return unqualified(
          lease,
          off.contains(PREVIOUS_REFUSAL)
              ? LeaseInternals.clientCheckedVerifySql(lease, strict)
              : FenceRules.super.verifySql(lease, strict));
    }

    @Override
    public String commitProofSql(Lease lease, boolean strict) {
      return off.contains(PREVIOUS_REFUSAL)
          ? verifySql(lease, strict)
          : unqualified(lease, FenceRules.super.commitProofSql(lease, strict));
    }

    @Override
    public boolean commitCarriesProof() {
      return !off.contains(PREVIOUS_REFUSAL);
    }

    @Override
    public boolean readsServerTransactionState() {
      return !off.contains(PREVIOUS_REFUSAL);
    }

    @Override
    public SqlSummary read(SqlSummary summary, String text, SqlLexer lexer) {
      if (!off.contains(LEADING_KEYWORD)) {
        return summary;
      }
      List<SqlStatement> all = text == null ? List.of() : lexer.statements(text);
      return SqlSummary.one(all.isEmpty() ? SqlKind.OTHER : all.get(0).kind());
    }

    @Override
    public boolean wrapsDriverObjects() {
      return !off.contains(RAW_DRIVER_OBJECTS);
    }

    private String unqualified(Lease lease, String sql) {
      if (!off.contains(TRUSTS_THE_SESSION)) {
        return sql;
      }
      dev.lease.core.dialect.Dialect d = LeaseInternals.dialect(lease.manager());
      return sql.replace(d.reference(), d.table()).replace("OPERATOR(pg_catalog.=)", "=");
    }

    @Override
    public boolean refusesEffectsOutsideTheLock() {
      return !off.contains(TRUSTS_THE_SESSION);
    }

    @Override
    public boolean retiresConnectionsOfDriverObjects() {
      return !off.contains(TRUSTS_THE_SESSION);
    }

    @Override
    public String toString() {
      return off.toString();
    }
  }
}

package dev.lease.jdbc.internal;

import dev.lease.core.internal.LeaseInternals;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.internal.fence.Fences;
import java.sql.Connection;
import java.sql.SQLException;

/**
 * What lease-agent and lease's own tests need from lease-jdbc and applications must not call:
 * resetting a fence whose transaction ended outside its connection (an XA branch; any code that
 * could call it could make a fence forget a refused or poisoned transaction, so it is not on {@code
 * FencedConnections}), and the guarded entry of the negative controls' weakened {@link FenceRules}.
 *
 * <p><b>Not API.</b> It may change in any release. The fence itself is in {@code
 * dev.lease.jdbc.internal.fence}; the rules' setter is package-private in {@code FencingOptions},
 * which registers it here when it loads (the "shared secrets" pattern, as lease-core's {@code
 * LeaseInternals}).
 */
public final class FenceInternals {

  private FenceInternals() {}

  /**
   * The transaction of a fenced connection ended outside the connection: an XA branch was ended,
   * prepared, committed or rolled back through its {@code XAResource}. Its verified or poisoned
   * state is forgotten, so the next transaction on the connection verifies again. For the agent's
   * XA support; a no-op for connections that are not fenced.
   */
  public static void transactionEndedElsewhere(Connection connection) {
    Fences.endedElsewhere(connection);
  }

  /**
   * The driver's {@code iface} object behind fenced {@code connection}, for one vendor call whose
   * result is data (the agent's vendor face: {@code PGConnection.getNotifications()}, {@code
   * getBackendPID()}): checked as a statement is (verified first; in autocommit mode under a lease
   * a verify of its own), not as a driver object handed out, so the connection is not retired when
   * the transaction ends. A call whose result can reach the database later (a {@code CopyManager})
   * must go through {@code unwrap}.
   */
  public static <T> T vendorDataCall(Connection connection, Class<T> iface) throws SQLException {
    return dev.lease.jdbc.internal.fence.Fences.forDataCall(connection, iface);
  }

  /**
   * Negative controls of lease's own tests only: {@code builder} builds fences that run {@code
   * rules} (deliberately weakened: one mechanism switched off) in place of {@link
   * FenceRules#PRODUCTION}, and every connection they fence logs at ERROR that it is DELIBERATELY
   * WEAKENED. Honoured only with lease's test support or conformance runner on the class path, so
   * no production fence can be weakened.
   *
   * @return {@code builder}
   * @throws IllegalStateException anywhere else
   */
  public static FencingOptions.Builder rulesForTesting(
      FencingOptions.Builder builder, FenceRules rules) {
    return setRules(builder, rules, true);
  }

  /**
   * Benchmarks only: {@code builder} builds fences that run an earlier mechanism ({@code rules}) so
   * that one run can time it beside today's, without the ERROR line per connection of {@link
   * #rulesForTesting} (which would be timed too). Guarded as that one is.
   *
   * @return {@code builder}
   * @throws IllegalStateException without lease's test support on the class path
   */
  public static FencingOptions.Builder rulesForComparison(
      FencingOptions.Builder builder, FenceRules rules) {
    return setRules(builder, rules, false);
  }

  private static FencingOptions.Builder setRules(
      FencingOptions.Builder builder, FenceRules rules, boolean warn) {
    if (!LeaseInternals.testJvm(FenceInternals.class.getClassLoader())) {
      throw new IllegalStateException(
          "weakened FenceRules ("
              + rules.getClass().getName()
              + ") deliberately break lease-jdbc's fence (negative controls of lease's own tests);"
              + " they are honoured only with lease's test support or conformance runner on the"
              + " class path, and refused here: build FencingOptions without them");
    }
    RulesAccess.Setter<FencingOptions.Builder> setter =
        RulesAccess.setter(FencingOptions.Builder.class);
    if (setter == null) {
      FencingOptions.defaults(); // initialises FencingOptions, which registers the setter
      setter = RulesAccess.setter(FencingOptions.Builder.class);
      if (setter == null) {
        throw new IllegalStateException("lease-jdbc did not register its rules' setter");
      }
    }
    setter.set(builder, rules, warn);
    return builder;
  }
}

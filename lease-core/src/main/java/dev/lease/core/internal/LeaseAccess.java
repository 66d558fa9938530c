package dev.lease.core.internal;

import dev.lease.core.Lease;
import dev.lease.core.LeaseListener;
import dev.lease.core.LeaseManager;
import dev.lease.core.dialect.Dialect;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * The package-private side of {@code dev.lease.core}, seen from other packages: the "shared
 * secrets" pattern of the JDK. Its one implementation lives package-private in {@code
 * dev.lease.core} and registers itself with {@link LeaseInternals} when {@link LeaseManager} loads;
 * callers go through the static methods of {@link LeaseInternals}, never through this class.
 *
 * <p>Not API: it may change in any release.
 */
public abstract class LeaseAccess {

  protected LeaseAccess() {}

  public abstract boolean verifyInTransaction(
      Lease lease, Connection connection, boolean strict, Duration idleInTransaction)
      throws SQLException;

  public abstract boolean verifyInTransaction(
      Lease lease,
      Connection connection,
      String sql,
      boolean strict,
      Duration idleInTransaction,
      long[] sessionBounds)
      throws SQLException;

  public abstract void awaitRenewal(Lease lease, Duration max) throws InterruptedException;

  public abstract void lostInDatabase(Lease lease);

  public abstract List<String> strictSessionStatements(
      LeaseManager manager, Duration idleInTransaction, Duration lockWait);

  public abstract void notifyListeners(LeaseManager manager, Consumer<LeaseListener> event);

  public abstract Lease notHeld(LeaseManager manager, String name);

  public abstract void bindProcessWide(Lease lease);

  public abstract Lease processWide();

  public abstract Lease currentOrNull();

  public abstract <T> T execute(LeaseManager manager, String what, Dialect.SqlCall<T> call);

  public abstract Dialect dialect(LeaseManager manager);

  public abstract MonotonicClock clock(LeaseManager manager);

  public abstract String mintHolder(LeaseManager manager);

  public abstract Lease adoptClaim(
      LeaseManager manager,
      String name,
      String holder,
      long term,
      boolean fromAnother,
      long claimStartNanos);

  public abstract Lease adoptBatchClaim(
      LeaseManager manager, String name, String holder, long term, long claimStartNanos);

  public abstract Lease adoptBatchTransfer(
      LeaseManager manager, String name, String holder, long term, long claimStartNanos);

  public abstract java.util.Map<String, Long> transferAll(
      LeaseManager manager, Collection<Lease> leases, String successor, Duration adoptWithin);

  public abstract boolean endWith(Lease lease, BooleanSupplier end);

  public abstract boolean isClosed(LeaseManager manager);

  public abstract void clock(LeaseManager.Builder builder, MonotonicClock clock);

  public abstract void attemptClock(LeaseManager.Builder builder, MonotonicClock clock);

  public abstract void clockFunction(LeaseManager.Builder builder, String function);

  public abstract void scheduler(LeaseManager.Builder builder, ScheduledExecutorService scheduler);

  public abstract void attemptExecutor(LeaseManager.Builder builder, Executor executor);

  public abstract void lossExecutor(LeaseManager.Builder builder, Executor executor);

  public abstract void sqlRules(LeaseManager.Builder builder, SqlRules rules);

  public abstract void rules(LeaseManager.Builder builder, LifecycleRules rules);

  public abstract void afterWork(LeaseManager.Builder builder, Consumer<Lease> hook);

  public abstract void release(LeaseManager manager, Collection<Lease> leases);

  public abstract CallerWork bindCurrentThread(Lease lease);

  public abstract java.util.concurrent.CompletableFuture<Void> renewalPassNow(LeaseManager manager);
}

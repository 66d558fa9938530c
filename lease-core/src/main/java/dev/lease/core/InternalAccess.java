package dev.lease.core;

import dev.lease.core.dialect.Dialect;
import dev.lease.core.internal.CallerWork;
import dev.lease.core.internal.LeaseAccess;
import dev.lease.core.internal.LifecycleRules;
import dev.lease.core.internal.MonotonicClock;
import dev.lease.core.internal.SqlRules;
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
 * The one implementation of {@link LeaseAccess}: forwards to the package-private members of this
 * package. Registered by {@link LeaseManager}'s static initialiser.
 */
final class InternalAccess extends LeaseAccess {

  @Override
  public boolean verifyInTransaction(
      Lease lease, Connection connection, boolean strict, Duration idleInTransaction)
      throws SQLException {
    return lease.verifyInTransaction(connection, strict, idleInTransaction);
  }

  @Override
  public boolean verifyInTransaction(
      Lease lease,
      Connection connection,
      String sql,
      boolean strict,
      Duration idleInTransaction,
      long[] sessionBounds)
      throws SQLException {
    return lease.verifyInTransaction(connection, sql, strict, idleInTransaction, sessionBounds);
  }

  @Override
  public void awaitRenewal(Lease lease, Duration max) throws InterruptedException {
    lease.awaitRenewal(max);
  }

  @Override
  public void lostInDatabase(Lease lease) {
    lease.lose(LossReason.DATABASE);
  }

  @Override
  public List<String> strictSessionStatements(
      LeaseManager manager, Duration idleInTransaction, Duration lockWait) {
    return manager.strictSessionStatements(idleInTransaction, lockWait);
  }

  @Override
  public void notifyListeners(LeaseManager manager, Consumer<LeaseListener> event) {
    manager.notifyListeners(event);
  }

  @Override
  public Lease notHeld(LeaseManager manager, String name) {
    return manager.notHeld(name);
  }

  @Override
  public void bindProcessWide(Lease lease) {
    LeaseContext.bindProcessWide(lease);
  }

  @Override
  public Lease processWide() {
    return LeaseContext.processWide();
  }

  @Override
  public Lease currentOrNull() {
    return LeaseContext.currentOrNull();
  }

  @Override
  public <T> T execute(LeaseManager manager, String what, Dialect.SqlCall<T> call) {
    return manager.attempts().execute(what, call);
  }

  @Override
  public Dialect dialect(LeaseManager manager) {
    return manager.dialect();
  }

  @Override
  public MonotonicClock clock(LeaseManager manager) {
    return manager.clock();
  }

  @Override
  public String mintHolder(LeaseManager manager) {
    return manager.mintHolder();
  }

  @Override
  public Lease adoptClaim(
      LeaseManager manager,
      String name,
      String holder,
      long term,
      boolean fromAnother,
      long claimStartNanos) {
    return manager.claims().adoptClaim(name, holder, term, fromAnother, claimStartNanos);
  }

  @Override
  public Lease adoptBatchClaim(
      LeaseManager manager, String name, String holder, long term, long claimStartNanos) {
    return manager.claims().adoptBatchClaim(name, holder, term, claimStartNanos);
  }

  @Override
  public Lease adoptBatchTransfer(
      LeaseManager manager, String name, String holder, long term, long claimStartNanos) {
    return manager.claims().adoptBatchTransfer(name, holder, term, claimStartNanos);
  }

  @Override
  public java.util.Map<String, Long> transferAll(
      LeaseManager manager, Collection<Lease> leases, String successor, Duration adoptWithin) {
    return manager.releases().transferAll(leases, successor, adoptWithin);
  }

  @Override
  public boolean endWith(Lease lease, BooleanSupplier end) {
    return lease.endWith(end);
  }

  @Override
  public boolean isClosed(LeaseManager manager) {
    return manager.isClosed();
  }

  @Override
  public void clock(LeaseManager.Builder builder, MonotonicClock clock) {
    builder.clock(clock);
  }

  @Override
  public void attemptClock(LeaseManager.Builder builder, MonotonicClock clock) {
    builder.attemptClock(clock);
  }

  @Override
  public void clockFunction(LeaseManager.Builder builder, String function) {
    builder.clockFunctionForTesting(function);
  }

  @Override
  public void scheduler(LeaseManager.Builder builder, ScheduledExecutorService scheduler) {
    builder.scheduler(scheduler);
  }

  @Override
  public void attemptExecutor(LeaseManager.Builder builder, Executor executor) {
    builder.attemptExecutor(executor);
  }

  @Override
  public void lossExecutor(LeaseManager.Builder builder, Executor executor) {
    builder.lossExecutor(executor);
  }

  @Override
  public void sqlRules(LeaseManager.Builder builder, SqlRules rules) {
    builder.sqlRulesForTesting(rules);
  }

  @Override
  public void rules(LeaseManager.Builder builder, LifecycleRules rules) {
    builder.rulesForTesting(rules);
  }

  @Override
  public void afterWork(LeaseManager.Builder builder, Consumer<Lease> hook) {
    builder.afterWorkForTesting(hook);
  }

  @Override
  public CallerWork bindCurrentThread(Lease lease) {
    return lease.manager().workRunner().bindCurrentThread(lease);
  }

  @Override
  public void release(LeaseManager manager, Collection<Lease> leases) {
    manager.releases().release(leases, false);
  }

  @Override
  public java.util.concurrent.CompletableFuture<Void> renewalPassNow(LeaseManager manager) {
    return manager.renewals().passNow();
  }
}

/**
 * Fencing inside the application's own transaction: {@link dev.lease.jdbc.FencedDataSource}, the
 * {@code jdbc:fenced:} {@link dev.lease.jdbc.FencedDriver} and {@link
 * dev.lease.jdbc.FencedConnections} wrap connections so that every transaction opened while a lease
 * is bound to the thread ({@link dev.lease.core.LeaseContext}) is verified by the database, and a
 * holder that lost its lease can no longer commit ({@link dev.lease.jdbc.LeaseLostSQLException}).
 *
 * <p>Public: the entry points above, {@link dev.lease.jdbc.FencingOptions} and its enums, and the
 * {@link dev.lease.jdbc.FencedConnection} marker. Package-private:
 *
 * <ul>
 *   <li>{@code TransactionFence}: the rules (execute, commit, rollback, setAutoCommit: where the
 *       verify runs, what a text under a lease may hold, poisoning, resets), read top to bottom;
 *       its state is {@code TransactionState}, its mechanisms are its collaborators: {@code
 *       Verifier} with {@code VerifyStrategy} (STRICT and VERIFY), {@code Piggyback}, {@code
 *       AutoCommitStatements} (the pending transaction of an autocommit query), {@code
 *       SessionView}, {@code StatementReader}, {@code SqlControl}, {@code Bypass}, {@code
 *       AbandonedTransactions}, {@code Losses};
 *   <li>the SQL reading is a package of its own, {@code dev.lease.jdbc.internal.sql} (not exported:
 *       public only so this package can call it): {@code SqlLexer} reads a text as the server will;
 *       the fence asks it, through {@code StatementReader}, for a text's statements and kinds;
 *   <li>{@code DriverSession}: what the driver knows of the server session (transaction state,
 *       MySQL's autocommit flag), reached by reflection;
 *   <li>{@code SessionBounds}: STRICT's MySQL/MariaDB session bounds, set when the verify finds
 *       them missing and restored for borrowers without a lease;
 *   <li>{@code dev.lease.jdbc.internal.FenceRules}: the rules of the fence's mechanisms (how a
 *       lease no longer held stops a transaction: the server refuses the verify, every commit
 *       carries its proof, DESIGN-NOTE.md in this module; how a text is read; the checks of
 *       commits, sessions and driver objects). Production runs {@code FenceRules.PRODUCTION}; the
 *       negative controls' weakened rules live in test sources only and reach a fence through
 *       {@code FenceInternals.rulesForTesting}, refused without lease's test support on the class
 *       path;
 *   <li>the {@code Fencing*} wrappers and the {@code *Delegate} base classes they extend, generated
 *       by the build ({@code tools/GenerateDelegates.java}, into {@code
 *       target/generated-sources/delegates}; not checked in).
 * </ul>
 */
package dev.lease.jdbc;

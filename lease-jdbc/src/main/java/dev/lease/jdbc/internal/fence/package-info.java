/**
 * The fence. <b>Not API</b>: not exported by the module; public only so that {@code dev.lease.jdbc}
 * and {@code dev.lease.jdbc.internal} can build and reset it.
 *
 * <ul>
 *   <li>{@code Fences}: the two entries from outside (build a fence from a {@code FenceConfig}: the
 *       user's {@code FencingOptions}, the rules, the cancels' executor; reset one whose XA branch
 *       ended); {@code FencingConnection} and the {@code Fencing*} wrappers of everything it hands
 *       out, extending the {@code *Delegate} base classes the build generates ({@code
 *       tools/GenerateDelegates.java}, into {@code target/generated-sources/delegates}; not checked
 *       in);
 *   <li>{@code TransactionFence}: the rules (execute, commit, rollback, setAutoCommit: where the
 *       verify runs, what a text under a lease may hold, poisoning, resets), read top to bottom;
 *       its state is {@code TransactionState}, its mechanisms are its collaborators: {@code
 *       Verifier} with {@code VerifyStrategy} (STRICT and VERIFY), {@code Piggyback}, {@code
 *       AutoCommitStatements} (the pending transaction of an autocommit query), {@code
 *       SessionView}, {@code StatementReader} (which asks {@code dev.lease.jdbc.internal.sql}),
 *       {@code SqlControl}, {@code Bypass}, {@code AbandonedTransactions}, {@code Losses};
 *   <li>{@code DriverSession}: what the driver knows of the server session (transaction state,
 *       MySQL's autocommit flag, silent reconnects), reached by reflection;
 *   <li>{@code SessionBounds}: STRICT's MySQL/MariaDB session bounds, set when the verify finds
 *       them missing and restored for borrowers without a lease;
 *   <li>{@code dev.lease.jdbc.internal.FenceRules}: the rules of the fence's mechanisms (how a
 *       lease no longer held stops a transaction: the server refuses the verify, every commit
 *       carries its proof, DESIGN-NOTE.md in this module; how a text is read; the checks of
 *       commits, sessions and driver objects). Production runs {@code FenceRules.PRODUCTION}; the
 *       negative controls' weakened rules live in test sources only and reach a fence through
 *       {@code FenceInternals.rulesForTesting}, refused without lease's test support on the class
 *       path.
 * </ul>
 */
package dev.lease.jdbc.internal.fence;

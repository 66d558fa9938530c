package dev.lease.conformance.fault;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * What a real-concurrency run did, recorded by its threads: every successful claim (term, holder,
 * when it completed, the database time), every business transaction (the term it verified, when its
 * commit was invoked and completed, how it ended), then checked against the invariants. Times are
 * {@code System.nanoTime} of one JVM, so they order events across its threads.
 */
public final class History {

  /**
   * A claim that succeeded; {@code databaseMs} is the database clock read just after it completed
   * (-1 if unknown), an upper bound of the claim's own time.
   */
  public record Claim(
      long term, String holder, String instance, long completedNanos, long databaseMs) {}

  /** How a business transaction ended. */
  public enum End {
    /** commit() returned. */
    COMMITTED,
    /** It failed before commit() was called: nothing of it may be in the database. */
    FAILED,
    /** commit() itself failed (a broken connection): it may or may not have committed, whole. */
    UNKNOWN
  }

  /** A business transaction of {@code rows} rows under {@code term}. */
  public record Transaction(
      long txn,
      long term,
      String holder,
      long startNanos,
      long commitInvokedNanos,
      long endNanos,
      End end,
      long observedTerm,
      long preCommitDatabaseMs,
      String error) {}

  final ConcurrentLinkedQueue<Claim> claims = new ConcurrentLinkedQueue<>();
  final ConcurrentLinkedQueue<Transaction> transactions = new ConcurrentLinkedQueue<>();

  public void claimed(Claim c) {
    claims.add(c);
  }

  public void ended(Transaction t) {
    transactions.add(t);
  }

  public List<Claim> claims() {
    return List.copyOf(claims);
  }

  public List<Transaction> transactions() {
    return List.copyOf(transactions);
  }

  /**
   * Transactions that were still open when the claim of a later term completed: the ones that put
   * invariant 3 to the test (the rest never met a takeover).
   */
  public long contended() {
    return transactions.stream()
        .filter(
            t ->
                claims.stream()
                    .anyMatch(
                        c ->
                            c.term() > t.term()
                                && c.completedNanos() > t.startNanos()
                                && c.completedNanos() < t.endNanos()))
        .count();
  }

  /**
   * Checks the history and the rows the business table holds ({@code rowsOf}: txn → rows, and the
   * terms written).
   *
   * @param strict whether invariant 3 (no commit under term t after the claim of t+1) must hold
   * @return every violation found, empty when the history is clean
   */
  public List<String> check(boolean strict, int rowsPerTransaction, Map<Long, long[]> rowsOf) {
    List<String> violations = new ArrayList<>();
    // invariant 1: one holder per term (claim order between threads cannot be observed exactly, so
    // growth is checked in the database: the claim UPDATE is term = term + 1 on one row)
    Map<Long, String> holderOf = new HashMap<>();
    for (Claim c : claims) {
      String other = holderOf.putIfAbsent(c.term(), c.holder());
      if (other != null && !other.equals(c.holder())) {
        violations.add(
            "invariant 1: term "
                + c.term()
                + " has two holders, "
                + other
                + " and "
                + c.holder()
                + " ("
                + c.instance()
                + ")");
      }
    }
    // invariant 3: a transaction verified under t whose commit was invoked after a claim of a later
    // term had completed must not have committed (sound: the two did not overlap in real time)
    if (strict) {
      for (Transaction t : transactions) {
        if (t.end() != End.COMMITTED) {
          continue;
        }
        for (Claim c : claims) {
          if (c.term() > t.term() && c.completedNanos() < t.commitInvokedNanos()) {
            violations.add(
                "invariant 3: transaction "
                    + t.txn()
                    + " verified under term "
                    + t.term()
                    + " committed "
                    + (t.commitInvokedNanos() - c.completedNanos()) / 1_000_000
                    + " ms after the claim of term "
                    + c.term()
                    + " by "
                    + c.instance()
                    + " had completed");
            break;
          }
        }
        // the same on the database clock: its last statement ran after the claim had completed
        for (Claim c : claims) {
          if (c.term() > t.term()
              && c.databaseMs() > 0
              && t.preCommitDatabaseMs() > c.databaseMs()) {
            violations.add(
                "invariant 3: transaction "
                    + t.txn()
                    + " verified under term "
                    + t.term()
                    + " ran its last statement at database time "
                    + t.preCommitDatabaseMs()
                    + ", "
                    + (t.preCommitDatabaseMs() - c.databaseMs())
                    + " ms after the claim of term "
                    + c.term()
                    + " had completed, and committed");
            break;
          }
        }
        if (t.observedTerm() > t.term()) {
          violations.add(
              "invariant 3: transaction "
                  + t.txn()
                  + " verified under term "
                  + t.term()
                  + " saw term "
                  + t.observedTerm()
                  + " in the lease row and still committed");
        }
      }
    }
    // invariant 4: all or nothing
    for (Transaction t : transactions) {
      long[] rows = rowsOf.getOrDefault(t.txn(), new long[] {0, -1});
      long n = rows[0];
      boolean ok =
          switch (t.end()) {
            case COMMITTED -> n == rowsPerTransaction;
            case FAILED -> n == 0;
            case UNKNOWN -> n == 0 || n == rowsPerTransaction;
          };
      if (!ok) {
        violations.add(
            "invariant 4: transaction "
                + t.txn()
                + " ended "
                + t.end()
                + " with "
                + n
                + " of its "
                + rowsPerTransaction
                + " rows in the database");
      }
      if (n > 0 && rows[1] != t.term()) {
        violations.add(
            "invariant 4: transaction "
                + t.txn()
                + " of term "
                + t.term()
                + " wrote rows of term "
                + rows[1]);
      }
    }
    return violations;
  }
}

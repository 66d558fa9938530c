package dev.lease.conformance.fault;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * What a real-concurrency run did, recorded by its threads: every successful claim (term, holder,
 * when it completed, the database time), every claim attempt that failed waiting for a lock, every
 * pause of a holder inside its verified transaction, every business transaction (the term it
 * verified, when its first statement returned, when its commit was invoked and ended, how it
 * ended); then checked against the invariants and counted. Times are {@code System.nanoTime} of one
 * JVM, so they order events across its threads.
 */
public final class History {

  /**
   * A claim that succeeded; {@code databaseMs} is the database clock read just after it completed
   * (-1 if unknown), an upper bound of the claim's own time.
   */
  public record Claim(
      long term, String holder, String instance, long completedNanos, long databaseMs) {}

  /**
   * A claim attempt that failed because it waited for a lock (SQLite busy, a lock wait timeout).
   */
  public record Attempt(String instance, long startNanos, long endNanos) {}

  /** A holder stopped (frozen or stalled) inside its verified transaction {@code txn}. */
  public record Pause(String instance, long txn, long startNanos, long endNanos) {}

  /** How a business transaction ended. */
  public enum End {
    /** commit() returned. */
    COMMITTED,
    /** It failed before commit() was called: nothing of it may be in the database. */
    FAILED,
    /** commit() itself failed (a broken connection): it may or may not have committed, whole. */
    UNKNOWN
  }

  /**
   * A business transaction under {@code term}; {@code verifiedNanos} is when its first statement
   * (the one the fence verifies at) returned, 0 if it never did; {@code commitInvokedNanos} when
   * its commit left the process for the database, 0 if it never did.
   */
  public record Transaction(
      long txn,
      long term,
      String holder,
      String instance,
      long startNanos,
      long verifiedNanos,
      long commitInvokedNanos,
      long endNanos,
      End end,
      long observedTerm,
      long preCommitDatabaseMs,
      String error) {}

  /** The branches of {@link #check}: each names the invariant and how it was seen to break. */
  public enum Branch {
    TWO_HOLDERS("invariant 1: a term with two holders"),
    COMMIT_AFTER_CLAIM("invariant 3: a commit sent after the next term's claim completed"),
    COMMIT_AFTER_CLAIM_DATABASE_TIME(
        "invariant 3: a committed transaction's last statement ran, by the database clock, after"
            + " the next term's claim"),
    SAW_LATER_TERM("invariant 3: a committed transaction saw a later term in the lease row"),
    HALF_APPLIED("invariant 4: a transaction partly in the database");

    private final String meaning;

    Branch(String meaning) {
      this.meaning = meaning;
    }

    public String meaning() {
      return meaning;
    }
  }

  /** One violation found by {@link #check}. */
  public record Violation(Branch branch, String message) {
    @Override
    public String toString() {
      return message;
    }
  }

  /**
   * The events of a run that put invariant 3 to the test.
   *
   * @param takeoversAcrossOpenTransactions claims that completed while a verified transaction of an
   *     older term was still open (the server ended it, or must refuse its commit)
   * @param claimsThatWaited pauses longer than the lease, of a holder inside its verified
   *     transaction, during which another process's claim attempt waited for its lock and failed
   *     after the lease had expired (SQLite, MySQL without an idle timeout)
   * @param commitsBefore committed transactions of the old terms of those events
   * @param commitsAfter committed transactions of the terms that took over after them
   */
  public record Events(
      long takeoversAcrossOpenTransactions,
      long claimsThatWaited,
      long commitsBefore,
      long commitsAfter) {}

  final ConcurrentLinkedQueue<Claim> claims = new ConcurrentLinkedQueue<>();
  final ConcurrentLinkedQueue<Attempt> waitedAttempts = new ConcurrentLinkedQueue<>();
  final ConcurrentLinkedQueue<Pause> pauses = new ConcurrentLinkedQueue<>();
  final ConcurrentLinkedQueue<Transaction> transactions = new ConcurrentLinkedQueue<>();

  public void claimed(Claim c) {
    claims.add(c);
  }

  public void waited(Attempt a) {
    waitedAttempts.add(a);
  }

  public void paused(Pause p) {
    pauses.add(p);
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
   * Counts the events that put invariant 3 to the test.
   *
   * @param leaseNanos the lease duration: a pause longer than it outlasts the holder's lease
   * @param slackNanos how long after a pause began plus the lease duration an attempt must still be
   *     waiting to count (covers a renewal in flight when the pause began)
   */
  public Events events(long leaseNanos, long slackNanos) {
    Map<Long, Transaction> byTxn = new HashMap<>();
    transactions.forEach(t -> byTxn.put(t.txn(), t));
    TreeSet<Long> oldTerms = new TreeSet<>();
    long across = 0;
    for (Claim c : claims) {
      boolean found = false;
      for (Transaction t : transactions) {
        if (t.term() < c.term()
            && !t.holder().equals(c.holder())
            && t.verifiedNanos() > 0
            && t.verifiedNanos() < c.completedNanos()
            && c.completedNanos() < t.endNanos()) {
          oldTerms.add(t.term());
          found = true;
        }
      }
      if (found) {
        across++;
      }
    }
    long waited = 0;
    for (Pause p : pauses) {
      Transaction t = byTxn.get(p.txn());
      if (t == null || t.verifiedNanos() <= 0 || p.endNanos() - p.startNanos() <= leaseNanos) {
        continue;
      }
      long expired = p.startNanos() + leaseNanos + slackNanos;
      boolean any =
          waitedAttempts.stream()
              .anyMatch(
                  a ->
                      !a.instance().equals(p.instance())
                          && a.endNanos() > expired
                          && a.startNanos() < p.endNanos());
      if (any) {
        waited++;
        oldTerms.add(t.term());
      }
    }
    TreeSet<Long> claimedTerms = new TreeSet<>();
    claims.forEach(c -> claimedTerms.add(c.term()));
    long before = 0;
    long after = 0;
    for (long old : oldTerms) {
      Long next = claimedTerms.higher(old);
      for (Transaction t : transactions) {
        if (t.end() != End.COMMITTED) {
          continue;
        }
        if (t.term() == old) {
          before++;
        } else if (next != null && t.term() == next) {
          after++;
        }
      }
    }
    return new Events(across, waited, before, after);
  }

  /**
   * Checks the history and the rows the business table holds ({@code rowsOf}: txn → rows).
   *
   * @return every violation found, empty when the history is clean
   */
  public List<Violation> check(int rowsPerTransaction, Map<Long, Long> rowsOf) {
    List<Violation> violations = new ArrayList<>();
    // invariant 1: one holder per term (claim order between threads cannot be observed exactly, so
    // growth is left to the database: the claim UPDATE writes max(term + 1, clock) on one row)
    Map<Long, Claim> holderOf = new HashMap<>();
    for (Claim c : claims) {
      Claim other = holderOf.putIfAbsent(c.term(), c);
      if (other != null && !other.holder().equals(c.holder())) {
        violations.add(
            new Violation(
                Branch.TWO_HOLDERS,
                "invariant 1: term "
                    + c.term()
                    + " has two holders, "
                    + (other.instance().equals(c.instance())
                        ? "two claims of " + c.instance()
                        : other.instance() + " and " + c.instance())));
      }
    }
    // invariant 3: a transaction verified under t whose commit was invoked after a claim of a later
    // term had completed must not have committed (sound: the two did not overlap in real time)
    for (Transaction t : transactions) {
      if (t.end() != End.COMMITTED) {
        continue;
      }
      for (Claim c : claims) {
        if (c.term() > t.term() && c.completedNanos() < t.commitInvokedNanos()) {
          violations.add(
              new Violation(
                  Branch.COMMIT_AFTER_CLAIM,
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
                      + " had completed"));
          break;
        }
      }
      // the same on the database clock: its last statement ran after the claim had completed
      for (Claim c : claims) {
        if (c.term() > t.term() && c.databaseMs() > 0 && t.preCommitDatabaseMs() > c.databaseMs()) {
          violations.add(
              new Violation(
                  Branch.COMMIT_AFTER_CLAIM_DATABASE_TIME,
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
                      + " had completed, and committed"));
          break;
        }
      }
      if (t.observedTerm() > t.term()) {
        violations.add(
            new Violation(
                Branch.SAW_LATER_TERM,
                "invariant 3: transaction "
                    + t.txn()
                    + " verified under term "
                    + t.term()
                    + " saw term "
                    + t.observedTerm()
                    + " in the lease row and still committed"));
      }
    }
    // invariant 4: all or nothing
    for (Transaction t : transactions) {
      long n = rowsOf.getOrDefault(t.txn(), 0L);
      boolean ok =
          switch (t.end()) {
            case COMMITTED -> n == rowsPerTransaction;
            case FAILED -> n == 0;
            case UNKNOWN -> n == 0 || n == rowsPerTransaction;
          };
      if (!ok) {
        violations.add(
            new Violation(
                Branch.HALF_APPLIED,
                "invariant 4: transaction "
                    + t.txn()
                    + " ended "
                    + t.end()
                    + " with "
                    + n
                    + " of its "
                    + rowsPerTransaction
                    + " rows in the database"));
      }
    }
    return violations;
  }

  /** How many violations of each branch {@code violations} holds, every branch listed. */
  public static Map<Branch, Long> byBranch(List<Violation> violations) {
    Map<Branch, Long> m = new java.util.EnumMap<>(Branch.class);
    for (Branch b : Branch.values()) {
      m.put(b, 0L);
    }
    violations.forEach(v -> m.merge(v.branch(), 1L, Long::sum));
    return m;
  }
}

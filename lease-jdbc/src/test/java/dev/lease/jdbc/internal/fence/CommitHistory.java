package dev.lease.jdbc.internal.fence;

import java.util.ArrayList;
import java.util.List;

/**
 * A history of claims and holder commits in real (monotonic) time, and the check of STRICT's
 * guarantee on it: no transaction verified under term t commits after the claim of term t+1 commits
 * (shared/research/db-semantics-and-testing.md F, "Check 1"). A commit that was <em>invoked</em>
 * after a higher term's claim had <em>completed</em>, and succeeded, certainly committed after that
 * claim; overlapping intervals are not counted (they are inconclusive, as in Knossos).
 */
final class CommitHistory {

  record Claim(String name, long term, long completedNanos) {}

  record Commit(String name, long term, long invokedNanos, boolean ok, String note) {}

  private final List<Claim> claims = new ArrayList<>();
  private final List<Commit> commits = new ArrayList<>();

  synchronized void claimed(String name, long term, long completedNanos) {
    claims.add(new Claim(name, term, completedNanos));
  }

  synchronized void commit(String name, long term, long invokedNanos, boolean ok, String note) {
    commits.add(new Commit(name, term, invokedNanos, ok, note));
  }

  /** Stale commits: each one a description; empty when the history keeps the guarantee. */
  synchronized List<String> violations() {
    List<String> out = new ArrayList<>();
    for (Commit c : commits) {
      if (!c.ok()) {
        continue;
      }
      for (Claim k : claims) {
        if (k.name().equals(c.name())
            && k.term() > c.term()
            && c.invokedNanos() - k.completedNanos() > 0) {
          out.add(
              "lease "
                  + c.name()
                  + ": a transaction verified under term "
                  + c.term()
                  + " ("
                  + c.note()
                  + ") committed "
                  + (c.invokedNanos() - k.completedNanos()) / 1_000_000
                  + " ms after the claim of term "
                  + k.term()
                  + " committed");
        }
      }
    }
    return out;
  }

  @Override
  public synchronized String toString() {
    return "claims " + claims + ", commits " + commits;
  }
}

package dev.lease.conformance.sim;

import dev.lease.conformance.Mutation;
import dev.lease.core.dialect.Dialect;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The transfers of a schedule (issue 23) as the database took them, and their invariant: between a
 * transfer and its adoption (or its bound, by the database clock) no process but the successor
 * takes the lease, which adopts exactly the transfer's term.
 */
final class SimTransfers {

  /**
   * A transfer the database took (its statement wrote term {@code term}, pending for {@code
   * successor}) and what became of it: adopted by the successor at that term, or expired at the
   * bound by the database clock, with no other process holding the lease in between.
   */
  static final class Transfer {
    final long term;
    final String from;
    final String successor;
    final long boundMs;
    boolean adopted;
    boolean claimedAfterTheBound;

    Transfer(long term, String from, String successor, long boundMs) {
      this.term = term;
      this.from = from;
      this.successor = successor;
      this.boundMs = boundMs;
    }

    boolean unresolved() {
      return !adopted && !claimedAfterTheBound;
    }
  }

  private final SimWorld world;
  private final List<Transfer> transfers = new ArrayList<>();

  /**
   * Which process sent an adopt statement with a new holder: the row names the holder, and the
   * adopter's statement may never close (its process crashed after the database took it).
   */
  private final Map<String, SimProcess> adopters = new HashMap<>();

  SimTransfers(SimWorld world) {
    this.world = world;
  }

  /** A new schedule starts. */
  void clear() {
    transfers.clear();
    adopters.clear();
  }

  /** Statement {@code s} is about to run {@code sql}: an adopt's new holder is remembered. */
  void sending(SimConnection.Stmt s, String sql) {
    if (s.firstParameter != null && Mutation.isAdopt(sql)) {
      adopters.put(s.firstParameter, s.connection().process);
    }
  }

  /** The transfer of this schedule not adopted yet and within its bound by the database clock. */
  Transfer pending() {
    long now = world.dbNowMs();
    for (Transfer t : transfers) {
      if (t.unresolved() && now < t.boundMs) {
        return t;
      }
    }
    return null;
  }

  /**
   * The transfer invariants, when a statement of {@code p} that may have written the lease row (a
   * transfer, an adoption, a claim while a transfer is open) is closed, which commits it (SQLite's
   * autocommit ends with the statement), judged by the database clock it read ({@code now}): a
   * transfer the database took is recorded with its bound; the only process that may take the lease
   * until the bound passes is the successor, and only by adopting it at the transfer's term.
   */
  void statementClosed(SimConnection.Stmt s) {
    if (s.dbNowMs != Long.MIN_VALUE && s.sql != null) {
      observeTransfers(s.connection().process, s.sql, s.dbNowMs);
    }
  }

  private void observeTransfers(SimProcess p, String sql, long now) {
    boolean transfer = Mutation.isTransfer(sql);
    boolean adopt = Mutation.isAdopt(sql);
    if (!transfer && !adopt && transfers.stream().noneMatch(Transfer::unresolved)) {
      return;
    }
    SimDatabase.Row row = world.row();
    if (transfer
        && p.transferringTo != null
        && row.term() > p.transferringTerm // max(term + 1, clock in µs): not consecutive
        && Dialect.TRANSFER_PENDING.equals(row.holder())
        && transfers.stream().noneMatch(t -> t.term == row.term())) {
      // the bound lease-core asked for, from the database clock the statement read
      transfers.add(
          new Transfer(row.term(), p.instance(), p.transferringTo, now + p.transferAdoptWithinMs));
      world.stats.transfers++;
      world.note(
          p + " transfer statement: term " + row.term() + " pending for " + p.transferringTo);
      return;
    }
    for (Transfer t : transfers) {
      if (!t.unresolved()) {
        continue;
      }
      if (adopt && row.term() == t.term && !Dialect.TRANSFER_PENDING.equals(row.holder())) {
        // an adopt statement took it (only an adopt swaps the pending holder at the same term):
        // the row's new holder names which process's (its adopt statement's parameter). Not
        // necessarily p's: an adopt whose process crashed before its statement closed is first
        // seen when the next adopt statement closes (issue 38: a campaign found the checker
        // blaming that next process).
        t.adopted = true;
        SimProcess adopter = adopters.get(row.holder());
        String who = adopter != null ? adopter.instance() : "a holder no adopt statement sent";
        if (adopter == null || !adopter.instance().equals(t.successor)) {
          world.violate(
              "transfer: "
                  + who
                  + " adopted term "
                  + t.term
                  + ", which "
                  + t.from
                  + " transferred to "
                  + t.successor
                  + ": a third process holds the lease between a transfer and its adoption");
        } else {
          world.stats.transfersAdopted++;
          world.note(who + " adopted term " + t.term + " from " + t.from);
        }
      } else if (row.term() > t.term) {
        if (now < t.boundMs) {
          world.violate(
              "transfer: "
                  + p
                  + " took the lease at term "
                  + row.term()
                  + " while term "
                  + t.term
                  + ", which "
                  + t.from
                  + " transferred to "
                  + t.successor
                  + ", was pending for another "
                  + (t.boundMs - now)
                  + " ms"
                  + (p.instance().equals(t.successor)
                      ? ": the successor must adopt the transfer's term"
                      : ": no third process may hold the lease before the adoption bound"));
        }
        t.claimedAfterTheBound = true;
      }
    }
  }

  /** Transfers never adopted whose bound passed: the lease expired and was free again. */
  void countExpired() {
    long now = world.dbNowMs();
    for (Transfer t : transfers) {
      if (!t.adopted && (t.claimedAfterTheBound || now >= t.boundMs)) {
        world.stats.transfersExpiredUnadopted++;
      }
    }
  }
}

package dev.lease.conformance.fault;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.conformance.fault.History.Branch;
import dev.lease.conformance.fault.History.End;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Every branch of the fault runs' history checker, each caught on a constructed history (here) and
 * on a real broken run on every database ({@link FaultRunNegativeControlTest}), beside a clean
 * history that must pass; and the events the runs count.
 */
class HistoryCheckerTest {

  private static final long MS = 1_000_000L;

  /** A transaction of 3 rows, verified at 10 ms, commit sent at {@code sentMs}. */
  private static History.Transaction txn(
      long id, long term, String holder, long sentMs, long endMs, End end, long seen, long dbMs) {
    return new History.Transaction(
        id,
        term,
        holder,
        "p-" + holder,
        5 * MS,
        10 * MS,
        sentMs * MS,
        endMs * MS,
        end,
        seen,
        dbMs,
        null);
  }

  private static History cleanHandOver() {
    History h = new History();
    h.claimed(new History.Claim(1, "a", "p-a", 1 * MS, 1_000));
    h.ended(txn(1, 1, "a", 20, 21, End.COMMITTED, 1, 1_010));
    h.claimed(new History.Claim(2, "b", "p-b", 30 * MS, 1_030));
    h.ended(txn(2, 2, "b", 40, 41, End.COMMITTED, 2, 1_040));
    return h;
  }

  private static List<Branch> branches(List<History.Violation> v) {
    return v.stream().map(History.Violation::branch).toList();
  }

  @Test
  void aCleanHandOverHasNoViolation() {
    assertEquals(List.of(), cleanHandOver().check(3, Map.of(1L, 3L, 2L, 3L)));
  }

  @Test
  void aTermWithTwoHoldersIsCaught() {
    History h = new History();
    h.claimed(new History.Claim(7, "holder-a", "p1", 1, -1));
    h.claimed(new History.Claim(7, "holder-b", "p2", 2, -1));
    List<History.Violation> v = h.check(3, Map.of());
    assertEquals(List.of(Branch.TWO_HOLDERS), branches(v), v.toString());
    assertTrue(v.get(0).message().startsWith("invariant 1: term 7 has two holders"), v.toString());
  }

  @Test
  void aCommitSentAfterTheNextClaimCompletedIsCaught() {
    History h = cleanHandOver();
    // term 1's commit left the process at 35 ms, after term 2's claim completed at 30 ms
    h.ended(txn(3, 1, "a", 35, 36, End.COMMITTED, 1, 1_020));
    List<History.Violation> v = h.check(3, Map.of(1L, 3L, 2L, 3L, 3L, 3L));
    assertEquals(List.of(Branch.COMMIT_AFTER_CLAIM), branches(v), v.toString());
    assertTrue(
        v.get(0).message().contains("committed 5 ms after the claim of term 2"), v.toString());
  }

  @Test
  void aCommitOverlappingTheClaimInRealTimeIsNotJudgedByRealTime() {
    History h = cleanHandOver();
    // sent at 25 ms, before the claim completed at 30 ms: the order is unknown, so not a violation
    h.ended(txn(3, 1, "a", 25, 36, End.COMMITTED, 1, 1_020));
    assertEquals(List.of(), h.check(3, Map.of(1L, 3L, 2L, 3L, 3L, 3L)));
  }

  @Test
  void aLastStatementAfterTheNextClaimOnTheDatabaseClockIsCaught() {
    History h = new History();
    h.claimed(new History.Claim(1, "a", "p1", 10, 1_000));
    h.claimed(new History.Claim(2, "b", "p2", 20, 2_000));
    // real-time order unknown (sent before the claim completed), database time after it
    h.ended(new History.Transaction(1, 1, "a", "p1", 5, 6, 15, 30, End.COMMITTED, 1, 2_001, null));
    List<History.Violation> v = h.check(3, Map.of(1L, 3L));
    assertEquals(List.of(Branch.COMMIT_AFTER_CLAIM_DATABASE_TIME), branches(v), v.toString());
    assertTrue(
        v.get(0).message().contains("database time 2001, 1 ms after the claim of term 2"),
        v.toString());
  }

  @Test
  void aCommittedTransactionThatSawALaterTermIsCaught() {
    History h = cleanHandOver();
    h.ended(txn(3, 1, "a", 25, 26, End.COMMITTED, 2, -1));
    List<History.Violation> v = h.check(3, Map.of(1L, 3L, 2L, 3L, 3L, 3L));
    assertEquals(List.of(Branch.SAW_LATER_TERM), branches(v), v.toString());
    assertTrue(v.get(0).message().contains("saw term 2 in the lease row"), v.toString());
  }

  @Test
  void aTransactionPartlyInTheDatabaseIsCaughtWhateverItsEnd() {
    History h = new History();
    h.claimed(new History.Claim(1, "a", "p1", 1, -1));
    h.ended(txn(1, 1, "a", 0, 20, End.FAILED, -1, -1));
    h.ended(txn(2, 1, "a", 20, 21, End.COMMITTED, 1, -1));
    h.ended(txn(3, 1, "a", 30, 31, End.UNKNOWN, -1, -1));
    h.ended(txn(4, 1, "a", 40, 41, End.UNKNOWN, -1, -1));
    // failed with 1 row, committed with 2, unknown with 1 (unknown may be 0 or 3, whole)
    List<History.Violation> v = h.check(3, Map.of(1L, 1L, 2L, 2L, 3L, 1L, 4L, 3L));
    assertEquals(
        List.of(Branch.HALF_APPLIED, Branch.HALF_APPLIED, Branch.HALF_APPLIED),
        branches(v),
        v.toString());
    assertEquals(
        "invariant 4: transaction 1 ended FAILED with 1 of its 3 rows in the database",
        v.get(0).message());
  }

  @Test
  void aTakeoverWhileAVerifiedTransactionIsOpenIsCountedWithTheCommitsAroundIt() {
    History h = cleanHandOver();
    // term 1's transaction verified at 10 ms is still open when term 2's claim completes at 30 ms
    h.ended(txn(3, 1, "a", 0, 50, End.FAILED, -1, -1));
    History.Events e = h.events(1_000 * MS, 100 * MS);
    assertEquals(1, e.takeoversAcrossOpenTransactions());
    assertEquals(0, e.claimsThatWaited());
    assertEquals(1, e.commitsBefore());
    assertEquals(1, e.commitsAfter());
  }

  @Test
  void aClaimThatWaitedPastTheLeaseForAFrozenHolderIsCounted() {
    History h = cleanHandOver();
    h.ended(txn(3, 1, "a", 0, 3_000, End.COMMITTED, 1, -1));
    h.paused(new History.Pause("p-a", 3, 100 * MS, 2_500 * MS));
    // waiting from 1,000 to 1,600 ms: past the lease's end (100 + 1,000 + 100 ms of slack)
    h.waited(new History.Attempt("p-b", 1_000 * MS, 1_600 * MS));
    // another process's attempt before the lease ended does not count, nor the holder's own
    h.waited(new History.Attempt("p-b", 200 * MS, 800 * MS));
    h.waited(new History.Attempt("p-a", 1_500 * MS, 2_000 * MS));
    assertEquals(1, h.events(1_000 * MS, 100 * MS).claimsThatWaited());
    // a pause shorter than the lease is not the event
    History shortPause = cleanHandOver();
    shortPause.ended(txn(3, 1, "a", 0, 3_000, End.COMMITTED, 1, -1));
    shortPause.paused(new History.Pause("p-a", 3, 100 * MS, 900 * MS));
    shortPause.waited(new History.Attempt("p-b", 500 * MS, 950 * MS));
    assertEquals(0, shortPause.events(1_000 * MS, 100 * MS).claimsThatWaited());
  }
}

package dev.lease.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.testing.TestDatabase;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Methods mode ends a method's lease in lease-core's order, in one JVM of the legacy application
 * with two configured methods: {@code Jobs#nightly} (interrupted, it records its cleanup in one
 * more fenced transaction and returns) and {@code Jobs#stubborn} (ignores interrupts).
 *
 * <ul>
 *   <li>A loss (another process takes the lease over in the database) interrupts the method at
 *       once; its cleanup transaction is refused; it returns, the interrupt cleared for its caller,
 *       and the JVM runs on. A method that does not return halts the JVM with status 70 once the
 *       grace period has passed, through lease-core's failure policy.
 *   <li>A shutdown (SIGTERM) interrupts the running methods and waits for them before it releases
 *       their leases: the cleanup transaction commits under the lease it still holds; a method that
 *       does not return is given up on after the grace period, and the JVM exits as signalled, not
 *       with 70 (a release is not a loss); both leases are released.
 * </ul>
 *
 * Negative controls break the real mechanism: without binding the method's thread to its lease the
 * loss does not stop it; with lease-core's release-before-stopping and policy-on-release faults the
 * cleanup is refused and the shutdown halts the JVM.
 */
class MethodLifecycleIT {

  private static final String NIGHTLY = "nightly-job";
  private static final String STUBBORN = "stubborn-job";

  /** SIGTERM's exit status: the JVM ran its shutdown hooks and exited as signalled. */
  private static final int TERMINATED = 143;

  private static AppProcess start(LegacyDatabase d, List<String> jvmOptions) {
    String args =
        d.agentArgs(
            "mode=methods,methods=legacy.Jobs#nightly="
                + NIGHTLY
                + ";legacy.Jobs#stubborn="
                + STUBBORN
                + ","
                + LeaderModeIT.timings(d.db)
                + ",grace-period=1s,instance=A");
    return AppProcess.start(
        "A",
        AppProcess.JAVA_17,
        args,
        java.util.Map.of(),
        jvmOptions,
        false,
        legacy.LegacyApp.class.getName(),
        "jobs",
        d.url,
        d.events,
        "A");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("dev.lease.agent.LegacyDatabase#databases")
  void aLostMethodIsStoppedAndRefusedAndAShutdownStopsMethodsBeforeReleasing(TestDatabase db)
      throws Exception {
    try (LegacyDatabase d = new LegacyDatabase(db);
        AppProcess a = start(d, List.of())) {
      a.awaitLine(l -> l.equals("STARTED"), "the start of A");

      // a loss: nightly is interrupted at once, its cleanup refused, and the JVM runs on
      Lost lost = loseWhileRunning(d, a, 1);
      assertTrue(lost.interrupted(), "the lost method was not interrupted" + a.describe());
      assertTrue(
          lost.cleanup().startsWith("JOB-CLEANUP 1 REFUSED")
              && lost.cleanup().contains("LeaseLost"),
          lost.cleanup() + a.describe());
      assertEquals(0, d.runs(-1), "the lost method's cleanup committed");
      assertTrue(lost.returned().endsWith("interrupted=false"), "flag left set: " + lost);
      d.expire(NIGHTLY);

      // a shutdown: both methods interrupted, nightly's cleanup commits before its release
      Shutdown s = shutDownWhileRunning(d, a, 2, 3);
      assertEquals(TERMINATED, s.exit(), "exit status" + a.describe());
      assertTrue(s.cleanup().equals("JOB-CLEANUP 2 COMMITTED"), s + a.describe());
      assertEquals(1, d.runs(-2), "the stopped method's cleanup row");
      assertTrue(a.lines().contains("JOB-INTERRUPTED 3 (ignored)"), a.describe());
      assertEquals(0L, d.expiresAt(NIGHTLY).orElseThrow(), "nightly's lease released");
      assertEquals(0L, d.expiresAt(STUBBORN).orElseThrow(), "stubborn's lease released");
      assertFalse(a.stderr().contains("halting"), a.describe());
      System.out.println(db + ": loss " + lost + "; shutdown " + s);
    }
  }

  @Test
  void aLostMethodThatDoesNotReturnHaltsTheJvmAfterTheGracePeriod_postgresql() throws Exception {
    try (LegacyDatabase d = new LegacyDatabase(TestDatabase.POSTGRESQL);
        AppProcess a = start(d, List.of())) {
      a.awaitLine(l -> l.equals("STARTED"), "the start of A");
      a.send("stubborn 1");
      a.awaitLine(l -> l.equals("JOB-STARTED 1"), "the start of stubborn 1");
      long term = d.holder(STUBBORN).orElseThrow().term();
      d.releaseAndHoldElsewhere(STUBBORN);
      a.awaitLine(l -> l.equals("JOB-INTERRUPTED 1 (ignored)"), "the interrupt of stubborn 1");
      assertEquals(LostLeasePolicy.EXIT_LOST, a.awaitExit(), a.describe());
      assertTrue(
          a.stderr()
              .contains(
                  "lease-agent: lease "
                      + STUBBORN
                      + " term "
                      + term
                      + " was lost while legacy.Jobs#stubborn ran on thread trigger-1, which did"
                      + " not return within the grace period of 1000 ms after it was interrupted;"
                      + " halting the JVM (status 70)"),
          a.describe());
      assertEquals(1, count(a.stderr(), "halting the JVM"), "the policy ran once" + a.describe());
    }
  }

  /** Negative control: a method whose thread is not bound to its lease runs on after the loss. */
  @Test
  void withoutBindingTheMethodsThreadALostMethodRunsOn_postgresql() throws Exception {
    try (LegacyDatabase d = new LegacyDatabase(TestDatabase.POSTGRESQL);
        AppProcess a = start(d, List.of("-Dlease.agent.testing.disable=bind-method-thread"))) {
      a.awaitLine(l -> l.equals("STARTED"), "the start of A");
      a.send("trigger 1");
      int started = a.awaitLine(l -> l.equals("JOB-STARTED 1"), "the start of nightly 1");
      d.releaseAndHoldElsewhere(NIGHTLY);
      a.awaitStderr(0, "lost lease " + NIGHTLY, "the loss of nightly's lease");
      a.send("release 1"); // nothing else will end it
      a.awaitLine(started, l -> l.startsWith("JOB-RETURNED 1 "), "the return of nightly 1");
      assertFalse(
          a.lines().contains("JOB-INTERRUPTED 1"),
          "the check missed a lost method that was never interrupted" + a.describe());
    }
  }

  /**
   * Negative control: lease-core's release gives the row back before it stops the work, and runs
   * the failure policy for work that did not stop: the cleanup is refused, the shutdown halts.
   */
  @Test
  void withReleaseBeforeStoppingTheCleanupIsRefusedAndTheShutdownHalts_postgresql()
      throws Exception {
    try (LegacyDatabase d = new LegacyDatabase(TestDatabase.POSTGRESQL);
        AppProcess a =
            start(
                d,
                List.of(
                    "-Dlease.agent.testing.faults=RELEASE_BEFORE_STOPPING_WORK,POLICY_ON_RELEASE"))) {
      a.awaitLine(l -> l.equals("STARTED"), "the start of A");
      Shutdown s = shutDownWhileRunning(d, a, 2, 3);
      assertNotEquals("JOB-CLEANUP 2 COMMITTED", s.cleanup(), "the check missed it" + a.describe());
      assertNotEquals(TERMINATED, s.exit(), "the check missed the halt" + a.describe());
      System.out.println("broken release order: " + s);
    }
  }

  record Lost(boolean interrupted, String cleanup, String returned) {}

  /** Starts nightly {@code n}, takes its lease over in the database, waits for its return. */
  private static Lost loseWhileRunning(LegacyDatabase d, AppProcess a, int n) throws Exception {
    a.send("trigger " + n);
    int started = a.awaitLine(l -> l.equals("JOB-STARTED " + n), "the start of nightly " + n);
    d.releaseAndHoldElsewhere(NIGHTLY);
    int returned =
        a.awaitLine(started, l -> l.startsWith("JOB-RETURNED " + n + " "), "the return after loss");
    List<String> lines = a.lines().subList(started, returned + 1);
    return new Lost(
        lines.contains("JOB-INTERRUPTED " + n),
        lines.stream().filter(l -> l.startsWith("JOB-CLEANUP " + n)).findFirst().orElse("none"),
        a.lines().get(returned));
  }

  record Shutdown(int exit, String cleanup) {}

  /** Starts nightly {@code n} and stubborn {@code m}, then SIGTERM; waits for the JVM's end. */
  private static Shutdown shutDownWhileRunning(LegacyDatabase d, AppProcess a, int n, int m)
      throws Exception {
    a.send("trigger " + n);
    a.awaitLine(l -> l.equals("JOB-STARTED " + n), "the start of nightly " + n);
    a.send("stubborn " + m);
    a.awaitLine(l -> l.equals("JOB-STARTED " + m), "the start of stubborn " + m);
    a.terminate();
    int exit = a.awaitExit();
    String cleanup =
        a.lines().stream().filter(l -> l.startsWith("JOB-CLEANUP " + n)).findFirst().orElse("none");
    return new Shutdown(exit, cleanup);
  }

  private static int count(String text, String what) {
    int n = 0;
    for (int i = text.indexOf(what); i >= 0; i = text.indexOf(what, i + 1)) {
      n++;
    }
    return n;
  }
}

package dev.lease.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.lease.testing.TestDatabase;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Methods mode with two JVMs of the legacy application, both configured with {@code
 * methods=legacy.Jobs#nightly=...}: every trigger reaches both, and the job runs once across them.
 * The run that wins keeps running (holding its lease) until the test has seen the other skip, so
 * the outcome never depends on timing. The negative control runs both without the agent: the same
 * count then sees the job run twice per trigger.
 */
class MethodsModeIT {

  private static final int TRIGGERS = 3;

  /**
   * 5 s: nothing here waits for an expiry (a run releases its lease when the method returns), and
   * with 2 s a loaded machine (load average 10) starved the keeper's renewal on SQLite past the 1.3
   * s local deadline while the other JVM's claim attempts took the database's write lock, so the
   * job's own transaction was refused.
   */
  private static String methodsArgs(LegacyDatabase d, String instance) {
    return d.agentArgs(
        "mode=methods,methods=legacy.Jobs#nightly=nightly-job,lease-duration=5s,"
            + "instance="
            + instance);
  }

  @ParameterizedTest(name = "{0} java {1}")
  @MethodSource("dev.lease.agent.LeaderModeIT#everyDatabaseOnBothJdks")
  void configuredJobRunsOncePerTriggerAcrossTwoJvms(TestDatabase db, String version)
      throws Exception {
    String java = LeaderModeIT.java(version);
    try (LegacyDatabase d = new LegacyDatabase(db);
        AppProcess a =
            AppProcess.start("A", java, methodsArgs(d, "A"), "jobs", d.url, d.events, "A")) {
      a.awaitLine(l -> l.equals("STARTED"), "the start of A"); // A's agent created the lease table
      try (AppProcess b =
          AppProcess.start("B", java, methodsArgs(d, "B"), "jobs", d.url, d.events, "B")) {
        b.awaitLine(l -> l.equals("STARTED"), "the start of B");
        for (int n = 1; n <= TRIGGERS; n++) {
          int runs = trigger(n, a, b);
          assertEquals(
              1, runs, "trigger " + n + " ran " + runs + " times" + a.describe() + b.describe());
          assertEquals(1, d.runs(n), "rows of trigger " + n);
        }
      }
    }
  }

  /** Negative control: without the agent both JVMs run every trigger, and the count sees it. */
  @ParameterizedTest(name = "{0}")
  @MethodSource("dev.lease.agent.LegacyDatabase#databases")
  void withoutTheAgentBothJvmsRunTheJob(TestDatabase db) throws Exception {
    try (LegacyDatabase d = new LegacyDatabase(db);
        AppProcess a =
            AppProcess.start("A", AppProcess.JAVA_17, null, "jobs", d.url, d.events, "A");
        AppProcess b =
            AppProcess.start("B", AppProcess.JAVA_17, null, "jobs", d.url, d.events, "B")) {
      a.awaitLine(l -> l.equals("STARTED"), "the start of A");
      b.awaitLine(l -> l.equals("STARTED"), "the start of B");
      assertEquals(2, trigger(1, a, b), "without the agent the job should run in both JVMs");
      assertEquals(2, d.runs(1), "rows of trigger 1");
    }
  }

  /**
   * Sends trigger {@code n} to both, waits until each has either started the job or returned from a
   * skipped call, releases the started runs and waits for them to return.
   *
   * @return how many of the two ran the job
   */
  private static int trigger(int n, AppProcess a, AppProcess b) throws Exception {
    int fromA = a.lines().size();
    int fromB = b.lines().size();
    a.send("trigger " + n);
    b.send("trigger " + n);
    int runs = 0;
    for (AppProcess p : List.of(a, b)) {
      int from = p == a ? fromA : fromB;
      int i =
          p.awaitLine(
              from,
              l ->
                  l.equals("JOB-STARTED " + n) || l.startsWith("JOB-RETURNED " + n + " ran=false "),
              "the start or skip of trigger " + n);
      if (p.lines().get(i).startsWith("JOB-STARTED")) {
        runs++;
      }
    }
    for (AppProcess p : List.of(a, b)) {
      p.send("release " + n);
    }
    for (AppProcess p : List.of(a, b)) {
      int from = p == a ? fromA : fromB;
      p.awaitLine(from, l -> l.startsWith("JOB-RETURNED " + n + " "), "the return of trigger " + n);
    }
    return runs;
  }
}

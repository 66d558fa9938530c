package dev.lease.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.lease.testing.TestDatabase;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A measurement, not a timing test (nothing about the numbers is asserted): the legacy
 * application's time from JVM start to its first query (HikariCP, SELECT 1), without and with the
 * agent in leader mode, runs interleaved. Prints the medians and writes them to
 * target/startup-cost-DB.txt; docs/benchmarks.md quotes a run.
 *
 * <p>A long run (ten JVMs), so not part of {@code mvn verify}: run it with {@code mvn -B -ntp -pl
 * lease-agent -am verify -Dlease.agent.measure=true -Dit.test=StartupCostIT -Dtest=NONE
 * -Dsurefire.failIfNoSpecifiedTests=false}.
 */
@EnabledIfSystemProperty(named = "lease.agent.measure", matches = "true")
class StartupCostIT {

  private static final int RUNS = 5;

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  void measureTimeToFirstQueryWithAndWithoutTheAgent(TestDatabase db) throws Exception {
    try (LegacyDatabase d = new LegacyDatabase(db)) {
      List<Long> without = new ArrayList<>();
      List<Long> with = new ArrayList<>();
      List<Long> wallWithout = new ArrayList<>();
      List<Long> wallWith = new ArrayList<>();
      String agent = d.agentArgs("mode=leader,lease=startup,log-level=warn");
      for (int i = 0; i < RUNS; i++) {
        measure(null, d, without, wallWithout);
        measure(agent, d, with, wallWith);
      }
      String report =
          String.format(
              "%s, %d runs each, medians: JVM start to first query %d ms"
                  + " without the agent, %d ms with it (+%d ms); process start to first query %d ms /"
                  + " %d ms; all runs without %s, with %s (ms, JVM uptime)",
              db,
              RUNS,
              median(without),
              median(with),
              median(with) - median(without),
              median(wallWithout),
              median(wallWith),
              without,
              with);
      System.out.println("startup cost: " + report);
      write(db, report);
    }
  }

  static List<TestDatabase> databases() {
    return List.of(TestDatabase.POSTGRESQL);
  }

  private static void measure(
      String agentArgs, LegacyDatabase d, List<Long> uptimes, List<Long> walls) throws Exception {
    long start = System.nanoTime();
    AppProcess app =
        AppProcess.start(
            "startup", AppProcess.JAVA_17, agentArgs, Map.of(), "first-query", d.url, "hikari");
    int i = app.awaitLine(l -> l.startsWith("FIRST-QUERY "), "the first query");
    walls.add((System.nanoTime() - start) / 1_000_000);
    uptimes.add(Long.parseLong(app.lines().get(i).substring("FIRST-QUERY ".length())));
    assertEquals(0, app.awaitExit(), app.describe());
  }

  private static long median(List<Long> values) {
    List<Long> sorted = new ArrayList<>(values);
    Collections.sort(sorted);
    return sorted.get(sorted.size() / 2);
  }

  private static void write(TestDatabase db, String report) throws IOException {
    Path dir = Path.of("target");
    if (Files.isDirectory(dir)) {
      Files.writeString(dir.resolve("startup-cost-" + db + ".txt"), report + "\n");
    }
  }
}

package dev.lease.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.testing.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import legacy.LegacyApp;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * What the agent loads before the application's first query (issue 37), read from the JVM's own
 * class-loading log rather than timed: the agent's transformer is its own, so none of ByteBuddy's
 * {@code AgentBuilder} classes load (its generated transformer cost a third of the start), while
 * ByteBuddy's {@code Advice} does (the control that the log is read right: the weaving ran, with
 * the library the agent weaves with). A deterministic guard of the start-up measured in
 * docs/benchmarks.md, which wall-clock assertions could not be on a shared machine. Checked by hand
 * against the agent jar before issue 37's transformer ({@code -Dlease.agent.jar=OLD.jar}): 113
 * {@code AgentBuilder} classes, both databases fail.
 */
class StartupClassesIT {

  private static final String SHADED = "dev.lease.agent.shaded.bytebuddy.";

  @ParameterizedTest(name = "{0}")
  @MethodSource("databases")
  void noAgentBuilderClassLoadsBeforeTheFirstQuery(TestDatabase db) throws Exception {
    Path log = Files.createTempFile("lease-agent-classes", ".log");
    try (LegacyDatabase d = new LegacyDatabase(db);
        AppProcess app =
            AppProcess.start(
                "classes",
                AppProcess.JAVA_17,
                d.agentArgs("mode=leader,lease=startup-classes,log-level=warn"),
                Map.of(),
                List.of("-Xlog:class+load=info:file=" + log),
                false,
                LegacyApp.class.getName(),
                "first-query",
                d.url,
                "plain")) {
      app.awaitLine(l -> l.startsWith("FIRST-QUERY "), "the first query");
      assertEquals(0, app.awaitExit(), app.describe());
      List<String> byteBuddy =
          Files.readAllLines(log).stream()
              .filter(l -> l.contains(" " + SHADED))
              .map(l -> l.substring(l.indexOf(SHADED) + SHADED.length()).split(" ")[0])
              .collect(Collectors.toList());
      assertTrue(
          byteBuddy.contains("asm.Advice"),
          db + ": the woven driver's advice was made with ByteBuddy's Advice: " + byteBuddy.size());
      List<String> agentBuilder =
          byteBuddy.stream()
              .filter(c -> c.startsWith("agent.builder."))
              .collect(Collectors.toList());
      assertTrue(
          agentBuilder.isEmpty(),
          db
              + ": "
              + agentBuilder.size()
              + " of ByteBuddy's AgentBuilder classes loaded at start, among them "
              + agentBuilder.subList(0, Math.min(5, agentBuilder.size())));
    } finally {
      Files.deleteIfExists(log);
    }
  }

  static List<TestDatabase> databases() {
    return List.of(TestDatabase.POSTGRESQL, TestDatabase.MARIADB);
  }
}

package dev.lease.conformance.runner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.conformance.PropertyResult;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code --campaign} (issue 38): a smoke test of a few seconds on embedded SQLite (the campaigns
 * themselves run outside CI: docs/conformance.md), the goal's grammar, and a violation's replay
 * line at the top of the report.
 */
class CampaignTest {

  private static ConformanceRunnerTest.Run run(String... args) {
    return ConformanceRunnerTest.run(args);
  }

  @Test
  @DisplayName("sqlite: a campaign of a few seconds writes its report and ends with the controls")
  void aShortCampaignReportsInMarkdownAndJson(@TempDir Path dir) throws Exception {
    Path report = dir.resolve("r");
    ConformanceRunnerTest.Run r =
        run("--campaign", "2s", "--only", "model", "--report", report.toString(), "--seed", "7");
    assertEquals(Main.HOLDS, r.exit(), r.out() + r.err());
    assertTrue(r.out().contains("campaign 0:00:"), r.out());
    assertTrue(r.out().contains("campaign: controls "), r.out());
    assertTrue(r.out().contains("campaign held after "), r.out());
    String md = Files.readString(Path.of(report + ".md"));
    assertTrue(md.contains("| model | sqlite (virtual time) | holds |"), md);
    assertTrue(md.contains("| campaign seed | 7 "), md);
    assertTrue(md.contains("takeovers of an expired lease"), md);
    String json = Files.readString(Path.of(report + ".json"));
    assertTrue(json.contains("\"status\": 0"), json);
    assertTrue(json.contains("\"id\": \"model\""), json);
    assertTrue(json.contains(" caught"), json);
    assertTrue(!(r.out() + r.err()).contains("\u001b"), "no escape codes");
  }

  @Test
  @DisplayName("sqlite: a campaign of counts stops once they are reached")
  void aCampaignOfCountsStopsAtThem(@TempDir Path dir) {
    ConformanceRunnerTest.Run r =
        run(
            "--campaign",
            "schedules=60,fault-runs=2",
            "--only",
            "paused-holder,group",
            "--report",
            dir.resolve("r").toString());
    assertEquals(Main.HOLDS, r.exit(), r.out() + r.err());
    // paused-holder's 2 rounds per run reach 2 fault runs at once; group's 25 schedules per run
    // need 3 runs: rounds 2 and 3 run group alone (what has not reached its count)
    assertTrue(r.out().contains("3 rounds (its counts were reached)"), r.out());
    assertTrue(r.out().contains("paused-holder 1×2, group 3×75"), r.out());
  }

  @Test
  void aBadGoalIsBadInputSayingWhatIsAccepted() {
    for (String spec : List.of("5x", "schedules=0", "fault-runs=many", "speed=1", "")) {
      ConformanceRunnerTest.Run r = run("--campaign", spec);
      assertEquals(Main.BAD_INPUT, r.exit(), spec + ": " + r.err());
      assertTrue(r.err().contains("--campaign") || r.err().contains("needs"), r.err());
      assertEquals("", r.out(), "nothing runs on bad input");
    }
    assertEquals(Main.BAD_INPUT, run("--report", "x").exit());
    assertEquals(Main.BAD_INPUT, run("--campaign", "1m", "--controls").exit());
    Campaign.Goal g = Campaign.Goal.parse("duration=2h,schedules=100000,fault-runs=1000");
    assertEquals(new Campaign.Goal(Duration.ofHours(2), 100_000, 1_000), g);
    assertThrows(IllegalArgumentException.class, () -> Campaign.Goal.parse("2d"));
  }

  @Test
  void aViolationPutsItsReplayLineAtTheTopAndTheCampaignFails(@TempDir Path dir) throws Exception {
    PropertyResult broken =
        new PropertyResult(
            "model",
            "sqlite (virtual time)",
            10,
            3,
            List.of(new PropertyResult.Count("takeovers", 5, 1)),
            1,
            "violation: two holders of term 4",
            null,
            20);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    Campaign c =
        new Campaign(
            new Campaign.Goal(null, 0, 5),
            List.of(new Main.Item(0, "model", false)),
            (items, seed, round, sink) -> {
              Main.Row row = new Main.Row("model", "sqlite (virtual time)");
              row.result = broken;
              return List.of(row);
            },
            42,
            "java -jar lease-conformance.jar --campaign fault-runs=5",
            "sqlite",
            "SQLite",
            dir.resolve("r"),
            new PrintStream(out, true, StandardCharsets.UTF_8));
    assertEquals(Main.VIOLATED, c.run(null, List.of()));
    String md = Files.readString(dir.resolve("r.md"));
    int violations = md.indexOf("**VIOLATIONS**");
    assertTrue(violations > 0 && violations < md.indexOf("| command |"), md);
    assertTrue(
        md.contains("--seed " + Campaign.roundSeed(42, 0) + " --only model`: violation: two"), md);
  }
}

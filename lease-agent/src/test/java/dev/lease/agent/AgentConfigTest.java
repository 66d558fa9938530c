package dev.lease.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.LeaseTimings;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AgentConfigTest {

  private static final Map<String, String> NO_ENV = Map.of();

  private static AgentConfig parse(String args) {
    return AgentConfig.parse(args, NO_ENV::get);
  }

  private static String error(String args) {
    return assertThrows(BadConfigurationException.class, () -> parse(args)).getMessage();
  }

  @Test
  void leaderModeWithDefaults() {
    AgentConfig c = parse("mode=leader,lease=billing,url=jdbc:postgresql://db/app");
    assertEquals(AgentConfig.Mode.LEADER, c.mode);
    assertEquals("billing", c.leaseName);
    assertEquals("leases", c.table);
    assertEquals(AgentConfig.Fencing.STRICT, c.fencing);
    assertFalse(c.createTable);
    assertEquals(Duration.ofSeconds(15), c.timings.leaseDuration());
    assertEquals(Duration.ofSeconds(2), c.timings.renewInterval());
    assertEquals(Duration.ofSeconds(10), c.timings.localDeadline());
  }

  @Test
  void leaseDurationAloneScalesTheOtherTimings() {
    AgentConfig c = parse("mode=leader,lease=l,url=jdbc:sqlite:x.db,lease-duration=3s");
    assertEquals(Duration.ofMillis(400), c.timings.renewInterval());
    assertEquals(Duration.ofMillis(1000), c.timings.attemptTimeout());
    assertEquals(Duration.ofMillis(2000), c.timings.localDeadline());
  }

  @Test
  void leaseDurationDerivesAsLeaseCoreDoes() {
    for (String d : new String[] {"1s", "2s", "7s", "15s", "45s", "10m"}) {
      AgentConfig c = parse("mode=leader,lease=l,url=jdbc:sqlite:x.db,lease-duration=" + d);
      assertEquals(LeaseTimings.of(c.timings.leaseDuration()).toString(), c.timings.toString(), d);
    }
  }

  @Test
  void inconsistentTimingsNameTheBrokenRelation() {
    String m =
        error("mode=leader,lease=l,url=jdbc:sqlite:x.db,lease-duration=2s,local-deadline=5s");
    assertTrue(m.contains("localDeadline") && m.contains("lease-duration"), m);
  }

  @Test
  void methodsModeParsesEverySpec() {
    AgentConfig c =
        parse(
            "mode=methods,url=jdbc:sqlite:x.db,"
                + "methods=com.acme.Jobs#nightly=billing; com.acme.Jobs$Inner#hourly=reports");
    assertEquals(
        List.of(
            new MethodSpec("com.acme.Jobs", "nightly", "billing"),
            new MethodSpec("com.acme.Jobs$Inner", "hourly", "reports")),
        c.methods);
  }

  @Test
  void commasInsideAValueSurvive() {
    AgentConfig c = parse("mode=leader,lease=l,url=jdbc:mysql://h1,h2/app?user=u,table=t");
    assertEquals("jdbc:mysql://h1,h2/app?user=u", c.url);
    assertEquals("t", c.table);
  }

  @Test
  void missingUrlSaysWhereToSetIt() {
    String m = error("mode=leader,lease=l");
    assertTrue(m.contains("missing url") && m.contains("LEASE_AGENT_URL"), m);
  }

  @Test
  void urlAndPasswordComeFromTheEnvironment() {
    AgentConfig c =
        AgentConfig.parse(
            "mode=leader,lease=l",
            Map.of("LEASE_AGENT_URL", "jdbc:postgresql://db/app", "LEASE_AGENT_PASSWORD", "s3cret")
                ::get);
    assertEquals("jdbc:postgresql://db/app", c.url);
    assertEquals("s3cret", c.password);
    assertFalse(c.toString().contains("s3cret"), c.toString());
  }

  @Test
  void unknownModeAndUnknownKeyAreRefused() {
    assertTrue(error("mode=follower,lease=l,url=jdbc:x:y").contains("unknown mode 'follower'"));
    String m = error("mode=leader,lease=l,url=jdbc:x:y,tabel=t");
    assertTrue(m.contains("unknown key 'tabel'") && m.contains("table"), m);
  }

  @Test
  void badMethodSpecsAreRefused() {
    for (String spec :
        List.of(
            "com.acme.Jobs.nightly=billing",
            "com.acme.Jobs#nightly",
            "com.acme.Jobs#=billing",
            "#nightly=billing",
            "com.acme.Jobs#nightly=",
            "com acme.Jobs#nightly=b",
            "com.acme.Jobs#<init>=b")) {
      String m = error("mode=methods,url=jdbc:x:y,methods=" + spec);
      assertTrue(m.startsWith("bad method spec"), spec + " -> " + m);
    }
  }

  @Test
  void modeSpecificKeysAreNotMixed() {
    assertTrue(error("mode=leader,url=jdbc:x:y").contains("missing lease"));
    assertTrue(
        error("mode=methods,url=jdbc:x:y,lease=l,methods=a.B#c=d").contains("lease is a key"));
    assertTrue(error("mode=methods,url=jdbc:x:y").contains("missing methods"));
  }

  @Test
  void passwordsNeverAppearInMessages() {
    String m = error("mode=leader,lease=l,url=postgresql://u:hunter2@db/app?password=hunter2");
    assertFalse(m.contains("hunter2"), m);
    assertEquals(
        "jdbc:postgresql://u:****@db/app?password=****&x=1",
        Secrets.redactUrl("jdbc:postgresql://u:pw@db/app?password=hunter2&x=1"));
  }

  @Test
  void configFileIsReadAndArgumentsWin(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("agent.properties");
    Files.writeString(file, "mode=leader\nlease=from-file\nurl=jdbc:sqlite:x.db\ntable=t1\n");
    AgentConfig c = parse("config=" + file + ",table=t2");
    assertEquals("from-file", c.leaseName);
    assertEquals("t2", c.table);
    assertTrue(error("config=" + dir.resolve("missing.properties")).contains("does not exist"));
  }

  @Test
  void leaderModeHaltsAfterALossByDefaultAndCanRefuseInstead() {
    assertEquals(AgentConfig.OnLoss.HALT, parse("mode=leader,lease=l,url=jdbc:sqlite:x.db").onLoss);
    assertEquals(
        AgentConfig.OnLoss.REFUSE,
        parse("mode=leader,lease=l,url=jdbc:sqlite:x.db,on-loss=refuse").onLoss);
    String m = error("mode=leader,lease=l,url=jdbc:sqlite:x.db,on-loss=ignore");
    assertTrue(m.contains("on-loss 'ignore' must be one of halt, refuse"), m);
    m = error("mode=methods,url=jdbc:sqlite:x.db,methods=a.B#c=d,on-loss=refuse");
    assertTrue(m.contains("on-loss is a key of leader mode"), m);
  }

  @Test
  void unfencedJdbcClassesStopTheJvmUnlessTheRiskIsAccepted() {
    assertEquals(
        AgentConfig.OnUnfenced.HALT, parse("mode=leader,lease=l,url=jdbc:sqlite:x.db").onUnfenced);
    assertEquals(
        AgentConfig.OnUnfenced.LOG,
        parse("mode=leader,lease=l,url=jdbc:sqlite:x.db,on-unfenced=log").onUnfenced);
    String m = error("mode=leader,lease=l,url=jdbc:sqlite:x.db,on-unfenced=maybe");
    assertTrue(m.contains("on-unfenced 'maybe' must be one of halt, log"), m);
  }

  @Test
  void missingTableAdviceNamesTheAgentsKey() {
    String core =
        "lease table leases does not exist in this PostgreSQL database; create it with"
            + " LeaseManager.builder(...).createTableIfMissing(), or apply LeaseManager.ddl(...)";
    String advice = LeaseAgent.agentAdvice(core);
    assertTrue(advice.startsWith("lease table leases does not exist in this PostgreSQL"), advice);
    assertTrue(advice.contains("start the agent with create-table=true"), advice);
    assertFalse(advice.contains("LeaseManager"), advice);
  }
}

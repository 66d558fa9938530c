package dev.lease.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.testing.TestDatabase;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import modern.ConnectionKinds;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The application's connection is fenced once, at the outermost getConnection, counted from the
 * agent's debug log (one line per connection it hands out) while {@link ConnectionKinds} gets N
 * connections each way:
 *
 * <ul>
 *   <li>DriverManager: one wrap of the driver's connection (through the driver's bridge method
 *       where its connect returns its own Connection type, as MariaDB's does);
 *   <li>HikariCP (over its DriverDataSource over Driver.connect): one wrap of HikariCP's proxy and
 *       none of the physical connections, so the pool's validation and reset statements are never
 *       fenced;
 *   <li>the application's own delegating DataSource over HikariCP: one wrap, at the top;
 *   <li>lease-jdbc's FencedDataSource over HikariCP: already fenced, handed back unchanged.
 * </ul>
 *
 * The negative control breaks the depth counter on purpose: the count must see the inner wraps.
 */
class WrapOnceIT {

  private static final int N = 2;
  private static final Pattern HANDED_OUT =
      Pattern.compile("handing out (a fenced connection|an already fenced connection) for (\\S+)");
  private static final String HIKARI =
      "a fenced connection com.zaxxer.hikari.pool.HikariProxyConnection";

  private static AppProcess run(LegacyDatabase d, List<String> jvmOptions) throws Exception {
    AppProcess app =
        AppProcess.start(
            "app",
            AppProcess.JAVA_17,
            d.agentArgs("mode=leader,lease=wrap-once,log-level=debug"),
            Map.of(),
            jvmOptions,
            true,
            ConnectionKinds.class.getName(),
            d.url,
            Integer.toString(N));
    assertEquals(0, app.awaitExit(), app.describe());
    assertEquals(
        4 * N,
        app.lines().stream().filter(l -> l.startsWith("CONNECTION")).count(),
        app.describe());
    return app;
  }

  /** The agent's hand-outs, in order, as "kind class". */
  private static List<String> handedOut(AppProcess app) {
    Matcher m = HANDED_OUT.matcher(app.stderr());
    List<String> out = new ArrayList<>();
    while (m.find()) {
      out.add(m.group(1) + " " + m.group(2));
    }
    return out;
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("dev.lease.agent.LegacyDatabase#databases")
  void everyConnectionIsFencedOnceAtTheOutermostCall(TestDatabase db) throws Exception {
    try (LegacyDatabase d = new LegacyDatabase(db)) {
      AppProcess app = run(d, List.of());
      List<String> out = handedOut(app);
      assertEquals(4 * N, out.size(), out + app.describe());
      // DriverManager: the driver's own connection class
      for (String s : out.subList(0, N)) {
        assertTrue(s.startsWith("a fenced connection ") && !s.contains("hikari"), out.toString());
      }
      // HikariCP, then the application's DataSource over HikariCP: HikariCP's proxy, never
      // PgConnection
      assertEquals(Collections.nCopies(2 * N, HIKARI), out.subList(N, 3 * N), out.toString());
      // FencedDataSource over HikariCP: already fenced
      for (String s : out.subList(3 * N, 4 * N)) {
        assertTrue(s.startsWith("an already fenced connection "), out.toString());
      }
      // the application's class: lease-jdbc's fenced connection, or its vendor face (a proxy that
      // also implements PGConnection) for pgjdbc's own connection from DriverManager
      List<String> classes =
          app.lines().stream()
              .filter(l -> l.startsWith("CONNECTION"))
              .map(l -> l.substring(l.lastIndexOf(' ') + 1))
              .toList();
      for (int i = 0; i < classes.size(); i++) {
        boolean face = i < N && db == TestDatabase.POSTGRESQL;
        assertTrue(
            face
                ? classes.get(i).contains("$Proxy")
                : classes.get(i).equals("dev.lease.jdbc.internal.fence.FencingConnection"),
            classes + app.describe());
      }
    }
  }

  /** Negative control: with the depth counter broken on purpose, the count sees the inner wraps. */
  @ParameterizedTest(name = "{0}")
  @MethodSource("dev.lease.agent.LegacyDatabase#databases")
  void withoutTheDepthCounterNestedCallsWrapToo(TestDatabase db) throws Exception {
    try (LegacyDatabase d = new LegacyDatabase(db)) {
      AppProcess app = run(d, List.of("-Dlease.agent.testing.wrapEveryCall=true"));
      List<String> out = handedOut(app);
      assertTrue(out.size() > 4 * N, "the count missed the inner wraps: " + out + app.describe());
    }
  }
}

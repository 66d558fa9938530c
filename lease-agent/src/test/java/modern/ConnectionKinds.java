package modern;

import dev.lease.jdbc.FencedDataSource;
import legacy.LegacyApp;
import legacy.RoutingDataSource;

/**
 * Gets connections every way the agent must handle, N of each, in this order: DriverManager,
 * HikariCP, the application's own delegating DataSource over HikariCP, and lease-jdbc's
 * FencedDataSource over HikariCP (an application that already uses lease-jdbc itself).
 *
 * <pre>
 * java -javaagent:... -cp ... modern.ConnectionKinds URL N
 * </pre>
 */
public final class ConnectionKinds {

  private ConnectionKinds() {}

  public static void main(String[] args) throws Exception {
    System.out.println("STARTED");
    String url = args[0];
    int n = Integer.parseInt(args[1]);
    LegacyApp.connections(null, url, n);
    LegacyApp.connections(LegacyApp.hikari(url), url, n);
    LegacyApp.connections(new RoutingDataSource(LegacyApp.hikari(url)), url, n);
    LegacyApp.connections(FencedDataSource.wrap(LegacyApp.hikari(url)), url, n);
    System.exit(0);
  }
}

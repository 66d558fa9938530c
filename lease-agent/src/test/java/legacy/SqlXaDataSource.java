package legacy;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.logging.Logger;
import javax.sql.XAConnection;
import javax.sql.XADataSource;
import javax.transaction.xa.XAResource;

/**
 * An {@code XADataSource} whose resources lease-agent cannot link ({@link SqlXaResource}): a
 * physical connection from {@code DriverManager} (inside {@code getXAConnection}, so the agent
 * leaves it unfenced, as a driver's own), handed out by {@code getConnection()} (fenced by the
 * agent as an XA handle), and a new {@code SqlXaResource} on it from every {@code getXAResource()}.
 */
final class SqlXaDataSource implements XADataSource {

  private final String url;

  SqlXaDataSource(String url) {
    this.url = url;
  }

  @Override
  public XAConnection getXAConnection() throws SQLException {
    return new Pooled(DriverManager.getConnection(url));
  }

  @Override
  public XAConnection getXAConnection(String user, String password) throws SQLException {
    return new Pooled(DriverManager.getConnection(url, user, password));
  }

  @Override
  public PrintWriter getLogWriter() {
    return null;
  }

  @Override
  public void setLogWriter(PrintWriter out) {
    // no log
  }

  @Override
  public void setLoginTimeout(int seconds) {
    // DriverManager's
  }

  @Override
  public int getLoginTimeout() {
    return 0;
  }

  @Override
  public Logger getParentLogger() {
    return Logger.getLogger("legacy");
  }

  /** The XA connection: its handle is the physical connection itself. */
  private static final class Pooled implements QuietXaConnection {
    private final Connection physical;

    Pooled(Connection physical) {
      this.physical = physical;
    }

    @Override
    public XAResource getXAResource() {
      return new SqlXaResource(physical);
    }

    @Override
    public Connection getConnection() {
      return physical;
    }

    @Override
    public void close() throws SQLException {
      physical.close();
    }
  }
}

package legacy;

import java.sql.SQLException;
import javax.sql.ConnectionEventListener;
import javax.sql.StatementEventListener;
import javax.sql.XAConnection;

/**
 * An {@code XAConnection} that sends no events and closes nothing: the tests' XA connections
 * implement it and give only their connection and resource (and a close, if they own one).
 */
public interface QuietXaConnection extends XAConnection {
  @Override
  default void close() throws SQLException {}

  @Override
  default void addConnectionEventListener(ConnectionEventListener listener) {}

  @Override
  default void removeConnectionEventListener(ConnectionEventListener listener) {}

  @Override
  default void addStatementEventListener(StatementEventListener listener) {}

  @Override
  default void removeStatementEventListener(StatementEventListener listener) {}
}

package dev.lease.agent;

import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;

/**
 * A connection that refuses every use: what the application gets when its real connection could not
 * be fenced, so that the failure is visible at its first statement instead of an unfenced write.
 */
final class RefusingConnection {

  private RefusingConnection() {}

  static Connection create(String reason) {
    return (Connection)
        Proxy.newProxyInstance(
            RefusingConnection.class.getClassLoader(),
            new Class<?>[] {Connection.class},
            (proxy, method, args) -> {
              switch (method.getName()) {
                case "close":
                  return null;
                case "isClosed":
                  return false;
                case "isValid":
                  return false;
                case "toString":
                  return "RefusingConnection[" + reason + "]";
                case "hashCode":
                  return System.identityHashCode(proxy);
                case "equals":
                  return proxy == args[0];
                default:
                  // 55000: object not in prerequisite state; not 08xxx, which pools treat as fatal
                  throw new SQLException(reason, "55000");
              }
            });
  }
}

package dev.lease.jdbc.internal.sql;

import java.util.Locale;

/**
 * The lexical rules of SQL text the fence reads: where literals, identifiers and comments begin and
 * end, and which keywords control transactions. Read once per connection: from the lease's manager
 * when one is bound (the lease table lives in the same database), otherwise from the connection's
 * metadata.
 */
public enum SqlDialect {
  /**
   * PostgreSQL as pgjdbc splits it: standard and {@code E''} strings, dollar quotes, nested block
   * comments, {@code --} comments, double-quoted identifiers.
   */
  POSTGRESQL,
  /**
   * MySQL and MariaDB: backslash escapes in strings, {@code #} and {@code -- } comments, backticks,
   * executable comments ({@code /*!}, {@code /*!50700}, MariaDB {@code /*M!}) whose content the
   * server runs, optimizer hints. One dialect for both: where the two servers read a text
   * differently, the lexer takes every reading.
   */
  MYSQL,
  /** SQLite: {@code []}, backtick and double-quoted identifiers, no nested comments, triggers. */
  SQLITE,
  /**
   * Any other database: standard strings and identifiers, {@code --} and block comments. The fence
   * only ever lexes such a text without a lease (leases live in the four databases above).
   */
  GENERIC;

  /** The dialect of a database product name ({@code DatabaseMetaData.getDatabaseProductName}). */
  public static SqlDialect ofProduct(String product) {
    SqlDialect known = product == null ? null : KNOWN.get(product);
    if (known != null) {
      return known;
    }
    SqlDialect d = detect(product);
    if (product != null && KNOWN.size() < 64) {
      KNOWN.put(product, d);
    }
    return d;
  }

  /** Product names seen so far (a handful per process): no allocation per connection. */
  private static final java.util.Map<String, SqlDialect> KNOWN =
      new java.util.concurrent.ConcurrentHashMap<>();

  private static SqlDialect detect(String product) {
    String p = product == null ? "" : product.toLowerCase(Locale.ROOT);
    if (p.contains("postgres")) {
      return POSTGRESQL;
    }
    if (p.contains("mysql") || p.contains("mariadb")) {
      return MYSQL;
    }
    if (p.contains("sqlite")) {
      return SQLITE;
    }
    return GENERIC;
  }
}

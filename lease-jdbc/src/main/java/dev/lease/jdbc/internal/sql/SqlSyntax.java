package dev.lease.jdbc.internal.sql;

/**
 * The lexical syntax of one {@link SqlDialect} for {@link SqlLexer}: where a dialect's lexical
 * rules differ from the others': the one scanning loop asks this at the characters that differ, and
 * the first keyword's table classifies the statement.
 *
 * @param crEndsLineComment a {@code --} comment ends at a carriage return too (PostgreSQL)
 * @param dashDashNeedsSpace {@code --} starts a comment only before white space (MySQL)
 * @param hashComments {@code #} starts a line comment (MySQL)
 * @param blockComments how {@code /}{@code *} comments read
 * @param eStrings {@code E'...'} strings with backslash escapes (PostgreSQL)
 * @param singleQuotes how {@code '...'} reads
 * @param doubleQuotes how {@code "..."} reads
 * @param backtickNames {@code `...`} is an identifier (MySQL, SQLite)
 * @param bracketNames {@code [...]} is an identifier (SQLite)
 * @param dollarQuotes how {@code $} reads
 * @param atomicBodies CREATE ... BEGIN ATOMIC bodies are not split (PostgreSQL)
 * @param triggerBodies CREATE TRIGGER ... BEGIN ... END bodies are not split (SQLite)
 * @param setStatementFor SET STATEMENT ... FOR naming autocommit sets it (MariaDB)
 * @param escapedCall the kind of a JDBC {@code {call ...}} escape
 * @param keywords the statement's kind by its first keyword
 */
record SqlSyntax(
    boolean crEndsLineComment,
    boolean dashDashNeedsSpace,
    boolean hashComments,
    BlockComments blockComments,
    boolean eStrings,
    Quotes singleQuotes,
    Quotes doubleQuotes,
    boolean backtickNames,
    boolean bracketNames,
    Dollars dollarQuotes,
    boolean atomicBodies,
    boolean triggerBodies,
    boolean setStatementFor,
    SqlKind escapedCall,
    Keywords keywords) {

  // Readings of the text other than the first, one bit each. The first reading is: PostgreSQL as
  // pgjdbc splits it with standard_conforming_strings on; MySQL with default sql_mode, a server
  // new enough to run every versioned comment, hints read as plain comments, no dollar quotes.

  /**
   * PostgreSQL: backslash escapes in plain {@code '...'} strings (standard_conforming_strings off);
   * MySQL: no backslash escapes in {@code '...'} (NO_BACKSLASH_ESCAPES).
   */
  static final int ALT_SINGLE_QUOTE_ESCAPES = 1;

  /** MySQL: no backslash escapes in {@code "..."} (NO_BACKSLASH_ESCAPES, or ANSI_QUOTES). */
  static final int ALT_DOUBLE_QUOTE_ESCAPES = 1 << 1;

  /** PostgreSQL: an {@code E'...'} string read as a plain one (pgjdbc and the server disagree). */
  static final int ALT_E_STRING_PLAIN = 1 << 2;

  /** MySQL: versioned ({@code /*!50700}) and MariaDB ({@code /*M!}) comments are not run. */
  static final int ALT_EXEC_SKIPPED = 1 << 3;

  /** MySQL: optimizer hint comments {@code /*+ ... *}{@code /} end only outside quotes. */
  static final int ALT_HINT_QUOTES = 1 << 4;

  /**
   * MySQL: {@code $tag$ ... $tag$} is a string (MySQL 9.2+); PostgreSQL: the server's rule for
   * where a dollar quote starts instead of pgjdbc's.
   */
  static final int ALT_DOLLAR = 1 << 5;

  /** PostgreSQL: a block comment opened by {@code /*}{@code /} as the server reads it. */
  static final int ALT_SERVER_COMMENT = 1 << 6;

  static SqlSyntax of(SqlDialect dialect) {
    switch (dialect) {
      case POSTGRESQL:
        return new SqlSyntax(
            true, // crEndsLineComment
            false, // dashDashNeedsSpace
            false, // hashComments
            BlockComments.NESTED, // blockComments
            true, // eStrings
            Quotes.BACKSLASH_IF_SET, // singleQuotes
            Quotes.IDENTIFIER, // doubleQuotes
            false, // backtickNames
            false, // bracketNames
            Dollars.PGJDBC_OR_SERVER, // dollarQuotes
            true, // atomicBodies
            false, // triggerBodies
            false, // setStatementFor
            SqlKind.OTHER, // escapedCall
            POSTGRESQL_KEYWORDS);
      case MYSQL:
        return new SqlSyntax(
            false, // crEndsLineComment
            true, // dashDashNeedsSpace
            true, // hashComments
            BlockComments.EXECUTABLE, // blockComments
            false, // eStrings
            Quotes.BACKSLASH_UNLESS_SET, // singleQuotes
            Quotes.BACKSLASH_UNLESS_SET, // doubleQuotes
            true, // backtickNames
            false, // bracketNames
            Dollars.MYSQL, // dollarQuotes
            false, // atomicBodies
            false, // triggerBodies
            true, // setStatementFor
            SqlKind.ROUTINE, // escapedCall
            MYSQL_KEYWORDS);
      case SQLITE:
        return new SqlSyntax(
            false, // crEndsLineComment
            false, // dashDashNeedsSpace
            false, // hashComments
            BlockComments.PLAIN, // blockComments
            false, // eStrings
            Quotes.PLAIN, // singleQuotes
            Quotes.IDENTIFIER, // doubleQuotes
            true, // backtickNames
            true, // bracketNames
            Dollars.NONE, // dollarQuotes
            false, // atomicBodies
            true, // triggerBodies
            false, // setStatementFor
            SqlKind.OTHER, // escapedCall
            SQLITE_KEYWORDS);
      default:
        return new SqlSyntax(
            true, // crEndsLineComment
            false, // dashDashNeedsSpace
            false, // hashComments
            BlockComments.PLAIN, // blockComments
            false, // eStrings
            Quotes.PLAIN, // singleQuotes
            Quotes.IDENTIFIER, // doubleQuotes
            false, // backtickNames
            false, // bracketNames
            Dollars.NONE, // dollarQuotes
            false, // atomicBodies
            false, // triggerBodies
            false, // setStatementFor
            SqlKind.OTHER, // escapedCall
            GENERIC_KEYWORDS);
    }
  }

  /** How a quote's backslash reads. */
  enum Quotes {
    /** No escapes: doubled quotes only. */
    PLAIN,
    /**
     * An identifier, not a string: no escapes, doubled quotes (and for MySQL, may name autocommit).
     */
    IDENTIFIER,
    /**
     * Backslash escapes unless a setting turns them off (MySQL's NO_BACKSLASH_ESCAPES,
     * ANSI_QUOTES).
     */
    BACKSLASH_UNLESS_SET,
    /**
     * Backslash escapes only if a setting turns them on (PostgreSQL standard_conforming_strings
     * off).
     */
    BACKSLASH_IF_SET
  }

  enum BlockComments {
    /** Ends at the first {@code *}{@code /}. */
    PLAIN,
    /** PostgreSQL: nested, as pgjdbc and as the server reads them. */
    NESTED,
    /** MySQL: executable, versioned and hint comments. */
    EXECUTABLE
  }

  enum Dollars {
    /** {@code $} is a word character. */
    NONE,
    /** PostgreSQL: dollar quotes by pgjdbc's rule, and by the server's as another reading. */
    PGJDBC_OR_SERVER,
    /** MySQL 9.2+: dollar quotes as another reading. */
    MYSQL
  }

  // ---- classification of a statement by its words (the scan's window of its first words)

  /** The kind of the statement {@code s} has just ended. */
  SqlKind classify(Words s) {
    if (!s.firstIsWord() || s.words() == 0) {
      // a JDBC escape {call p(?)} or {? = call f(?)}: the driver rewrites it to CALL
      if (s.firstChar() == '{' && s.words() > 0 && s.isWord(0, "CALL")) {
        return escapedCall;
      }
      return SqlKind.OTHER;
    }
    Rule rule = keywords.get(s.sql(), s.wordStart(0), s.wordEnd(0));
    SqlKind kind = rule == null ? SqlKind.OTHER : rule.kind(s);
    // after MariaDB's SET STATEMENT ... FOR, the window holds the inner statement
    return setStatementFor && s.inner() && kind == SqlKind.OTHER && s.autocommitNamed()
        ? SqlKind.SET_AUTOCOMMIT
        : kind;
  }

  /**
   * MySQL/MariaDB CREATE and DROP commit implicitly, but not CREATE [OR REPLACE] TEMPORARY TABLE
   * and DROP TEMPORARY TABLE; MariaDB's CREATE [OR REPLACE] TEMPORARY SEQUENCE does (measured on
   * 10.11: the share lock is gone).
   */
  static SqlKind mysqlCreateOrDrop(Words s) {
    for (int w = 1; w < Math.min(s.words(), 4); w++) {
      if (s.isWord(w, "TEMPORARY")) {
        return s.isWord(0, "CREATE") && s.isWord(w + 1, "SEQUENCE")
            ? SqlKind.IMPLICIT_COMMIT
            : SqlKind.OTHER;
      }
      if (s.isWord(w, "TABLE")) {
        break;
      }
    }
    return SqlKind.IMPLICIT_COMMIT;
  }

  /** ROLLBACK [WORK | TRANSACTION] TO ...: a savepoint rollback. */
  static boolean rollbackTo(Words s) {
    int w = s.isWord(1, "WORK") || s.isWord(1, "TRANSACTION") ? 2 : 1;
    return s.isWord(w, "TO");
  }

  /** COMMIT/END/ROLLBACK/ABORT [WORK | TRANSACTION] AND CHAIN (not AND NO CHAIN). */
  static boolean chained(Words s) {
    int w = s.isWord(1, "WORK") || s.isWord(1, "TRANSACTION") ? 2 : 1;
    return s.isWord(w, "AND") && s.isWord(w + 1, "CHAIN");
  }

  // ---- characters

  /**
   * Word characters: ASCII letters, digits, {@code _}, {@code $} and every non-ASCII character (all
   * three servers treat those as identifier characters). Everything else separates words, so no
   * separator the server knows can hide inside one of the lexer's words.
   */
  static boolean isWordChar(char c) {
    return isAsciiLetter(c) || isDigit(c) || c == '_' || c == '$' || c >= 0x80;
  }

  static boolean isPostgresIdentChar(char c) {
    return isWordChar(c);
  }

  static boolean isAsciiLetter(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  }

  static boolean isDigit(char c) {
    return c >= '0' && c <= '9';
  }

  /** White space: every ASCII control character and the space, in all three servers. */
  static boolean isSpace(char c) {
    return c <= ' ' || c == 0x7F;
  }

  /** "--" starts a MySQL comment before white space or a control character (sql_lex.cc). */
  static boolean mysqlDashDashEnd(char c) {
    return c <= ' ' || c == 0x7F;
  }

  /** pgjdbc's {@code Parser.charTerminatesIdentifier}: where an {@code E'} string may start. */
  static boolean pgjdbcTerminates(char c) {
    return c == '"'
        || c == ' '
        || c == '\t'
        || c == '\n'
        || c == '\r'
        || c == '\f'
        || ",()[].;:+-*/%^<>=~!@#&|`?".indexOf(c) >= 0;
  }

  /** The kind of a statement whose first keyword (or, in a nested table, a later one) is known. */
  @FunctionalInterface
  interface Rule {
    SqlKind kind(Words s);
  }

  // Rules several dialects share.

  /** ROLLBACK [WORK | TRANSACTION] [TO [SAVEPOINT] name]. */
  static final Rule ROLLBACK = s -> rollbackTo(s) ? SqlKind.ROLLBACK_TO : SqlKind.ROLLBACK;

  /** START TRANSACTION; anything else after START is not transaction control. */
  static final Rule START_TRANSACTION =
      s -> s.isWord(1, "TRANSACTION") ? SqlKind.BEGIN : SqlKind.OTHER;

  /** SET TRANSACTION; any other SET is an ordinary statement. */
  static final Rule SET_TRANSACTION =
      s -> s.isWord(1, "TRANSACTION") ? SqlKind.SET_TRANSACTION : SqlKind.OTHER;

  /** PostgreSQL: what CREATE, DROP and ALTER make of these objects cannot run in a transaction. */
  static final Keywords POSTGRESQL_NON_TRANSACTIONAL_OBJECTS =
      Keywords.words("DATABASE", "TABLESPACE", "SUBSCRIPTION");

  static final Keywords POSTGRESQL_KEYWORDS =
      new Keywords()
          .put("BEGIN", SqlKind.BEGIN)
          .put("START", START_TRANSACTION)
          .put("COMMIT", s -> s.isWord(1, "PREPARED") ? SqlKind.COMMIT_PREPARED : SqlKind.COMMIT)
          .put("END", SqlKind.COMMIT)
          .put(
              "ROLLBACK",
              s -> s.isWord(1, "PREPARED") ? SqlKind.ROLLBACK_PREPARED : ROLLBACK.kind(s))
          .put("ABORT", SqlKind.ROLLBACK)
          .put("SAVEPOINT", SqlKind.SAVEPOINT)
          .put("RELEASE", SqlKind.RELEASE)
          .put(
              "PREPARE",
              s -> s.isWord(1, "TRANSACTION") ? SqlKind.PREPARE_TRANSACTION : SqlKind.OTHER)
          .put("SET", SET_TRANSACTION)
          .put(SqlKind.NON_TRANSACTIONAL, "VACUUM", "CLUSTER", "REINDEX")
          .put("DISCARD", SqlKind.SESSION)
          .put(
              s ->
                  s.concurrently()
                          || POSTGRESQL_NON_TRANSACTIONAL_OBJECTS.holds(s, 1)
                          || (s.isWord(0, "ALTER") && s.isWord(1, "SYSTEM"))
                      ? SqlKind.NON_TRANSACTIONAL
                      : SqlKind.OTHER,
              "CREATE",
              "DROP",
              "ALTER");

  /** MySQL XA: the second keyword decides. */
  static final Keywords MYSQL_XA =
      new Keywords()
          .put(SqlKind.BEGIN, "START", "BEGIN")
          .put(SqlKind.PREPARE_TRANSACTION, "END", "PREPARE")
          .put("COMMIT", SqlKind.COMMIT_PREPARED)
          .put("ROLLBACK", SqlKind.ROLLBACK_PREPARED);

  /**
   * MySQL/MariaDB statements after which (and before which) the server commits implicitly, by their
   * first keyword (see {@link SqlKind#IMPLICIT_COMMIT}).
   */
  static final String[] MYSQL_IMPLICIT_COMMITS = {
    "ALTER",
    "RENAME",
    "TRUNCATE",
    "GRANT",
    "REVOKE",
    "LOCK",
    "UNLOCK",
    "ANALYZE",
    "CACHE",
    "CHECK",
    "CHECKSUM",
    "FLUSH",
    "OPTIMIZE",
    "REPAIR",
    "RESET",
    "STOP",
    "CHANGE",
    "INSTALL",
    "UNINSTALL",
    "BACKUP"
  };

  static final Keywords MYSQL_KEYWORDS =
      new Keywords()
          .put(
              "BEGIN",
              s -> s.isWord(1, "NOT") && s.isWord(2, "ATOMIC") ? SqlKind.ROUTINE : SqlKind.BEGIN)
          // START SLAVE/REPLICA/GROUP_REPLICATION commit implicitly
          .put("START", s -> s.isWord(1, "TRANSACTION") ? SqlKind.BEGIN : SqlKind.IMPLICIT_COMMIT)
          .put(SqlKind.COMMIT, "COMMIT", "END")
          .put("ROLLBACK", ROLLBACK)
          .put("ABORT", SqlKind.ROLLBACK)
          .put("SAVEPOINT", SqlKind.SAVEPOINT)
          .put("RELEASE", SqlKind.RELEASE)
          .put("XA", s -> MYSQL_XA.kindOf(s, 1))
          .put(
              "SET",
              s ->
                  s.autocommitNamed()
                      ? SqlKind.SET_AUTOCOMMIT
                      : s.isWord(1, "TRANSACTION")
                          ? SqlKind.SET_TRANSACTION
                          : s.isWord(1, "PASSWORD") || s.isWord(1, "DEFAULT")
                              ? SqlKind.IMPLICIT_COMMIT
                              : SqlKind.OTHER)
          .put(SqlKind.ROUTINE, "CALL", "EXECUTE")
          .put(
              s -> s.isWord(1, "DELAYED") ? SqlKind.DELAYED_WRITE : SqlKind.OTHER,
              "INSERT",
              "REPLACE")
          .put(SqlSyntax::mysqlCreateOrDrop, "CREATE", "DROP")
          .put("LOAD", s -> s.isWord(1, "INDEX") ? SqlKind.IMPLICIT_COMMIT : SqlKind.OTHER)
          .put(SqlKind.IMPLICIT_COMMIT, MYSQL_IMPLICIT_COMMITS);

  static final Keywords SQLITE_KEYWORDS =
      new Keywords()
          .put("BEGIN", SqlKind.BEGIN)
          .put(SqlKind.COMMIT, "COMMIT", "END")
          .put("ROLLBACK", ROLLBACK)
          .put("SAVEPOINT", SqlKind.SAVEPOINT)
          .put("RELEASE", SqlKind.RELEASE)
          .put("VACUUM", SqlKind.NON_TRANSACTIONAL)
          .put(SqlKind.SESSION, "ATTACH", "DETACH")
          .put("PRAGMA", SqlSyntax::sqlitePragma);

  /**
   * SQLite PRAGMA: configuration and reads stay in the session (several are no-ops or errors in a
   * transaction); {@code user_version} and {@code application_id}, the header values an application
   * keeps its own data in, are written inside the transaction, as ordinary statements.
   */
  static SqlKind sqlitePragma(Words s) {
    for (int w = 1; w <= 3; w++) {
      if (s.isName(w, "USER_VERSION") || s.isName(w, "APPLICATION_ID")) {
        return SqlKind.OTHER;
      }
    }
    return SqlKind.SESSION;
  }

  static final Keywords GENERIC_KEYWORDS =
      new Keywords()
          .put("BEGIN", SqlKind.BEGIN)
          .put("START", START_TRANSACTION)
          .put(SqlKind.COMMIT, "COMMIT", "END")
          .put("ROLLBACK", ROLLBACK)
          .put("ABORT", SqlKind.ROLLBACK)
          .put("SAVEPOINT", SqlKind.SAVEPOINT)
          .put("RELEASE", SqlKind.RELEASE)
          .put("SET", SET_TRANSACTION);

  /**
   * Keywords (ASCII upper case) to rules, looked up by a word of the text without allocating: open
   * addressing over a hash of the word's first and last letters (ASCII upper case) and length.
   * Filled once, in a static initializer.
   */
  static final class Keywords {
    private final String[] keys = new String[128];
    private final Rule[] rules = new Rule[128];
    private int size;

    static Keywords words(String... keywords) {
      return new Keywords().put(s -> SqlKind.OTHER, keywords);
    }

    Keywords put(String keyword, SqlKind kind) {
      return put(keyword, s -> kind);
    }

    Keywords put(SqlKind kind, String... keywords) {
      return put(s -> kind, keywords);
    }

    Keywords put(Rule rule, String... keywords) {
      for (String k : keywords) {
        put(k, rule);
      }
      return this;
    }

    Keywords put(String keyword, Rule rule) {
      if (++size * 2 > keys.length) {
        throw new IllegalStateException("keyword table full");
      }
      int mask = keys.length - 1;
      int h = hash(keyword, 0, keyword.length()) & mask;
      while (keys[h] != null) {
        if (keys[h].equals(keyword)) {
          throw new IllegalStateException("keyword " + keyword + " twice");
        }
        h = (h + 1) & mask;
      }
      keys[h] = keyword;
      rules[h] = rule;
      return this;
    }

    /**
     * The kind this table gives word {@code w} of {@code s}, OTHER if it does not hold the word.
     */
    SqlKind kindOf(Words s, int w) {
      if (w >= s.windowed()) {
        return SqlKind.OTHER;
      }
      Rule rule = get(s.sql(), s.wordStart(w), s.wordEnd(w));
      return rule == null ? SqlKind.OTHER : rule.kind(s);
    }

    /** True when word {@code w} of {@code s} is one of this table's. */
    boolean holds(Words s, int w) {
      return w < s.windowed() && get(s.sql(), s.wordStart(w), s.wordEnd(w)) != null;
    }

    /** The rule of the word {@code sql[from, to)} in ASCII upper case; null if none. */
    Rule get(String sql, int from, int to) {
      int mask = keys.length - 1;
      int h = hash(sql, from, to) & mask;
      String k;
      while ((k = keys[h]) != null) {
        if (k.length() == to - from && sameIgnoringAsciiCase(sql, from, k)) {
          return rules[h];
        }
        h = (h + 1) & mask;
      }
      return null;
    }

    /** From the first and last letters and the length: cheap, and enough to spread keywords. */
    private static int hash(String s, int from, int to) {
      int h = (upper(s.charAt(from)) * 31 + upper(s.charAt(to - 1))) * 31 + (to - from);
      return h ^ (h >>> 7);
    }

    static boolean sameIgnoringAsciiCase(String sql, int from, String keyword) {
      for (int k = 0; k < keyword.length(); k++) {
        if (upper(sql.charAt(from + k)) != keyword.charAt(k)) {
          return false;
        }
      }
      return true;
    }

    /** ASCII only: servers match keywords in ASCII (never 'ı' for 'I'). */
    private static char upper(char c) {
      return c >= 'a' && c <= 'z' ? (char) (c - ('a' - 'A')) : c;
    }
  }
}

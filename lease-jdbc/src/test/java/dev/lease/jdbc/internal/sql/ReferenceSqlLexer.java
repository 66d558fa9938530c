package dev.lease.jdbc.internal.sql;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;

/**
 * Test only: {@link SqlLexer} as it was before issue 21 put its four scanning loops into one with
 * per-dialect syntax tables (a copy of commit 2dde023's, with the enum and record types), the
 * reference {@link SqlLexerDifferentialTest} compares the new one with on random texts. Delete both
 * once that restructuring is accepted, or when the lexer's reading changes on purpose; {@link
 * SqlLexerGoldenTest} stays the pin.
 *
 * <p>The original comment follows.
 *
 * <p>Reads SQL text per {@link SqlDialect}: finds every statement of a text (where literals, quoted
 * identifiers, comments and dollar quotes begin and end, and where the semicolons between
 * statements are), and classifies each by its leading keywords ({@link SqlKind}). One linear pass
 * per reading of the text; stateless and thread-safe.
 *
 * <h2>Every reading, not one</h2>
 *
 * <p>A text's statements are whatever the server (or, for pgjdbc, the driver, which splits the text
 * itself) makes of it, and that depends on settings the lexer cannot see: {@code
 * standard_conforming_strings}, MySQL's {@code NO_BACKSLASH_ESCAPES} and {@code ANSI_QUOTES}, the
 * server's version (MySQL runs {@code /*!50700 ... *}{@code /} only from 5.7, MariaDB runs {@code
 * /*M! ... *}{@code /} and MySQL skips it), optimizer hints (MySQL honours quotes inside {@code /*+
 * ... *}{@code /} after SELECT, INSERT, REPLACE, UPDATE and DELETE; MariaDB before 12 reads a plain
 * comment), dollar quotes (MySQL 9.2+ for JavaScript routines; pgjdbc and PostgreSQL differ on
 * non-ASCII characters around a {@code $}) and pgjdbc's and PostgreSQL's readings of a comment
 * opened by {@code /*}{@code /}. A text such as {@code SELECT '\'; COMMIT; -- '} is one statement
 * under one setting and a COMMIT under another. So the first pass notes which of these features the
 * text uses, and the text is lexed again under every combination of the other readings of the
 * features it uses; {@link #summarize} returns the union (a kind any reading finds is in the mask,
 * the largest statement count wins). A text that uses none of them, which is nearly every text, is
 * lexed once. Where no union settles it (MySQL versioned comments with different versions, a
 * skipped versioned comment with a nested {@code /*}), the summary is {@link SqlSummary#ambiguous}
 * and the fence refuses the text under a lease.
 *
 * <h2>What it deliberately does not parse</h2>
 *
 * <p>Compound statements whose bodies hold semicolons the server does not split at: MySQL's {@code
 * CREATE PROCEDURE ... BEGIN ...; END}, MariaDB's {@code BEGIN NOT ATOMIC ... END}. The lexer
 * splits them at every semicolon, which finds more statements (and kinds: the {@code END} reads as
 * a COMMIT) than the server runs, never fewer: such a text is refused under a lease, never let
 * through. Two bodies are read as their servers read them, since their commands are not executed
 * when the statement runs: SQLite's {@code CREATE TRIGGER ... BEGIN ...; END} (a trigger command
 * list ends at an {@code END} right after a semicolon), and PostgreSQL's SQL-standard function
 * bodies, {@code CREATE ... BEGIN ATOMIC ...; END} (issue 25 item 9; common in migrations). In
 * PostgreSQL's grammar such a body holds plain statements, no nested blocks, and {@code CASE} and
 * {@code END} are reserved words, so the body ends at the {@code END} that closes every {@code
 * CASE} opened in it; pgjdbc (42.7) stops splitting at semicolons once it saw {@code BEGIN ATOMIC}
 * in a CREATE and sends the rest as one query, which the server then splits by that same grammar
 * (or refuses, with the extended protocol, if more statements follow). A body still open at the end
 * of the text with a semicolon in it makes the text {@link SqlSummary#ambiguous}.
 */
final class ReferenceSqlLexer {

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

  private static final ReferenceSqlLexer POSTGRESQL = new ReferenceSqlLexer(SqlDialect.POSTGRESQL);
  private static final ReferenceSqlLexer MYSQL = new ReferenceSqlLexer(SqlDialect.MYSQL);
  private static final ReferenceSqlLexer SQLITE = new ReferenceSqlLexer(SqlDialect.SQLITE);
  private static final ReferenceSqlLexer GENERIC = new ReferenceSqlLexer(SqlDialect.GENERIC);

  final SqlDialect dialect;

  private ReferenceSqlLexer(SqlDialect dialect) {
    this.dialect = dialect;
  }

  static ReferenceSqlLexer of(SqlDialect dialect) {
    switch (dialect) {
      case POSTGRESQL:
        return POSTGRESQL;
      case MYSQL:
        return MYSQL;
      case SQLITE:
        return SQLITE;
      default:
        return GENERIC;
    }
  }

  /**
   * The union over every reading of {@code sql} (see the class comment) of its statements' kinds
   * and count, as a {@link SqlSummary}. A null or blank text has no statement.
   */
  SqlSummary summarize(String sql) {
    if (sql == null) {
      return SqlSummary.EMPTY;
    }
    Scan scan = Scan.reuse(this, sql);
    try {
      return summarize(scan);
    } finally {
      scan.release();
    }
  }

  private static SqlSummary summarize(Scan scan) {
    SqlSummary summary = scan.run(0);
    int explored = 0;
    int seen = scan.seen;
    while (seen != explored) {
      explored = seen;
      // every non-empty combination of the alternatives the text exercises (at most 2^7 - 1)
      for (int alt = explored; alt != 0; alt = (alt - 1) & explored) {
        summary = SqlSummary.union(summary, scan.run(alt), false);
        seen |= scan.seen;
      }
    }
    return scan.ambiguous ? summary.asAmbiguous() : summary;
  }

  /**
   * Every statement of {@code sql} with its kind and span, in the first reading (see the class
   * comment; {@link #summarize} says whether other readings exist and what they add).
   */
  List<SqlStatement> statements(String sql) {
    List<SqlStatement> out = new ArrayList<>();
    if (sql != null) {
      new Scan(this, sql, out).run(0);
    }
    return out;
  }

  // ---- one pass
  // -----------------------------------------------------------------------------------

  /** The state of one pass over a text under one reading. */
  private static final class Scan {
    private static final int WINDOW = 8;

    /** One scan per thread for {@link #summarize}: the hot path allocates nothing. */
    private static final ThreadLocal<Scan> SCANS = new ThreadLocal<>();

    SqlDialect dialect;
    String sql;
    int n;
    final List<SqlStatement> out;

    /** Alternatives the text exercises (union over the passes so far). */
    int seen;

    /** No union settles the text (see the class comment). */
    boolean ambiguous;

    /** The version key of the first versioned executable comment (MySQL), 0 if none. */
    long versionKey;

    // this pass
    int alt;
    final EnumSet<SqlKind> kinds = EnumSet.noneOf(SqlKind.class);
    int count;
    SqlKind single;
    boolean chain; // a COMMIT or ROLLBACK ... AND CHAIN

    // the current statement
    int start;
    int end;
    boolean firstIsWord;
    char firstChar;
    final int[] wordStart = new int[WINDOW];
    final int[] wordEnd = new int[WINDOW];
    int words;
    int depth;
    boolean autocommitNamed;
    boolean concurrently;
    boolean inner; // MariaDB SET STATEMENT ... FOR: the window holds the statement after FOR
    int trigger; // SQLite CREATE TRIGGER: 1 in the body, 2 just after a semicolon, 3 after END
    int atomic; // PostgreSQL CREATE ... BEGIN ATOMIC: the open BEGIN ATOMIC and CASE blocks
    boolean afterBegin; // PostgreSQL: the CREATE statement's last word was BEGIN
    boolean atomicSemicolon; // PostgreSQL: a semicolon inside an open BEGIN ATOMIC body
    int lastWordStart; // for hint positions (MySQL): the word just before, -1 if another token

    Scan(ReferenceSqlLexer lexer, String sql, List<SqlStatement> out) {
      this.dialect = lexer.dialect;
      this.sql = sql;
      this.n = sql.length();
      this.out = out;
    }

    /** This thread's scan, set up for {@code sql}; {@link #release} it after use. */
    static Scan reuse(ReferenceSqlLexer lexer, String sql) {
      Scan s = SCANS.get();
      if (s == null) {
        s = new Scan(lexer, sql, null);
      } else {
        SCANS.set(null); // taken: a nested use (none today) gets its own
        s.dialect = lexer.dialect;
        s.sql = sql;
        s.n = sql.length();
      }
      s.seen = 0;
      s.ambiguous = false;
      s.versionKey = 0;
      return s;
    }

    void release() {
      sql = null; // keep no text alive
      SCANS.set(this);
    }

    SqlSummary run(int alt) {
      this.alt = alt;
      kinds.clear();
      count = 0;
      single = null;
      chain = false;
      resetStatement();
      switch (dialect) {
        case POSTGRESQL:
          postgres();
          break;
        case MYSQL:
          mysql();
          break;
        case SQLITE:
          sqlite();
          break;
        default:
          generic();
      }
      endStatement();
      return SqlSummary.of(kinds, count, single, false, chain);
    }

    private void resetStatement() {
      start = -1;
      end = -1;
      firstIsWord = false;
      firstChar = 0;
      words = 0;
      depth = 0;
      autocommitNamed = false;
      concurrently = false;
      inner = false;
      trigger = 0;
      atomic = 0;
      afterBegin = false;
      atomicSemicolon = false;
      lastWordStart = -1;
    }

    // ---- the dialects' token rules

    private void postgres() {
      int i = 0;
      while (i < n) {
        char c = sql.charAt(i);
        if (c == ';') {
          if (atomic > 0) {
            atomicSemicolon = true; // a statement of a BEGIN ATOMIC body: not run now
          } else {
            endStatement();
          }
          i++;
        } else if (isSpace(c)) {
          i++;
        } else if (c == '-' && at(i + 1) == '-') {
          i = lineEnd(i + 2, true);
        } else if (c == '/' && at(i + 1) == '*') {
          i = postgresComment(i);
        } else if (c == '\'') {
          boolean escapes;
          if (i >= 2 && (at(i - 1) == 'E' || at(i - 1) == 'e') && pgjdbcTerminates(at(i - 2))) {
            // pgjdbc's rule (Parser.parseSingleQuotes): E directly before, a separator before it
            escapes = (alt & ALT_E_STRING_PLAIN) == 0;
            i = quoted(i, '\'', escapes, ALT_E_STRING_PLAIN);
          } else {
            escapes = (alt & ALT_SINGLE_QUOTE_ESCAPES) != 0;
            i = quoted(i, '\'', escapes, ALT_SINGLE_QUOTE_ESCAPES);
          }
        } else if (c == '"') {
          i = quoted(i, '"', false, 0);
        } else if (c == '$') {
          i = postgresDollar(i);
        } else if (isWordChar(c)) {
          i = word(i);
        } else {
          i = other(i);
        }
      }
    }

    private void mysql() {
      int i = 0;
      boolean inExec = false; // inside an executable comment whose content runs
      while (i < n) {
        char c = sql.charAt(i);
        if (c == ';') {
          endStatement();
          inExec = false; // the server lexes each statement of a multi-query afresh
          i++;
        } else if (isMySqlSpace(c)) {
          i++;
        } else if (c == '#') {
          i = lineEnd(i + 1, false);
        } else if (c == '-' && at(i + 1) == '-' && (i + 2 >= n || mysqlDashDashEnd(at(i + 2)))) {
          // "--" starts a comment only before white space or a control character (sql_lex.cc)
          i = lineEnd(i + 2, false);
        } else if (c == '/' && at(i + 1) == '*') {
          int next = mysqlComment(i);
          if (next < 0) { // an executable comment whose content is read as SQL
            inExec = true;
            i = -next;
          } else {
            i = next;
          }
        } else if (c == '*' && inExec && at(i + 1) == '/') {
          inExec = false;
          i += 2;
        } else if (c == '\'') {
          i = quoted(i, '\'', (alt & ALT_SINGLE_QUOTE_ESCAPES) == 0, ALT_SINGLE_QUOTE_ESCAPES);
        } else if (c == '"') {
          i = quoted(i, '"', (alt & ALT_DOUBLE_QUOTE_ESCAPES) == 0, ALT_DOUBLE_QUOTE_ESCAPES);
        } else if (c == '`') {
          i = quotedName(i, '`', '`');
        } else if (c == '$' && mysqlDollarTag(i) > 0) {
          seen |= ALT_DOLLAR;
          if ((alt & ALT_DOLLAR) != 0) {
            i = dollarQuote(i, mysqlDollarTag(i));
          } else {
            i = word(i);
          }
        } else if (isWordChar(c)) {
          i = word(i);
        } else {
          i = other(i);
        }
      }
    }

    private void sqlite() {
      int i = 0;
      while (i < n) {
        char c = sql.charAt(i);
        if (c == ';') {
          if (trigger == 1 || trigger == 2) {
            trigger = 2; // inside a trigger body: the semicolon ends a trigger command
            i++;
          } else {
            endStatement();
            i++;
          }
        } else if (isSqliteSpace(c)) {
          i++;
        } else if (c == '-' && at(i + 1) == '-') {
          i = lineEnd(i + 2, false);
        } else if (c == '/' && at(i + 1) == '*') {
          int close = sql.indexOf("*/", i + 2);
          i = close < 0 ? n : close + 2;
        } else if (c == '\'') {
          i = quoted(i, '\'', false, 0);
        } else if (c == '"') {
          i = quotedName(i, '"', '"');
        } else if (c == '`') {
          i = quotedName(i, '`', '`');
        } else if (c == '[') {
          i = quotedName(i, '[', ']');
        } else if (isWordChar(c)) {
          i = word(i);
        } else {
          i = other(i);
        }
      }
    }

    private void generic() {
      int i = 0;
      while (i < n) {
        char c = sql.charAt(i);
        if (c == ';') {
          endStatement();
          i++;
        } else if (isSpace(c)) {
          i++;
        } else if (c == '-' && at(i + 1) == '-') {
          i = lineEnd(i + 2, true);
        } else if (c == '/' && at(i + 1) == '*') {
          int close = sql.indexOf("*/", i + 2);
          i = close < 0 ? n : close + 2;
        } else if (c == '\'') {
          i = quoted(i, '\'', false, 0);
        } else if (c == '"') {
          i = quotedName(i, '"', '"');
        } else if (isWordChar(c)) {
          i = word(i);
        } else {
          i = other(i);
        }
      }
    }

    // ---- literals, identifiers, comments

    /**
     * A string from the quote at {@code i}: doubled quotes stay inside, a backslash escapes the
     * next character if {@code escapes}. A backslash inside marks {@code feature} as exercised
     * (another reading would end the string elsewhere). Returns the offset after it (the text's end
     * if unterminated).
     */
    private int quoted(int i, char quote, boolean escapes, int feature) {
      int j = i + 1;
      while (j < n) {
        char c = sql.charAt(j);
        if (c == '\\') {
          seen |= feature;
          j += escapes ? 2 : 1;
        } else if (c == quote) {
          if (at(j + 1) == quote) {
            j += 2;
          } else {
            if (quote == '"'
                && words > 0
                && isWord(0, "SET")
                && equalsIgnoreCase(i + 1, j, "AUTOCOMMIT")) {
              autocommitNamed = true; // ANSI_QUOTES: "autocommit" is an identifier
            }
            token(i, j + 1);
            return j + 1;
          }
        } else {
          j++;
        }
      }
      token(i, n);
      return n;
    }

    /**
     * A quoted identifier (no escapes, doubled closing quotes stay inside). For MySQL, a quoted
     * name in a SET statement may name autocommit.
     */
    private int quotedName(int i, char open, char close) {
      int j = i + 1;
      while (j < n) {
        if (sql.charAt(j) == close) {
          if (open == close && at(j + 1) == close) {
            j += 2;
            continue;
          }
          if (words > 0 && isWord(0, "SET") && equalsIgnoreCase(i + 1, j, "AUTOCOMMIT")) {
            autocommitNamed = true;
          }
          token(i, j + 1);
          return j + 1;
        }
        j++;
      }
      token(i, n);
      return n;
    }

    /** To the end of the line: {@code '\n'}, and also {@code '\r'} if {@code cr} (PostgreSQL). */
    private int lineEnd(int j, boolean cr) {
      while (j < n) {
        char c = sql.charAt(j);
        if (c == '\n' || (cr && c == '\r')) {
          return j + 1;
        }
        j++;
      }
      return n;
    }

    /**
     * A PostgreSQL block comment from {@code i}. First reading: pgjdbc's {@code parseBlockComment}
     * (nested; the opening's asterisk can close it, so {@code /}{@code *}{@code /} is a whole
     * comment). Other reading: the server's scanner ({@code /}{@code *} and {@code *}{@code /}
     * never overlap).
     */
    private int postgresComment(int i) {
      boolean overlap = at(i + 2) == '/';
      if (overlap) {
        seen |= ALT_SERVER_COMMENT;
      }
      int level = 1;
      int j;
      if (overlap && (alt & ALT_SERVER_COMMENT) == 0) {
        return i + 3; // pgjdbc: "/*/" opens and closes
      }
      j = i + 2;
      while (j < n) {
        char c = sql.charAt(j);
        if (c == '*' && at(j + 1) == '/') {
          level--;
          j += 2;
          if (level == 0) {
            return j;
          }
        } else if (c == '/' && at(j + 1) == '*') {
          level++;
          j += 2;
        } else {
          j++;
        }
      }
      return n;
    }

    /**
     * A PostgreSQL {@code $}: a dollar quote, or part of a word ({@code $1}, {@code a$b}). First
     * reading: pgjdbc's rule ({@code Parser.parseDollarQuotes}, Java identifier characters); the
     * server's rule (ASCII letters and digits, and every non-ASCII character) is another reading
     * where the two differ.
     */
    private int postgresDollar(int i) {
      int pgjdbc = pgjdbcDollarTag(i);
      int server = serverDollarTag(i);
      if (pgjdbc != server) {
        seen |= ALT_DOLLAR;
      }
      int tagEnd = (alt & ALT_DOLLAR) != 0 ? server : pgjdbc;
      return tagEnd > 0 ? dollarQuote(i, tagEnd) : word(i);
    }

    /**
     * The offset after the tag's closing {@code $} if a dollar quote opens at {@code i}, else 0.
     */
    private int pgjdbcDollarTag(int i) {
      if (i > 0 && Character.isJavaIdentifierPart(sql.charAt(i - 1))) {
        return 0;
      }
      char c = at(i + 1);
      if (c == '$') {
        return i + 2;
      }
      if (c == 0 || !Character.isJavaIdentifierStart(c)) {
        return 0;
      }
      for (int d = i + 2; d < n; d++) {
        char t = sql.charAt(d);
        if (t == '$') {
          return d + 1;
        }
        if (!Character.isJavaIdentifierPart(t)) {
          return 0;
        }
      }
      return 0;
    }

    /** Like {@link #pgjdbcDollarTag}, by PostgreSQL's scan.l (dolq_start, dolq_cont). */
    private int serverDollarTag(int i) {
      if (i > 0 && isPostgresIdentChar(sql.charAt(i - 1))) {
        return 0;
      }
      char c = at(i + 1);
      if (c == '$') {
        return i + 2;
      }
      if (c == 0 || !(isAsciiLetter(c) || c == '_' || c >= 0x80)) {
        return 0;
      }
      for (int d = i + 2; d < n; d++) {
        char t = sql.charAt(d);
        if (t == '$') {
          return d + 1;
        }
        if (!(isAsciiLetter(t) || isDigit(t) || t == '_' || t >= 0x80)) {
          return 0;
        }
      }
      return 0;
    }

    /** MySQL 9.2+: like PostgreSQL's server rule, at a token start; 0 if none opens at i. */
    private int mysqlDollarTag(int i) {
      if (i > 0 && isWordChar(sql.charAt(i - 1))) {
        return 0;
      }
      return serverDollarTag(i);
    }

    /** A dollar-quoted string whose opening tag is {@code [i, tagEnd)}; ends at the same tag. */
    private int dollarQuote(int i, int tagEnd) {
      int tagLength = tagEnd - i;
      int j = tagEnd;
      while (j < n) {
        if (sql.charAt(j) == '$' && sql.regionMatches(j, sql, i, tagLength)) {
          token(i, j + tagLength);
          return j + tagLength;
        }
        j++;
      }
      token(i, n);
      return n;
    }

    /**
     * A MySQL comment from {@code i} (at {@code /}{@code *}). Returns the offset after it, or the
     * negated offset of its content when the comment is executable and read as SQL (the caller then
     * ends it at the next {@code *}{@code /}). The rules of sql_lex.cc: {@code /*!} runs its
     * content on every server; {@code /*!NNNNN} only from version NNNNN on (a skipped one may hold
     * one nested comment); {@code /*M!} and {@code /*M!NNNNNN} run on MariaDB only; {@code /*+} is
     * an optimizer hint after SELECT, INSERT, REPLACE, UPDATE and DELETE (MySQL; its scanner skips
     * quoted strings); any other comment ends at the first {@code *}{@code /}.
     */
    private int mysqlComment(int i) {
      char c2 = at(i + 2);
      if (c2 == '!' || (c2 == 'M' && at(i + 3) == '!')) {
        boolean maria = c2 == 'M';
        int j = i + (maria ? 4 : 3);
        int digits = 0;
        long version = 0;
        while (digits < 6 && isDigit(at(j))) {
          version = version * 10 + (at(j) - '0');
          j++;
          digits++;
        }
        if (digits == 0 && !maria) {
          return -j; // "/*!": every server runs it
        }
        seen |= ALT_EXEC_SKIPPED;
        noteVersion(maria, digits, version);
        int close = sql.indexOf("*/", j);
        int nested = sql.indexOf("/*", j);
        if (nested >= 0 && (close < 0 || nested < close)) {
          ambiguous = true; // MySQL lets a skipped versioned comment hold one nested comment
        }
        if ((alt & ALT_EXEC_SKIPPED) == 0) {
          return -j;
        }
        return close < 0 ? n : close + 2;
      }
      int close = sql.indexOf("*/", i + 2);
      if (c2 == '+' && lastWordStart >= 0 && isHintKeyword(lastWordStart)) {
        int quote = firstQuote(i + 3, close < 0 ? n : close);
        if (quote >= 0) {
          seen |= ALT_HINT_QUOTES;
          if ((alt & ALT_HINT_QUOTES) != 0) {
            return hintEnd(i + 3);
          }
        }
      }
      return close < 0 ? n : close + 2;
    }

    /** The end of an optimizer hint comment read by MySQL's hint scanner (quotes skipped). */
    private int hintEnd(int j) {
      while (j < n) {
        char c = sql.charAt(j);
        if (c == '\'' || c == '"' || c == '`') {
          int k = j + 1;
          while (k < n && !(sql.charAt(k) == c && at(k + 1) != c)) {
            k += sql.charAt(k) == c ? 2 : 1;
          }
          j = k + 1;
        } else if (c == '*' && at(j + 1) == '/') {
          return j + 2;
        } else {
          j++;
        }
      }
      return n;
    }

    private int firstQuote(int from, int to) {
      for (int j = from; j < to; j++) {
        char c = sql.charAt(j);
        if (c == '\'' || c == '"' || c == '`') {
          return j;
        }
      }
      return -1;
    }

    private boolean isHintKeyword(int wordAt) {
      int e = wordAt;
      while (e < n && isWordChar(sql.charAt(e))) {
        e++;
      }
      return equalsIgnoreCase(wordAt, e, "SELECT")
          || equalsIgnoreCase(wordAt, e, "INSERT")
          || equalsIgnoreCase(wordAt, e, "REPLACE")
          || equalsIgnoreCase(wordAt, e, "UPDATE")
          || equalsIgnoreCase(wordAt, e, "DELETE");
    }

    /**
     * Versioned comments with different versions run on some servers and not on others, so a union
     * of "all run" and "none runs" does not cover every server: the text is ambiguous.
     */
    private void noteVersion(boolean maria, int digits, long version) {
      long key = ((maria ? 2L : 1L) << 40) | ((long) digits << 32) | version;
      if (versionKey == 0) {
        versionKey = key;
      } else if (versionKey != key) {
        ambiguous = true;
      }
    }

    // ---- tokens and statements

    private int word(int i) {
      int j = i + 1;
      while (j < n && isWordChar(sql.charAt(j))) {
        j++;
      }
      onWord(i, j);
      token(i, j, true);
      return j;
    }

    private int other(int i) {
      char c = sql.charAt(i);
      if (c == '(') {
        depth++;
      } else if (c == ')') {
        depth--;
      }
      if (start < 0) {
        firstChar = c;
      }
      token(i, i + 1, false);
      return i + 1;
    }

    private void token(int from, int to) {
      token(from, to, false);
    }

    private void token(int from, int to, boolean isWord) {
      if (start < 0) {
        start = from;
        firstIsWord = isWord;
      }
      if (trigger == 2 && !isWord) {
        trigger = 1; // a trigger command that is not END follows the semicolon
      }
      end = to;
      lastWordStart = isWord ? from : -1;
    }

    private void onWord(int from, int to) {
      if (trigger == 2) {
        trigger = equalsIgnoreCase(from, to, "END") ? 3 : 1;
      }
      if (words > 0) {
        if (isWord(0, "SET")) {
          if (equalsIgnoreCase(from, to, "AUTOCOMMIT")) {
            autocommitNamed = true;
          }
          if (!inner
              && depth == 0
              && words > 1
              && isWord(1, "STATEMENT")
              && equalsIgnoreCase(from, to, "FOR")) {
            inner = true; // MariaDB SET STATEMENT var = value [, ...] FOR statement
            words = 0;
            return;
          }
        } else if (equalsIgnoreCase(from, to, "CONCURRENTLY")) {
          concurrently = true;
        }
      }
      if (words < WINDOW) {
        wordStart[words] = from;
        wordEnd[words] = to;
      }
      words++;
      if (dialect == SqlDialect.SQLITE && trigger == 0 && isSqliteTriggerStart()) {
        trigger = 1;
      }
      if (dialect == SqlDialect.POSTGRESQL && words > 1 && isWord(0, "CREATE")) {
        atomicBody(from, to);
      }
    }

    /** PostgreSQL: tracks {@code BEGIN ATOMIC ... END} in a CREATE statement (class comment). */
    private void atomicBody(int from, int to) {
      if (atomic > 0) {
        if (equalsIgnoreCase(from, to, "CASE")) {
          atomic++;
        } else if (equalsIgnoreCase(from, to, "END")) {
          atomic--;
        }
      } else if (afterBegin && equalsIgnoreCase(from, to, "ATOMIC")) {
        atomic = 1;
      }
      afterBegin = atomic == 0 && equalsIgnoreCase(from, to, "BEGIN");
    }

    private boolean isSqliteTriggerStart() {
      if (words == 3 && isWord(0, "CREATE") && isWord(1, "TRIGGER")) {
        return true;
      }
      return words == 3
          && isWord(0, "CREATE")
          && (isWord(1, "TEMP") || isWord(1, "TEMPORARY"))
          && isWord(2, "TRIGGER");
    }

    private void endStatement() {
      if (atomic > 0 && atomicSemicolon) {
        ambiguous = true; // the body never closed: where the server splits is not known
      }
      if (start >= 0) {
        SqlKind kind = classify();
        boolean chains = (kind == SqlKind.COMMIT || kind == SqlKind.ROLLBACK) && chained();
        kinds.add(kind);
        count++;
        single = kind;
        if (chains) {
          chain = true;
          kinds.add(SqlKind.BEGIN); // a chained commit leaves a transaction open
        }
        if (out != null) {
          out.add(new SqlStatement(kind, start, end, chains));
        }
      }
      resetStatement();
    }

    // ---- classification

    private SqlKind classify() {
      if (!firstIsWord || words == 0) {
        // a JDBC escape {call p(?)} or {? = call f(?)}: the driver rewrites it to CALL
        if (firstChar == '{' && words > 0 && isWord(0, "CALL")) {
          return dialect == SqlDialect.MYSQL ? SqlKind.ROUTINE : SqlKind.OTHER;
        }
        return SqlKind.OTHER;
      }
      switch (dialect) {
        case POSTGRESQL:
          return postgresKind();
        case MYSQL:
          {
            // after MariaDB's SET STATEMENT ... FOR, the window holds the inner statement
            SqlKind kind = mysqlKind();
            return inner && kind == SqlKind.OTHER && autocommitNamed
                ? SqlKind.SET_AUTOCOMMIT
                : kind;
          }
        case SQLITE:
          return sqliteKind();
        default:
          return genericKind();
      }
    }

    private SqlKind postgresKind() {
      if (isWord(0, "BEGIN")) {
        return SqlKind.BEGIN;
      }
      if (isWord(0, "START")) {
        return isWord(1, "TRANSACTION") ? SqlKind.BEGIN : SqlKind.OTHER;
      }
      if (isWord(0, "COMMIT")) {
        return isWord(1, "PREPARED") ? SqlKind.COMMIT_PREPARED : SqlKind.COMMIT;
      }
      if (isWord(0, "END")) {
        return SqlKind.COMMIT;
      }
      if (isWord(0, "ROLLBACK")) {
        if (isWord(1, "PREPARED")) {
          return SqlKind.ROLLBACK_PREPARED;
        }
        return rollbackTo() ? SqlKind.ROLLBACK_TO : SqlKind.ROLLBACK;
      }
      if (isWord(0, "ABORT")) {
        return SqlKind.ROLLBACK;
      }
      if (isWord(0, "SAVEPOINT")) {
        return SqlKind.SAVEPOINT;
      }
      if (isWord(0, "RELEASE")) {
        return SqlKind.RELEASE;
      }
      if (isWord(0, "PREPARE")) {
        return isWord(1, "TRANSACTION") ? SqlKind.PREPARE_TRANSACTION : SqlKind.OTHER;
      }
      if (isWord(0, "SET")) {
        return isWord(1, "TRANSACTION") ? SqlKind.SET_TRANSACTION : SqlKind.OTHER;
      }
      if (isWord(0, "VACUUM")
          || isWord(0, "CLUSTER")
          || isWord(0, "REINDEX")
          || isWord(0, "DISCARD")) {
        return SqlKind.NON_TRANSACTIONAL;
      }
      if (isWord(0, "CREATE") || isWord(0, "DROP") || isWord(0, "ALTER")) {
        if (concurrently
            || isWord(1, "DATABASE")
            || isWord(1, "TABLESPACE")
            || isWord(1, "SUBSCRIPTION")
            || (isWord(0, "ALTER") && isWord(1, "SYSTEM"))) {
          return SqlKind.NON_TRANSACTIONAL;
        }
      }
      return SqlKind.OTHER;
    }

    private SqlKind mysqlKind() {
      if (isWord(0, "BEGIN")) {
        return isWord(1, "NOT") && isWord(2, "ATOMIC") ? SqlKind.ROUTINE : SqlKind.BEGIN;
      }
      if (isWord(0, "START")) {
        // START SLAVE/REPLICA/GROUP_REPLICATION commit implicitly
        return isWord(1, "TRANSACTION") ? SqlKind.BEGIN : SqlKind.IMPLICIT_COMMIT;
      }
      if (isWord(0, "COMMIT") || isWord(0, "END")) {
        return SqlKind.COMMIT;
      }
      if (isWord(0, "ROLLBACK")) {
        return rollbackTo() ? SqlKind.ROLLBACK_TO : SqlKind.ROLLBACK;
      }
      if (isWord(0, "ABORT")) {
        return SqlKind.ROLLBACK;
      }
      if (isWord(0, "SAVEPOINT")) {
        return SqlKind.SAVEPOINT;
      }
      if (isWord(0, "RELEASE")) {
        return SqlKind.RELEASE;
      }
      if (isWord(0, "XA")) {
        if (isWord(1, "START") || isWord(1, "BEGIN")) {
          return SqlKind.BEGIN;
        }
        if (isWord(1, "END") || isWord(1, "PREPARE")) {
          return SqlKind.PREPARE_TRANSACTION;
        }
        if (isWord(1, "COMMIT")) {
          return SqlKind.COMMIT_PREPARED;
        }
        if (isWord(1, "ROLLBACK")) {
          return SqlKind.ROLLBACK_PREPARED;
        }
        return SqlKind.OTHER;
      }
      if (isWord(0, "SET")) {
        if (autocommitNamed) {
          return SqlKind.SET_AUTOCOMMIT;
        }
        if (isWord(1, "TRANSACTION")) {
          return SqlKind.SET_TRANSACTION;
        }
        if (isWord(1, "PASSWORD") || isWord(1, "DEFAULT")) {
          return SqlKind.IMPLICIT_COMMIT;
        }
        return SqlKind.OTHER;
      }
      if (isWord(0, "CALL") || isWord(0, "EXECUTE")) {
        return SqlKind.ROUTINE;
      }
      if (isWord(0, "CREATE") || isWord(0, "DROP")) {
        // CREATE [OR REPLACE] TEMPORARY TABLE and DROP TEMPORARY TABLE do not commit; MariaDB's
        // CREATE [OR REPLACE] TEMPORARY SEQUENCE does (measured on 10.11: the share lock is gone)
        for (int w = 1; w < Math.min(words, 4); w++) {
          if (isWord(w, "TEMPORARY")) {
            return isWord(0, "CREATE") && isWord(w + 1, "SEQUENCE")
                ? SqlKind.IMPLICIT_COMMIT
                : SqlKind.OTHER;
          }
          if (isWord(w, "TABLE")) {
            break;
          }
        }
        return SqlKind.IMPLICIT_COMMIT;
      }
      if (isWord(0, "LOAD")) {
        return isWord(1, "INDEX") ? SqlKind.IMPLICIT_COMMIT : SqlKind.OTHER;
      }
      if (isWord(0, "ALTER")
          || isWord(0, "RENAME")
          || isWord(0, "TRUNCATE")
          || isWord(0, "GRANT")
          || isWord(0, "REVOKE")
          || isWord(0, "LOCK")
          || isWord(0, "UNLOCK")
          || isWord(0, "ANALYZE")
          || isWord(0, "CACHE")
          || isWord(0, "CHECK")
          || isWord(0, "CHECKSUM")
          || isWord(0, "FLUSH")
          || isWord(0, "OPTIMIZE")
          || isWord(0, "REPAIR")
          || isWord(0, "RESET")
          || isWord(0, "STOP")
          || isWord(0, "CHANGE")
          || isWord(0, "INSTALL")
          || isWord(0, "UNINSTALL")
          || isWord(0, "BACKUP")) {
        return SqlKind.IMPLICIT_COMMIT;
      }
      return SqlKind.OTHER;
    }

    private SqlKind sqliteKind() {
      if (isWord(0, "BEGIN")) {
        return SqlKind.BEGIN;
      }
      if (isWord(0, "COMMIT") || isWord(0, "END")) {
        return SqlKind.COMMIT;
      }
      if (isWord(0, "ROLLBACK")) {
        return rollbackTo() ? SqlKind.ROLLBACK_TO : SqlKind.ROLLBACK;
      }
      if (isWord(0, "SAVEPOINT")) {
        return SqlKind.SAVEPOINT;
      }
      if (isWord(0, "RELEASE")) {
        return SqlKind.RELEASE;
      }
      if (isWord(0, "VACUUM")
          || isWord(0, "ATTACH")
          || isWord(0, "DETACH")
          || isWord(0, "PRAGMA")) {
        return SqlKind.NON_TRANSACTIONAL;
      }
      return SqlKind.OTHER;
    }

    private SqlKind genericKind() {
      if (isWord(0, "BEGIN") || (isWord(0, "START") && isWord(1, "TRANSACTION"))) {
        return SqlKind.BEGIN;
      }
      if (isWord(0, "COMMIT") || isWord(0, "END")) {
        return SqlKind.COMMIT;
      }
      if (isWord(0, "ROLLBACK")) {
        return rollbackTo() ? SqlKind.ROLLBACK_TO : SqlKind.ROLLBACK;
      }
      if (isWord(0, "ABORT")) {
        return SqlKind.ROLLBACK;
      }
      if (isWord(0, "SAVEPOINT")) {
        return SqlKind.SAVEPOINT;
      }
      if (isWord(0, "RELEASE")) {
        return SqlKind.RELEASE;
      }
      if (isWord(0, "SET") && isWord(1, "TRANSACTION")) {
        return SqlKind.SET_TRANSACTION;
      }
      return SqlKind.OTHER;
    }

    /** ROLLBACK [WORK | TRANSACTION] TO ...: a savepoint rollback. */
    private boolean rollbackTo() {
      int w = isWord(1, "WORK") || isWord(1, "TRANSACTION") ? 2 : 1;
      return isWord(w, "TO");
    }

    /** COMMIT/END/ROLLBACK/ABORT [WORK | TRANSACTION] AND CHAIN (not AND NO CHAIN). */
    private boolean chained() {
      int w = isWord(1, "WORK") || isWord(1, "TRANSACTION") ? 2 : 1;
      return isWord(w, "AND") && isWord(w + 1, "CHAIN");
    }

    // ---- characters

    private boolean isWord(int w, String keyword) {
      return w < Math.min(words, WINDOW) && equalsIgnoreCase(wordStart[w], wordEnd[w], keyword);
    }

    /** ASCII case-insensitive: servers match keywords in ASCII only (never 'ı' for 'I'). */
    private boolean equalsIgnoreCase(int from, int to, String keyword) {
      int len = keyword.length();
      if (to - from != len) {
        return false;
      }
      for (int k = 0; k < len; k++) {
        char c = sql.charAt(from + k);
        if (c >= 'a' && c <= 'z') {
          c -= 'a' - 'A';
        }
        if (c != keyword.charAt(k)) {
          return false;
        }
      }
      return true;
    }

    private char at(int i) {
      return i >= 0 && i < n ? sql.charAt(i) : 0;
    }

    /**
     * Word characters: ASCII letters, digits, {@code _}, {@code $} and every non-ASCII character
     * (all three servers treat those as identifier characters). Everything else separates words, so
     * no separator the server knows can hide inside one of the lexer's words.
     */
    private static boolean isWordChar(char c) {
      return isAsciiLetter(c) || isDigit(c) || c == '_' || c == '$' || c >= 0x80;
    }

    private static boolean isPostgresIdentChar(char c) {
      return isWordChar(c);
    }

    private static boolean isAsciiLetter(char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    }

    private static boolean isDigit(char c) {
      return c >= '0' && c <= '9';
    }

    /** PostgreSQL's and pgjdbc's white space (and any other ASCII control character). */
    private static boolean isSpace(char c) {
      return c <= ' ' || c == 0x7F;
    }

    private static boolean isMySqlSpace(char c) {
      return c <= ' ' || c == 0x7F;
    }

    private static boolean isSqliteSpace(char c) {
      return c <= ' ' || c == 0x7F;
    }

    /** "--" starts a MySQL comment before white space or a control character (sql_lex.cc). */
    private static boolean mysqlDashDashEnd(char c) {
      return c <= ' ' || c == 0x7F;
    }

    /** pgjdbc's {@code Parser.charTerminatesIdentifier}: where an {@code E'} string may start. */
    private static boolean pgjdbcTerminates(char c) {
      return c == '"'
          || c == ' '
          || c == '\t'
          || c == '\n'
          || c == '\r'
          || c == '\f'
          || ",()[].;:+-*/%^<>=~!@#&|`?".indexOf(c) >= 0;
    }
  }
}

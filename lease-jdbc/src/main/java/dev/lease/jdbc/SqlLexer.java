package dev.lease.jdbc;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;

/**
 * Reads SQL text per {@link SqlDialect}: finds every statement of a text (where literals, quoted
 * identifiers, comments and dollar quotes begin and end, and where the semicolons between
 * statements are), and classifies each by its leading keywords ({@link SqlKind}). One linear pass
 * per reading of the text; stateless and thread-safe.
 *
 * <p>One scanning loop serves every dialect (as pgjdbc's {@code Parser} is one loop over token
 * helpers): a dialect's {@link Syntax} says where its rules differ (which comments, quotes and
 * dollar quotes it has, how a backslash reads), and a table from the first keyword to a rule gives
 * the statement's kind. The tables are at the end of this file, one per dialect, readable as text.
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
final class SqlLexer {

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

  final SqlDialect dialect;
  private final Syntax syntax;

  private SqlLexer(SqlDialect dialect, Syntax syntax) {
    this.dialect = dialect;
    this.syntax = syntax;
  }

  static SqlLexer of(SqlDialect dialect) {
    return Lexers.ALL[dialect.ordinal()];
  }

  /** One lexer per dialect, made once the syntax tables below exist. */
  private static final class Lexers {
    static final SqlLexer[] ALL = new SqlLexer[SqlDialect.values().length];

    static {
      for (SqlDialect d : SqlDialect.values()) {
        ALL[d.ordinal()] = new SqlLexer(d, Syntax.of(d));
      }
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

    Syntax syntax;
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
    boolean inExec; // MySQL: inside an executable comment whose content runs

    Scan(SqlLexer lexer, String sql, List<SqlStatement> out) {
      this.syntax = lexer.syntax;
      this.sql = sql;
      this.n = sql.length();
      this.out = out;
    }

    /** This thread's scan, set up for {@code sql}; {@link #release} it after use. */
    static Scan reuse(SqlLexer lexer, String sql) {
      Scan s = SCANS.get();
      if (s == null) {
        s = new Scan(lexer, sql, null);
      } else {
        SCANS.set(null); // taken: a nested use (none today) gets its own
        s.syntax = lexer.syntax;
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
      scan();
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

    // ---- the token rules: one loop, the dialect's syntax decides where they differ

    private void scan() {
      inExec = false;
      int i = 0;
      while (i < n) {
        char c = sql.charAt(i);
        if (c == ';') {
          semicolon();
          i++;
        } else if (isSpace(c)) {
          i++;
        } else if (isWordChar(c) && c != '$') {
          i = word(i);
        } else {
          i = punctuation(c, i); // kept out of the loop, which stays small enough to inline
        }
      }
    }

    /** Comments, literals, quoted names, dollar quotes and other punctuation at {@code i}. */
    private int punctuation(char c, int i) {
      if (c == '-' && at(i + 1) == '-' && dashDashComment(i)) {
        return lineEnd(i + 2, syntax.crEndsLineComment);
      } else if (c == '#' && syntax.hashComments) {
        return lineEnd(i + 1, false);
      } else if (c == '/' && at(i + 1) == '*') {
        return blockComment(i);
      } else if (c == '*' && inExec && at(i + 1) == '/') {
        inExec = false; // the end of a MySQL executable comment whose content ran
        return i + 2;
      } else if (c == '\'') {
        return singleQuoted(i);
      } else if (c == '"') {
        return syntax.doubleQuotes == Quotes.IDENTIFIER
            ? quotedName(i, '"', '"')
            : quoted(
                i,
                '"',
                escapes(syntax.doubleQuotes, ALT_DOUBLE_QUOTE_ESCAPES),
                ALT_DOUBLE_QUOTE_ESCAPES);
      } else if (c == '`' && syntax.backtickNames) {
        return quotedName(i, '`', '`');
      } else if (c == '[' && syntax.bracketNames) {
        return quotedName(i, '[', ']');
      } else if (c == '$') {
        return syntax.dollarQuotes == Dollars.NONE ? word(i) : dollar(i);
      }
      return other(i);
    }

    /**
     * A semicolon ends the statement, except inside a body the server does not split (PostgreSQL's
     * BEGIN ATOMIC, SQLite's trigger; see the class comment).
     */
    private void semicolon() {
      if (atomic > 0) {
        atomicSemicolon = true; // a statement of a BEGIN ATOMIC body: not run now
      } else if (trigger == 1 || trigger == 2) {
        trigger = 2; // inside a trigger body: the semicolon ends a trigger command
      } else {
        endStatement();
        inExec = false; // MySQL lexes each statement of a multi-query afresh
      }
    }

    /** "--" starts a MySQL comment only before white space or a control character (sql_lex.cc). */
    private boolean dashDashComment(int i) {
      return !syntax.dashDashNeedsSpace || i + 2 >= n || mysqlDashDashEnd(at(i + 2));
    }

    private int blockComment(int i) {
      switch (syntax.blockComments) {
        case NESTED:
          return postgresComment(i);
        case EXECUTABLE:
          int next = mysqlComment(i);
          if (next < 0) { // an executable comment whose content is read as SQL
            inExec = true;
            return -next;
          }
          return next;
        default:
          int close = sql.indexOf("*/", i + 2);
          return close < 0 ? n : close + 2;
      }
    }

    private int singleQuoted(int i) {
      if (syntax.eStrings
          && i >= 2
          && (at(i - 1) == 'E' || at(i - 1) == 'e')
          && pgjdbcTerminates(at(i - 2))) {
        // pgjdbc's rule (Parser.parseSingleQuotes): E directly before, a separator before it
        return quoted(i, '\'', (alt & ALT_E_STRING_PLAIN) == 0, ALT_E_STRING_PLAIN);
      }
      if (syntax.singleQuotes == Quotes.PLAIN) {
        return quoted(i, '\'', false, 0);
      }
      return quoted(
          i,
          '\'',
          escapes(syntax.singleQuotes, ALT_SINGLE_QUOTE_ESCAPES),
          ALT_SINGLE_QUOTE_ESCAPES);
    }

    /** Whether a backslash escapes in this reading of quotes whose rule depends on a setting. */
    private boolean escapes(Quotes quotes, int feature) {
      boolean alternative = (alt & feature) != 0;
      return quotes == Quotes.BACKSLASH_UNLESS_SET ? !alternative : alternative;
    }

    private int dollar(int i) {
      if (syntax.dollarQuotes == Dollars.PGJDBC_OR_SERVER) {
        return postgresDollar(i);
      }
      int tagEnd = mysqlDollarTag(i);
      if (tagEnd <= 0) {
        return word(i);
      }
      seen |= ALT_DOLLAR;
      return (alt & ALT_DOLLAR) != 0 ? dollarQuote(i, tagEnd) : word(i);
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
      if (syntax.triggerBodies && trigger == 0 && isSqliteTriggerStart()) {
        trigger = 1;
      }
      if (syntax.atomicBodies && words > 1 && isWord(0, "CREATE")) {
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
          return syntax.escapedCall;
        }
        return SqlKind.OTHER;
      }
      Rule rule = syntax.keywords.get(sql, wordStart[0], wordEnd[0]);
      SqlKind kind = rule == null ? SqlKind.OTHER : rule.kind(this);
      // after MariaDB's SET STATEMENT ... FOR, the window holds the inner statement
      return syntax.setStatementFor && inner && kind == SqlKind.OTHER && autocommitNamed
          ? SqlKind.SET_AUTOCOMMIT
          : kind;
    }

    /** The kind a table gives word {@code w}, OTHER if the table does not hold the word. */
    SqlKind kindOf(int w, Keywords table) {
      if (w >= Math.min(words, WINDOW)) {
        return SqlKind.OTHER;
      }
      Rule rule = table.get(sql, wordStart[w], wordEnd[w]);
      return rule == null ? SqlKind.OTHER : rule.kind(this);
    }

    /** True when word {@code w} is one of {@code keywords}. */
    boolean isWordIn(int w, Keywords keywords) {
      return w < Math.min(words, WINDOW) && keywords.get(sql, wordStart[w], wordEnd[w]) != null;
    }

    /**
     * MySQL/MariaDB CREATE and DROP commit implicitly, but not CREATE [OR REPLACE] TEMPORARY TABLE
     * and DROP TEMPORARY TABLE; MariaDB's CREATE [OR REPLACE] TEMPORARY SEQUENCE does (measured on
     * 10.11: the share lock is gone).
     */
    SqlKind mysqlCreateOrDrop() {
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

    /** ROLLBACK [WORK | TRANSACTION] TO ...: a savepoint rollback. */
    boolean rollbackTo() {
      int w = isWord(1, "WORK") || isWord(1, "TRANSACTION") ? 2 : 1;
      return isWord(w, "TO");
    }

    /** COMMIT/END/ROLLBACK/ABORT [WORK | TRANSACTION] AND CHAIN (not AND NO CHAIN). */
    private boolean chained() {
      int w = isWord(1, "WORK") || isWord(1, "TRANSACTION") ? 2 : 1;
      return isWord(w, "AND") && isWord(w + 1, "CHAIN");
    }

    // ---- characters

    boolean isWord(int w, String keyword) {
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

    /** White space: every ASCII control character and the space, in all three servers. */
    private static boolean isSpace(char c) {
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

  // ---- the dialects' syntax
  // -------------------------------------------------------------------------

  /** How a quote's backslash reads. */
  private enum Quotes {
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

  private enum BlockComments {
    /** Ends at the first {@code *}{@code /}. */
    PLAIN,
    /** PostgreSQL: nested, as pgjdbc and as the server reads them. */
    NESTED,
    /** MySQL: executable, versioned and hint comments. */
    EXECUTABLE
  }

  private enum Dollars {
    /** {@code $} is a word character. */
    NONE,
    /** PostgreSQL: dollar quotes by pgjdbc's rule, and by the server's as another reading. */
    PGJDBC_OR_SERVER,
    /** MySQL 9.2+: dollar quotes as another reading. */
    MYSQL
  }

  /**
   * Where a dialect's lexical rules differ from the others': the one scanning loop asks this at the
   * characters that differ, and the first keyword's table classifies the statement.
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
  private record Syntax(
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

    static Syntax of(SqlDialect dialect) {
      switch (dialect) {
        case POSTGRESQL:
          return new Syntax(
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
          return new Syntax(
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
          return new Syntax(
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
          return new Syntax(
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
  }

  /** The kind of a statement whose first keyword (or, in a nested table, a later one) is known. */
  @FunctionalInterface
  private interface Rule {
    SqlKind kind(Scan s);
  }

  // Rules several dialects share.

  /** ROLLBACK [WORK | TRANSACTION] [TO [SAVEPOINT] name]. */
  private static final Rule ROLLBACK = s -> s.rollbackTo() ? SqlKind.ROLLBACK_TO : SqlKind.ROLLBACK;

  /** START TRANSACTION; anything else after START is not transaction control. */
  private static final Rule START_TRANSACTION =
      s -> s.isWord(1, "TRANSACTION") ? SqlKind.BEGIN : SqlKind.OTHER;

  /** SET TRANSACTION; any other SET is an ordinary statement. */
  private static final Rule SET_TRANSACTION =
      s -> s.isWord(1, "TRANSACTION") ? SqlKind.SET_TRANSACTION : SqlKind.OTHER;

  /** PostgreSQL: what CREATE, DROP and ALTER make of these objects cannot run in a transaction. */
  private static final Keywords POSTGRESQL_NON_TRANSACTIONAL_OBJECTS =
      Keywords.words("DATABASE", "TABLESPACE", "SUBSCRIPTION");

  private static final Keywords POSTGRESQL_KEYWORDS =
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
          .put(SqlKind.NON_TRANSACTIONAL, "VACUUM", "CLUSTER", "REINDEX", "DISCARD")
          .put(
              s ->
                  s.concurrently
                          || s.isWordIn(1, POSTGRESQL_NON_TRANSACTIONAL_OBJECTS)
                          || (s.isWord(0, "ALTER") && s.isWord(1, "SYSTEM"))
                      ? SqlKind.NON_TRANSACTIONAL
                      : SqlKind.OTHER,
              "CREATE",
              "DROP",
              "ALTER");

  /** MySQL XA: the second keyword decides. */
  private static final Keywords MYSQL_XA =
      new Keywords()
          .put(SqlKind.BEGIN, "START", "BEGIN")
          .put(SqlKind.PREPARE_TRANSACTION, "END", "PREPARE")
          .put("COMMIT", SqlKind.COMMIT_PREPARED)
          .put("ROLLBACK", SqlKind.ROLLBACK_PREPARED);

  /**
   * MySQL/MariaDB statements after which (and before which) the server commits implicitly, by their
   * first keyword (see {@link SqlKind#IMPLICIT_COMMIT}).
   */
  private static final String[] MYSQL_IMPLICIT_COMMITS = {
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

  private static final Keywords MYSQL_KEYWORDS =
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
          .put("XA", s -> s.kindOf(1, MYSQL_XA))
          .put(
              "SET",
              s ->
                  s.autocommitNamed
                      ? SqlKind.SET_AUTOCOMMIT
                      : s.isWord(1, "TRANSACTION")
                          ? SqlKind.SET_TRANSACTION
                          : s.isWord(1, "PASSWORD") || s.isWord(1, "DEFAULT")
                              ? SqlKind.IMPLICIT_COMMIT
                              : SqlKind.OTHER)
          .put(SqlKind.ROUTINE, "CALL", "EXECUTE")
          .put(Scan::mysqlCreateOrDrop, "CREATE", "DROP")
          .put("LOAD", s -> s.isWord(1, "INDEX") ? SqlKind.IMPLICIT_COMMIT : SqlKind.OTHER)
          .put(SqlKind.IMPLICIT_COMMIT, MYSQL_IMPLICIT_COMMITS);

  private static final Keywords SQLITE_KEYWORDS =
      new Keywords()
          .put("BEGIN", SqlKind.BEGIN)
          .put(SqlKind.COMMIT, "COMMIT", "END")
          .put("ROLLBACK", ROLLBACK)
          .put("SAVEPOINT", SqlKind.SAVEPOINT)
          .put("RELEASE", SqlKind.RELEASE)
          .put(SqlKind.NON_TRANSACTIONAL, "VACUUM", "ATTACH", "DETACH", "PRAGMA");

  private static final Keywords GENERIC_KEYWORDS =
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
  private static final class Keywords {
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

    private static boolean sameIgnoringAsciiCase(String sql, int from, String keyword) {
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

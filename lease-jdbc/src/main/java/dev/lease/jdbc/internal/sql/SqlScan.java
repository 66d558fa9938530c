package dev.lease.jdbc.internal.sql;

import static dev.lease.jdbc.internal.sql.SqlSyntax.ALT_DOLLAR;
import static dev.lease.jdbc.internal.sql.SqlSyntax.ALT_DOUBLE_QUOTE_ESCAPES;
import static dev.lease.jdbc.internal.sql.SqlSyntax.ALT_EXEC_SKIPPED;
import static dev.lease.jdbc.internal.sql.SqlSyntax.ALT_E_STRING_PLAIN;
import static dev.lease.jdbc.internal.sql.SqlSyntax.ALT_HINT_QUOTES;
import static dev.lease.jdbc.internal.sql.SqlSyntax.ALT_SERVER_COMMENT;
import static dev.lease.jdbc.internal.sql.SqlSyntax.ALT_SINGLE_QUOTE_ESCAPES;
import static dev.lease.jdbc.internal.sql.SqlSyntax.isAsciiLetter;
import static dev.lease.jdbc.internal.sql.SqlSyntax.isDigit;
import static dev.lease.jdbc.internal.sql.SqlSyntax.isPostgresIdentChar;
import static dev.lease.jdbc.internal.sql.SqlSyntax.isSpace;
import static dev.lease.jdbc.internal.sql.SqlSyntax.isWordChar;
import static dev.lease.jdbc.internal.sql.SqlSyntax.mysqlDashDashEnd;
import static dev.lease.jdbc.internal.sql.SqlSyntax.pgjdbcTerminates;

import dev.lease.jdbc.internal.sql.SqlSyntax.Dollars;
import dev.lease.jdbc.internal.sql.SqlSyntax.Quotes;
import java.util.EnumSet;
import java.util.List;

/** The state of one pass of the lexer over a text under one reading. */
final class SqlScan {

  /** One scan per thread for {@link #summarize}: the hot path allocates nothing. */
  private static final ThreadLocal<SqlScan> SCANS = new ThreadLocal<>();

  SqlSyntax syntax;
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
  /** Its first win.words and flags, what the classification rules read. */
  final StatementWords win = new StatementWords();

  int start;
  int end;
  int depth;
  int trigger; // SQLite CREATE TRIGGER: 1 in the body, 2 just after a semicolon, 3 after END
  int atomic; // PostgreSQL CREATE ... BEGIN ATOMIC: the open BEGIN ATOMIC and CASE blocks
  boolean afterBegin; // PostgreSQL: the CREATE statement's last word was BEGIN
  boolean atomicSemicolon; // PostgreSQL: a semicolon inside an open BEGIN ATOMIC body
  int lastWordStart; // for hint positions (MySQL): the word just before, -1 if another token
  boolean inExec; // MySQL: inside an executable comment whose content runs

  SqlScan(SqlSyntax syntax, String sql, List<SqlStatement> out) {
    this.syntax = syntax;
    this.sql = sql;
    win.sql = sql;
    this.n = sql.length();
    this.out = out;
  }

  /** This thread's scan, set up for {@code sql}; {@link #release} it after use. */
  static SqlScan reuse(SqlSyntax syntax, String sql) {
    SqlScan s = SCANS.get();
    if (s == null) {
      s = new SqlScan(syntax, sql, null);
    } else {
      SCANS.set(null); // taken: a nested use (none today) gets its own
      s.syntax = syntax;
      s.sql = sql;
      s.win.sql = sql;
      s.n = sql.length();
    }
    s.seen = 0;
    s.ambiguous = false;
    s.versionKey = 0;
    return s;
  }

  void release() {
    sql = null; // keep no text alive
    win.sql = null;
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
    win.reset();
    depth = 0;
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
      return lineEnd(i + 2, syntax.crEndsLineComment());
    } else if (c == '#' && syntax.hashComments()) {
      return lineEnd(i + 1, false);
    } else if (c == '/' && at(i + 1) == '*') {
      return blockComment(i);
    } else if (c == '*' && inExec && at(i + 1) == '/') {
      inExec = false; // the end of a MySQL executable comment whose content ran
      return i + 2;
    } else if (c == '\'') {
      return singleQuoted(i);
    } else if (c == '"') {
      return syntax.doubleQuotes() == Quotes.IDENTIFIER
          ? quotedName(i, '"', '"')
          : quoted(
              i,
              '"',
              escapes(syntax.doubleQuotes(), ALT_DOUBLE_QUOTE_ESCAPES),
              ALT_DOUBLE_QUOTE_ESCAPES);
    } else if (c == '`' && syntax.backtickNames()) {
      return quotedName(i, '`', '`');
    } else if (c == '[' && syntax.bracketNames()) {
      return quotedName(i, '[', ']');
    } else if (c == '$') {
      return syntax.dollarQuotes() == Dollars.NONE ? word(i) : dollar(i);
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
    return !syntax.dashDashNeedsSpace() || i + 2 >= n || mysqlDashDashEnd(at(i + 2));
  }

  private int blockComment(int i) {
    switch (syntax.blockComments()) {
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
    if (syntax.eStrings()
        && i >= 2
        && (at(i - 1) == 'E' || at(i - 1) == 'e')
        && pgjdbcTerminates(at(i - 2))) {
      // pgjdbc's rule (Parser.parseSingleQuotes): E directly before, a separator before it
      return quoted(i, '\'', (alt & ALT_E_STRING_PLAIN) == 0, ALT_E_STRING_PLAIN);
    }
    if (syntax.singleQuotes() == Quotes.PLAIN) {
      return quoted(i, '\'', false, 0);
    }
    return quoted(
        i,
        '\'',
        escapes(syntax.singleQuotes(), ALT_SINGLE_QUOTE_ESCAPES),
        ALT_SINGLE_QUOTE_ESCAPES);
  }

  /** Whether a backslash escapes in this reading of quotes whose rule depends on a setting. */
  private boolean escapes(Quotes quotes, int feature) {
    boolean alternative = (alt & feature) != 0;
    return quotes == Quotes.BACKSLASH_UNLESS_SET ? !alternative : alternative;
  }

  private int dollar(int i) {
    if (syntax.dollarQuotes() == Dollars.PGJDBC_OR_SERVER) {
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
   * A string from the quote at {@code i}: doubled quotes stay inside, a backslash escapes the next
   * character if {@code escapes}. A backslash inside marks {@code feature} as exercised (another
   * reading would end the string elsewhere). Returns the offset after it (the text's end if
   * unterminated).
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
              && win.words > 0
              && win.isWord(0, "SET")
              && win.equalsIgnoreCase(i + 1, j, "AUTOCOMMIT")) {
            win.autocommitNamed = true; // ANSI_QUOTES: "autocommit" is an identifier
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
   * A quoted identifier (no escapes, doubled closing quotes stay inside). For MySQL, a quoted name
   * in a SET statement may name autocommit.
   */
  private int quotedName(int i, char open, char close) {
    int j = i + 1;
    while (j < n) {
      if (sql.charAt(j) == close) {
        if (open == close && at(j + 1) == close) {
          j += 2;
          continue;
        }
        if (win.words > 0 && win.isWord(0, "SET") && win.equalsIgnoreCase(i + 1, j, "AUTOCOMMIT")) {
          win.autocommitNamed = true;
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
   * comment). Other reading: the server's scanner ({@code /}{@code *} and {@code *}{@code /} never
   * overlap).
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

  /** The offset after the tag's closing {@code $} if a dollar quote opens at {@code i}, else 0. */
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
   * ends it at the next {@code *}{@code /}). The rules of sql_lex.cc: {@code /*!} runs its content
   * on every server; {@code /*!NNNNN} only from version NNNNN on (a skipped one may hold one nested
   * comment); {@code /*M!} and {@code /*M!NNNNNN} run on MariaDB only; {@code /*+} is an optimizer
   * hint after SELECT, INSERT, REPLACE, UPDATE and DELETE (MySQL; its scanner skips quoted
   * strings); any other comment ends at the first {@code *}{@code /}.
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
    return win.equalsIgnoreCase(wordAt, e, "SELECT")
        || win.equalsIgnoreCase(wordAt, e, "INSERT")
        || win.equalsIgnoreCase(wordAt, e, "REPLACE")
        || win.equalsIgnoreCase(wordAt, e, "UPDATE")
        || win.equalsIgnoreCase(wordAt, e, "DELETE");
  }

  /**
   * Versioned comments with different versions run on some servers and not on others, so a union of
   * "all run" and "none runs" does not cover every server: the text is ambiguous.
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
      win.firstChar = c;
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
      win.firstIsWord = isWord;
    }
    if (trigger == 2 && !isWord) {
      trigger = 1; // a trigger command that is not END follows the semicolon
    }
    end = to;
    lastWordStart = isWord ? from : -1;
  }

  private void onWord(int from, int to) {
    if (trigger == 2) {
      trigger = win.equalsIgnoreCase(from, to, "END") ? 3 : 1;
    }
    if (win.words > 0) {
      if (win.isWord(0, "SET")) {
        if (win.equalsIgnoreCase(from, to, "AUTOCOMMIT")) {
          win.autocommitNamed = true;
        }
        if (!win.inner
            && depth == 0
            && win.words > 1
            && win.isWord(1, "STATEMENT")
            && win.equalsIgnoreCase(from, to, "FOR")) {
          win.inner = true; // MariaDB SET STATEMENT var = value [, ...] FOR statement
          win.words = 0;
          return;
        }
      } else if (win.equalsIgnoreCase(from, to, "CONCURRENTLY")) {
        win.concurrently = true;
      }
    }
    if (win.words < StatementWords.WINDOW) {
      win.wordStart[win.words] = from;
      win.wordEnd[win.words] = to;
    }
    win.words++;
    if (syntax.triggerBodies() && trigger == 0 && isSqliteTriggerStart()) {
      trigger = 1;
    }
    if (syntax.atomicBodies() && win.words > 1 && win.isWord(0, "CREATE")) {
      atomicBody(from, to);
    }
  }

  /** PostgreSQL: tracks {@code BEGIN ATOMIC ... END} in a CREATE statement (class comment). */
  private void atomicBody(int from, int to) {
    if (atomic > 0) {
      if (win.equalsIgnoreCase(from, to, "CASE")) {
        atomic++;
      } else if (win.equalsIgnoreCase(from, to, "END")) {
        atomic--;
      }
    } else if (afterBegin && win.equalsIgnoreCase(from, to, "ATOMIC")) {
      atomic = 1;
    }
    afterBegin = atomic == 0 && win.equalsIgnoreCase(from, to, "BEGIN");
  }

  private boolean isSqliteTriggerStart() {
    if (win.words == 3 && win.isWord(0, "CREATE") && win.isWord(1, "TRIGGER")) {
      return true;
    }
    return win.words == 3
        && win.isWord(0, "CREATE")
        && (win.isWord(1, "TEMP") || win.isWord(1, "TEMPORARY"))
        && win.isWord(2, "TRIGGER");
  }

  private void endStatement() {
    if (atomic > 0 && atomicSemicolon) {
      ambiguous = true; // the body never closed: where the server splits is not known
    }
    if (start >= 0) {
      SqlKind kind = syntax.classify(win);
      boolean chains =
          (kind == SqlKind.COMMIT || kind == SqlKind.ROLLBACK) && SqlSyntax.chained(win);
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

  // ---- characters

  private char at(int i) {
    return i >= 0 && i < n ? sql.charAt(i) : 0;
  }
}

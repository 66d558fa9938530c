package dev.lease.conformance.failover;

import java.util.ArrayList;
import java.util.List;

/**
 * The holder processes' lines: fields separated by tabs, one line per message. A field may hold
 * anything (a password, an error message with line breaks), so tabs, line breaks and backslashes in
 * it are escaped ({@code \t}, {@code \n}, {@code \r}, {@code \\}): a line always splits into the
 * fields it was made of.
 */
final class LineProtocol {

  private LineProtocol() {}

  /** One line of {@code fields} (each by {@link String#valueOf}), without its line break. */
  static String line(Object... fields) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < fields.length; i++) {
      if (i > 0) {
        sb.append('\t');
      }
      String f = String.valueOf(fields[i]);
      for (int j = 0; j < f.length(); j++) {
        char c = f.charAt(j);
        switch (c) {
          case '\t' -> sb.append("\\t");
          case '\n' -> sb.append("\\n");
          case '\r' -> sb.append("\\r");
          case '\\' -> sb.append("\\\\");
          default -> sb.append(c);
        }
      }
    }
    return sb.toString();
  }

  /**
   * The fields of {@code line}.
   *
   * @throws IllegalArgumentException for an escape this protocol does not write
   */
  static String[] fields(String line) {
    List<String> out = new ArrayList<>();
    StringBuilder f = new StringBuilder();
    for (int i = 0; i < line.length(); i++) {
      char c = line.charAt(i);
      if (c == '\t') {
        out.add(f.toString());
        f.setLength(0);
      } else if (c == '\\') {
        char e = i + 1 < line.length() ? line.charAt(++i) : '?';
        switch (e) {
          case 't' -> f.append('\t');
          case 'n' -> f.append('\n');
          case 'r' -> f.append('\r');
          case '\\' -> f.append('\\');
          default -> throw new IllegalArgumentException("bad escape \\" + e + " in: " + line);
        }
      } else {
        f.append(c);
      }
    }
    out.add(f.toString());
    return out.toArray(String[]::new);
  }

  /**
   * What a child's command line may show of {@code url}, which the child needs only to load its
   * driver: the {@code jdbc:} scheme up to its last colon (never a host, user, password or
   * parameter: a command line is visible to every user of the machine), and a placeholder the
   * driver accepts ({@code //localhost/x} where the URL names hosts, {@code x} otherwise).
   */
  static String driverUrl(String url) {
    int run = 0;
    while (run < url.length()
        && (Character.isLetterOrDigit(url.charAt(run))
            || url.charAt(run) == ':'
            || url.charAt(run) == '-')) {
      run++;
    }
    int lastColon = url.lastIndexOf(':', run - 1);
    if (lastColon < 0) {
      return "jdbc:x";
    }
    String scheme = url.substring(0, lastColon + 1);
    return url.startsWith("//", lastColon + 1) ? scheme + "//localhost/x" : scheme + "x";
  }
}

package dev.lease.agent;

import java.util.regex.Pattern;

/** Keeps passwords out of every message the agent prints: URLs, arguments and driver errors. */
final class Secrets {

  /** {@code password=...} in a URL query or property list, up to the next separator. */
  private static final Pattern URL_PASSWORD =
      Pattern.compile("(?i)(password|pwd|passwd)=[^&;,)\\s]*");

  /** {@code scheme://user:secret@host} */
  private static final Pattern USER_INFO = Pattern.compile("(//[^/:@\\s]*):[^/@\\s]*@");

  private Secrets() {}

  static String redactUrl(String url) {
    if (url == null) {
      return null;
    }
    String s = URL_PASSWORD.matcher(url).replaceAll("$1=****");
    return USER_INFO.matcher(s).replaceAll("$1:****@");
  }

  /** An agent argument as it may be shown: the value of a password key is hidden. */
  static String redactArgument(String pair) {
    return redactUrl(pair);
  }

  /** {@code message} with every occurrence of {@code password}, and URL passwords, hidden. */
  static String redact(String message, String password) {
    if (message == null) {
      return null;
    }
    String s = message;
    if (password != null && !password.isEmpty()) {
      s = s.replace(password, "****");
    }
    return redactUrl(s);
  }
}

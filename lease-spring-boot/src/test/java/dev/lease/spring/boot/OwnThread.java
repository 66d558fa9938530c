package dev.lease.spring.boot;

import java.util.concurrent.Executor;

/**
 * Runs each task on a thread of its own: the tests' blocking calls run beside the test's own
 * thread, and with the classes running side by side (junit-platform.properties) they must not wait
 * for each other in the common pool, which has only cores − 1 threads.
 */
final class OwnThread {

  static final Executor EXECUTOR =
      task -> {
        Thread t = new Thread(task, "test-call");
        t.setDaemon(true);
        t.start();
      };

  private OwnThread() {}
}

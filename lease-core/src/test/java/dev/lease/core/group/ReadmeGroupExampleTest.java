package dev.lease.core.group;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.lease.core.Fixture;
import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseManager;
import dev.lease.testing.TestDatabase;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * Keeps docs/groups.md's code compiling and true: the code between the README markers below must
 * appear verbatim in docs/groups.md, and it runs here on SQLite.
 */
class ReadmeGroupExampleTest {

  /** Where the example's keys come from. */
  interface Inventory {
    List<String> deviceIds();
  }

  /** The example's per-key work. */
  interface Workers {
    void start(String device, Lease lease);

    void stop(String device);
  }

  record Started(LeaseManager leases, LeaseGroup devices) {}

  static Started example(DataSource dataSource, Inventory inventory, Workers workers) {
    // spotless:off
    // README:begin
    LeaseManager leases = LeaseManager.builder(dataSource)
        .instance("pod-1")
        .createTableIfMissing()
        .build();

    LeaseGroup devices = LeaseGroup.builder(leases, "devices")
        .keys(inventory::deviceIds)                  // the candidate keys, read every pass
        .callbacks(new GroupCallbacks() {
          @Override public void onAcquired(String device, Lease lease) {
            workers.start(device, lease);            // the device's work runs under its own lease
          }
          @Override public void onReleasing(String device) {
            workers.stop(device);                    // stop first: the release runs after this returns
          }
          @Override public void onLost(String device) {
            workers.stop(device);                    // no longer ours: its fenced transactions fail
          }
        })
        .passInterval(Duration.ofSeconds(2))
        .createTableIfMissing()                      // the members table: "leases_members"
        .build();
    devices.start();
    devices.closeOnShutdown();                       // on SIGTERM: hand every device over at once
    // on shutdown without the hook: devices.close(), then leases.close()
    // README:end
    // spotless:on
    return new Started(leases, devices);
  }

  /** What a device's work does with its lease: fence its transactions with the key's term. */
  static void deviceWork(Lease lease, Runnable transaction) {
    // spotless:off
    // README:work:begin
    try (var scope = LeaseContext.bind(lease)) {
      transaction.run();                             // a FencedDataSource verifies this key's term
    }
    // README:work:end
    // spotless:on
  }

  @Test
  void theReadmeExampleSharesTheDevices() {
    try (HikariDataSource ds = TestDatabase.SQLITE.pooled(4)) {
      Map<String, Long> running = new ConcurrentHashMap<>();
      Started s =
          example(
              ds,
              () -> List.of("device-1", "device-2", "device-3"),
              new Workers() {
                @Override
                public void start(String device, Lease lease) {
                  deviceWork(
                      lease, () -> running.put(device, LeaseContext.currentTerm().orElseThrow()));
                }

                @Override
                public void stop(String device) {
                  running.remove(device);
                }
              });
      Fixture.await("the three devices", Duration.ofSeconds(20), () -> running.size() == 3);
      assertEquals(s.devices().lease("device-2").orElseThrow().term(), running.get("device-2"));
      s.devices().close();
      assertTrue(running.isEmpty(), "every device's work was stopped");
      s.leases().close();
    }
  }

  @Test
  void theReadmeShowsExactlyTheCodeThatCompilesHere() throws IOException {
    Path module = Path.of("").toAbsolutePath();
    Path source = module.resolve("src/test/java/dev/lease/core/group/ReadmeGroupExampleTest.java");
    Path readme = module.resolveSibling("docs").resolve("groups.md");
    String readmeText = Files.readString(readme);
    for (String marker : List.of("README", "README:work")) {
      List<String> block = block(source, marker);
      assertTrue(block.size() >= 3, "found the example " + marker + " in " + source);
      assertTrue(
          readmeText.contains(String.join("\n", block)),
          "docs/groups.md must contain the example of "
              + source.getFileName()
              + " verbatim:\n"
              + String.join("\n", block));
    }
  }

  private static List<String> block(Path source, String marker) throws IOException {
    List<String> block = new ArrayList<>();
    boolean in = false;
    String indent = null;
    for (String line : Files.readAllLines(source)) {
      if (line.trim().equals("// " + marker + ":begin")) {
        in = true;
        indent = line.substring(0, line.indexOf('/'));
      } else if (line.trim().equals("// " + marker + ":end")) {
        in = false;
      } else if (in) {
        block.add(line.startsWith(indent) ? line.substring(indent.length()) : line.trim());
      }
    }
    return block;
  }
}

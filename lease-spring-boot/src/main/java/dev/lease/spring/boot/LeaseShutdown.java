package dev.lease.spring.boot;

import dev.lease.core.LeaseManager;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.context.SmartLifecycle;

/**
 * The second step of the starter's shutdown: right after {@link LeaseScheduledMethods} closed the
 * scheduler, closes the context's {@link LeaseManager}, which stops the work under its leases (the
 * running {@link Leased} calls: interrupted, awaited up to the grace period) and then releases the
 * leases, so other replicas claim them at once. It runs in the lifecycle's stop phase, before any
 * bean is destroyed, so interrupted work still finds the beans it uses (a JPA EntityManagerFactory,
 * a pool) open, and the release still finds its pool open. A manager not yet made (lazy
 * initialisation) is not made now; the bean's own destroy method closes it again (idempotent).
 */
final class LeaseShutdown implements SmartLifecycle {

  /** Stops after {@link LeaseScheduledMethods#PHASE}: lower phases stop later. */
  static final int PHASE = LeaseScheduledMethods.PHASE - 1;

  private final ConfigurableListableBeanFactory beanFactory;
  private volatile boolean running;

  LeaseShutdown(ConfigurableListableBeanFactory beanFactory) {
    this.beanFactory = beanFactory;
  }

  @Override
  public void start() {
    running = true;
  }

  @Override
  public void stop() {
    running = false;
    for (String name : beanFactory.getBeanNamesForType(LeaseManager.class, false, false)) {
      if (beanFactory.containsSingleton(name)) {
        beanFactory.getBean(name, LeaseManager.class).close();
      }
    }
  }

  @Override
  public boolean isRunning() {
    return running;
  }

  @Override
  public int getPhase() {
    return PHASE;
  }
}

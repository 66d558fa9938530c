package dev.lease.spring.boot;

import dev.lease.core.LeaseManager;
import dev.lease.core.scheduler.LeaseScheduler;
import dev.lease.core.scheduler.Schedule;
import dev.lease.core.scheduler.ScheduledJob;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.aop.framework.AopProxyUtils;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.context.SmartLifecycle;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.env.Environment;
import org.springframework.scheduling.support.CronExpression;

/**
 * Finds {@link LeaseScheduled} methods and runs them as jobs of one {@link LeaseScheduler} from the
 * context's start; at shutdown closes the scheduler (lease-core stops the running rounds, then
 * releases their leases), before {@link LeaseShutdown} closes the lease manager.
 */
final class LeaseScheduledMethods implements BeanPostProcessor, SmartLifecycle, Ordered {

  private static final Logger log = LoggerFactory.getLogger(LeaseScheduledMethods.class);
  private static final Pattern SHORT_DURATION =
      Pattern.compile("(\\d+)\\s*(ms|s|m|h|d)", Pattern.CASE_INSENSITIVE);

  /**
   * Stops after the web server's graceful shutdown (requests in flight may call leased methods) and
   * after Spring's own task schedulers; {@link LeaseShutdown} stops right after it.
   */
  static final int PHASE = SmartLifecycle.DEFAULT_PHASE - 4096;

  private final Environment environment;
  private final BeanFactory beanFactory;
  private final Supplier<LeaseManager> manager;
  private final Supplier<LeaseProperties> properties;
  private final Supplier<LeasesInUse> inUse;
  private final List<Found> found = new ArrayList<>();
  private final Map<String, Found> byName = new HashMap<>();
  private volatile LeaseScheduler scheduler;
  private volatile boolean running;

  private record Found(String job, String beanName, Method method, Schedule schedule) {}

  LeaseScheduledMethods(
      Environment environment,
      BeanFactory beanFactory,
      Supplier<LeaseManager> manager,
      Supplier<LeaseProperties> properties,
      Supplier<LeasesInUse> inUse) {
    this.environment = environment;
    this.beanFactory = beanFactory;
    this.manager = manager;
    this.properties = properties;
    this.inUse = inUse;
  }

  @Override
  public int getOrder() {
    return Ordered.LOWEST_PRECEDENCE;
  }

  @Override
  public Object postProcessAfterInitialization(Object bean, String beanName) {
    Class<?> type = AopProxyUtils.ultimateTargetClass(bean);
    Map<Method, LeaseScheduled> methods =
        MethodIntrospector.selectMethods(
            type,
            (MethodIntrospector.MetadataLookup<LeaseScheduled>)
                m -> AnnotatedElementUtils.findMergedAnnotation(m, LeaseScheduled.class));
    methods.forEach((method, annotation) -> register(beanName, type, method, annotation));
    return bean;
  }

  private synchronized void register(
      String beanName, Class<?> type, Method method, LeaseScheduled annotation) {
    String where = "@LeaseScheduled " + type.getName() + "." + method.getName();
    if (method.getParameterCount() > 1
        || (method.getParameterCount() == 1
            && method.getParameterTypes()[0] != ScheduledJob.Round.class
            && method.getParameterTypes()[0] != Instant.class)) {
      throw new IllegalStateException(
          where + " must take no argument, or one: ScheduledJob.Round or java.time.Instant");
    }
    String job =
        annotation.name().isEmpty()
            ? type.getSimpleName() + "." + method.getName()
            : environment.resolveRequiredPlaceholders(annotation.name());
    Schedule schedule = schedule(where, annotation);
    try {
      ScheduledJob.of(job, schedule, round -> {}); // checks the name now, not at the first claim
    } catch (IllegalArgumentException e) {
      throw new IllegalStateException(where + ": " + e.getMessage(), e);
    }
    Found f = new Found(job, beanName, method, schedule);
    Found other = byName.putIfAbsent(job, f);
    if (other != null) {
      throw new IllegalStateException(
          where
              + " and "
              + other.method()
              + " have the same job name '"
              + job
              + "'; give each its own name");
    }
    found.add(f);
  }

  private Schedule schedule(String where, LeaseScheduled a) {
    String cron = environment.resolveRequiredPlaceholders(a.cron()).trim();
    String rate = environment.resolveRequiredPlaceholders(a.fixedRate()).trim();
    if (cron.isEmpty() == rate.isEmpty()) {
      throw new IllegalStateException(
          where
              + " needs exactly one of cron and fixedRate (got cron='"
              + cron
              + "', fixedRate='"
              + rate
              + "')");
    }
    if (!rate.isEmpty()) {
      Duration period = parseDuration(where, rate);
      Instant anchor;
      try {
        anchor = Instant.parse(environment.resolveRequiredPlaceholders(a.anchor()).trim());
      } catch (DateTimeParseException e) {
        throw new IllegalStateException(
            where
                + ": anchor '"
                + a.anchor()
                + "' is not an ISO-8601 instant such as"
                + " 2026-01-01T00:05:00Z",
            e);
      }
      try {
        return Schedule.fixedRate(period, anchor);
      } catch (IllegalArgumentException e) {
        throw new IllegalStateException(where + ": " + e.getMessage(), e);
      }
    }
    CronExpression expression;
    ZoneId zone;
    try {
      expression = CronExpression.parse(cron);
      zone = ZoneId.of(a.zone());
    } catch (RuntimeException e) {
      throw new IllegalStateException(where + ": " + e.getMessage(), e);
    }
    return new CronSchedule(expression, zone, cron);
  }

  /**
   * A cron expression as a Schedule: a pure function of its argument, the same on every replica.
   */
  private record CronSchedule(CronExpression cron, ZoneId zone, String text) implements Schedule {
    @Override
    public Optional<Instant> nextAfter(Instant after) {
      ZonedDateTime next = cron.next(after.atZone(zone));
      return Optional.ofNullable(next).map(ZonedDateTime::toInstant);
    }

    @Override
    public String toString() {
      return "cron '" + text + "' " + zone;
    }
  }

  static Duration parseDuration(String where, String text) {
    Matcher m = SHORT_DURATION.matcher(text);
    try {
      if (m.matches()) {
        long n = Long.parseLong(m.group(1));
        switch (m.group(2).toLowerCase(Locale.ROOT)) {
          case "ms":
            return Duration.ofMillis(n);
          case "s":
            return Duration.ofSeconds(n);
          case "m":
            return Duration.ofMinutes(n);
          case "h":
            return Duration.ofHours(n);
          default:
            return Duration.ofDays(n);
        }
      }
      return Duration.parse(text);
    } catch (RuntimeException e) {
      throw new IllegalStateException(
          where
              + ": fixedRate '"
              + text
              + "' is not a duration such as 500ms, 10s, 5m, 1h or PT10M",
          e);
    }
  }

  @Override
  public synchronized void start() {
    if (running) {
      return;
    }
    running = true;
    LeaseProperties props = properties.get();
    if (found.isEmpty() || !props.getScheduler().isEnabled()) {
      return;
    }
    LeaseScheduler.Builder b =
        LeaseScheduler.builder(manager.get()).pollInterval(props.getScheduler().getPollInterval());
    LeasesInUse leases = inUse.get();
    for (Found f : found) {
      Object bean = beanFactory.getBean(f.beanName());
      Method invocable = AopUtils.selectInvocableMethod(f.method(), bean.getClass());
      b.job(
          f.job(),
          f.schedule(),
          round -> {
            try (LeasesInUse.Use use = leases.use(round.lease())) {
              invoke(bean, invocable, round);
            }
          });
    }
    scheduler = b.build();
    scheduler.start();
    log.info("lease scheduler started: {}", scheduler);
  }

  private static void invoke(Object bean, Method method, ScheduledJob.Round round)
      throws Exception {
    Object[] args;
    if (method.getParameterCount() == 0) {
      args = new Object[0];
    } else if (method.getParameterTypes()[0] == Instant.class) {
      args = new Object[] {round.instant()};
    } else {
      args = new Object[] {round};
    }
    try {
      method.setAccessible(true);
      method.invoke(bean, args);
    } catch (InvocationTargetException e) {
      Throwable cause = e.getCause();
      if (cause instanceof Exception ex) {
        throw ex;
      }
      if (cause instanceof Error err) {
        throw err;
      }
      throw e;
    }
  }

  /**
   * Closes the scheduler: lease-core interrupts the running rounds, waits up to the grace period
   * for them to end, then releases their leases (their instants run again once, here or on another
   * replica). Shutdown is not a loss: no failure policy runs.
   */
  @Override
  public synchronized void stop() {
    if (!running) {
      return;
    }
    running = false;
    LeaseScheduler s = scheduler;
    scheduler = null;
    if (s != null) {
      s.close();
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

  /** The jobs found, for the endpoint: name and schedule. */
  synchronized Map<String, String> jobs() {
    Map<String, String> jobs = new HashMap<>();
    found.forEach(f -> jobs.put(f.job(), f.schedule().toString()));
    return jobs;
  }
}

package dev.lease.spring.boot;

import java.lang.reflect.Method;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.context.expression.BeanFactoryResolver;
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.core.env.Environment;
import org.springframework.expression.Expression;
import org.springframework.expression.common.TemplateParserContext;
import org.springframework.expression.spel.standard.SpelExpressionParser;

/**
 * Turns a lease name template into a name: {@code ${...}} placeholders from the environment, then
 * {@code #{...}} SpEL with the method's arguments as variables and the bean as root object.
 */
final class LeaseNameResolver {

  private final Environment environment;
  private final BeanFactory beanFactory;
  private final SpelExpressionParser parser = new SpelExpressionParser();
  private final ParameterNameDiscoverer parameterNames = new DefaultParameterNameDiscoverer();
  private final Map<String, Expression> expressions = new ConcurrentHashMap<>();

  LeaseNameResolver(Environment environment, BeanFactory beanFactory) {
    this.environment = environment;
    this.beanFactory = beanFactory;
  }

  /** The template with its placeholders resolved: what does not depend on a call. */
  String resolvePlaceholders(String template) {
    return environment.resolveRequiredPlaceholders(template);
  }

  /**
   * The lease name for one call.
   *
   * @throws IllegalStateException if an expression fails or yields nothing, naming the method
   */
  String resolve(String template, Method method, Object[] args, Object target) {
    String resolved = resolvePlaceholders(template);
    if (!resolved.contains("#{")) {
      return resolved;
    }
    Expression expression =
        expressions.computeIfAbsent(
            resolved, t -> parser.parseExpression(t, new TemplateParserContext()));
    MethodBasedEvaluationContext context =
        new MethodBasedEvaluationContext(target, method, args, parameterNames);
    if (beanFactory != null) {
      context.setBeanResolver(new BeanFactoryResolver(beanFactory));
    }
    String name;
    try {
      name = expression.getValue(context, String.class);
    } catch (RuntimeException e) {
      throw new IllegalStateException(
          "lease name '"
              + template
              + "' of "
              + method
              + " could not be evaluated: "
              + e.getMessage(),
          e);
    }
    if (name == null || name.isEmpty()) {
      throw new IllegalStateException(
          "lease name '" + template + "' of " + method + " evaluated to an empty name");
    }
    return name;
  }
}

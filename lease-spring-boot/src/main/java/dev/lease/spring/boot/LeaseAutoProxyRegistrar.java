package dev.lease.spring.boot;

import org.springframework.aop.config.AopConfigUtils;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.context.annotation.ImportBeanDefinitionRegistrar;
import org.springframework.core.type.AnnotationMetadata;

/**
 * Makes sure an auto-proxy creator applies the {@code @Leased} advisor (an infrastructure advisor),
 * as {@code @EnableTransactionManagement} does for its own; Spring Boot's AOP auto-configuration
 * escalates it to class proxies.
 */
final class LeaseAutoProxyRegistrar implements ImportBeanDefinitionRegistrar {
  @Override
  public void registerBeanDefinitions(
      AnnotationMetadata importingClassMetadata, BeanDefinitionRegistry registry) {
    AopConfigUtils.registerAutoProxyCreatorIfNecessary(registry);
  }
}

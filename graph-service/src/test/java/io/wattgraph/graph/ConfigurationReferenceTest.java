package io.wattgraph.graph;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Constructor;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.context.annotation.ClassPathScanningCandidateComponentProvider;
import org.springframework.core.type.filter.AnnotationTypeFilter;

/**
 * README.md's configuration table names every {@code wattgraph.*} property the service binds, with its default, and
 * nothing else. The properties are read from the {@code @ConfigurationProperties} records on the class path (a map
 * of records as {@code name[ID].key}, any other map as {@code name.*}); a default is the record's
 * {@code @DefaultValue}, overridden by {@code application.properties}, and blank when there is none.
 */
class ConfigurationReferenceTest {

    private static final Pattern ROW = Pattern.compile("^\\| `(wattgraph\\.[^`]+)` \\| (?:`([^`]*)`)? *\\|");

    @Test
    void theReadmeTableIsEveryBoundPropertyWithItsDefault() throws Exception {
        Map<String, String> bound = boundProperties();
        Properties application = applicationProperties();
        application.stringPropertyNames().stream().filter(k -> k.startsWith("wattgraph.")).forEach(k -> {
            assertThat(bound).as("application.properties sets a property nothing binds").containsKey(k);
            bound.put(k, application.getProperty(k));
        });
        assertThat(bound).as("bound properties found").hasSizeGreaterThan(30);

        List<String> lines = Files.readAllLines(Path.of("README.md"));
        Map<String, String> documented = new TreeMap<>();
        List<Integer> rows = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            Matcher m = ROW.matcher(lines.get(i));
            if (m.find()) {
                String before = documented.put(m.group(1), m.group(2) == null ? "" : m.group(2));
                assertThat(before).as("README names %s twice", m.group(1)).isNull();
                rows.add(i);
            }
        }
        assertThat(rows).as("README table rows of wattgraph.* properties").isNotEmpty();
        assertThat(rows.get(rows.size() - 1) - rows.get(0)).as("the rows form one table").isEqualTo(rows.size() - 1);
        assertThat(documented).as("README.md's configuration table (property -> default)").isEqualTo(bound);
    }

    /** Every property of the service's {@code @ConfigurationProperties} records, with the record's default. */
    static Map<String, String> boundProperties() throws Exception {
        ClassPathScanningCandidateComponentProvider scanner = new ClassPathScanningCandidateComponentProvider(false);
        scanner.addIncludeFilter(new AnnotationTypeFilter(ConfigurationProperties.class));
        Map<String, String> out = new TreeMap<>();
        for (BeanDefinition d : scanner.findCandidateComponents(GraphServiceApplication.class.getPackageName())) {
            Class<?> type = Class.forName(d.getBeanClassName());
            ConfigurationProperties annotation = type.getAnnotation(ConfigurationProperties.class);
            String prefix = annotation.prefix().isEmpty() ? annotation.value() : annotation.prefix();
            assertThat(type.isRecord()).as("%s is a record", type).isTrue();
            RecordComponent[] components = type.getRecordComponents();
            Constructor<?> canonical = type.getDeclaredConstructor(
                    Arrays.stream(components).map(RecordComponent::getType).toArray(Class<?>[]::new));
            for (int i = 0; i < components.length; i++) {
                String name = prefix + "." + kebab(components[i].getName());
                DefaultValue dv = canonical.getParameters()[i].getAnnotation(DefaultValue.class);
                Type generic = components[i].getGenericType();
                if (Map.class.isAssignableFrom(components[i].getType())) {
                    Type value = ((ParameterizedType) generic).getActualTypeArguments()[1];
                    if (value instanceof Class<?> entry && entry.isRecord()) {
                        for (RecordComponent c : entry.getRecordComponents()) {
                            out.put(name + "[ID]." + kebab(c.getName()), "");
                        }
                    } else {
                        out.put(name + ".*", "");
                    }
                } else {
                    out.put(name, dv == null ? "" : String.join(",", dv.value()));
                }
            }
        }
        return out;
    }

    private static Properties applicationProperties() throws IOException {
        Properties p = new Properties();
        try (InputStream in = ConfigurationReferenceTest.class.getResourceAsStream("/application.properties")) {
            p.load(in);
        }
        return p;
    }

    private static String kebab(String camel) {
        return camel.replaceAll("([a-z0-9])([A-Z])", "$1-$2").toLowerCase(Locale.ROOT);
    }
}

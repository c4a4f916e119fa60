package io.wattgraph.graph.model;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The "process type" of BlackBox §7.3 (Fig. 6): what a process runs, from its command line, so that processes
 * of the same program on different hosts aggregate together.
 * <ul>
 *   <li>JVM ({@code java}): the main class' simple name (e.g. {@code CoarseGrainedExecutorBackend}), or the
 *       jar's file name for {@code -jar}, or the module for {@code -m}</li>
 *   <li>Python, Node.js, Ruby, Perl, shells: the script's file name (or {@code python -m MODULE})</li>
 *   <li>anything else: {@code comm}, or the executable's file name when comm is missing</li>
 * </ul>
 * Arguments may be separated by NULs (raw /proc cmdline) or spaces.
 */
public final class ProcessTypes {

    private static final Set<String> JAVA_OPTIONS_WITH_ARGUMENT =
            Set.of("-cp", "-classpath", "--class-path", "--module-path", "-p", "--add-modules", "--add-opens",
                    "--add-exports", "--add-reads");
    private static final Set<String> INTERPRETERS = Set.of("python", "node", "nodejs", "ruby", "perl", "bash", "sh",
            "php");

    private ProcessTypes() {
    }

    public static String of(String cmdline, String comm) {
        List<String> args = split(cmdline);
        String fallback = comm != null && !comm.isBlank() ? comm : (args.isEmpty() ? "?" : baseName(args.get(0)));
        if (args.isEmpty()) {
            return fallback;
        }
        String exe = baseName(args.get(0));
        if (exe.equals("java")) {
            return javaType(args, fallback);
        }
        String interpreter = exe.replaceAll("[0-9.]+$", ""); // python3.11 -> python
        if (INTERPRETERS.contains(interpreter)) {
            return scriptType(interpreter, args, fallback);
        }
        return fallback;
    }

    private static String javaType(List<String> args, String fallback) {
        for (int i = 1; i < args.size(); i++) {
            String a = args.get(i);
            if (a.equals("-jar") && i + 1 < args.size()) {
                return baseName(args.get(i + 1));
            }
            if ((a.equals("-m") || a.equals("--module")) && i + 1 < args.size()) {
                String module = args.get(i + 1);
                return simpleClassName(module.contains("/") ? module.substring(module.indexOf('/') + 1) : module);
            }
            if (JAVA_OPTIONS_WITH_ARGUMENT.contains(a)) {
                i++;
                continue;
            }
            if (!a.startsWith("-")) {
                return simpleClassName(a);
            }
        }
        return fallback;
    }

    private static String scriptType(String interpreter, List<String> args, String fallback) {
        for (int i = 1; i < args.size(); i++) {
            String a = args.get(i);
            if (a.equals("-m") && i + 1 < args.size()) {
                return interpreter + " -m " + args.get(i + 1);
            }
            if (a.equals("-c") || a.equals("-e")) {
                return fallback;
            }
            if (!a.startsWith("-")) {
                return baseName(a);
            }
        }
        return fallback;
    }

    private static String simpleClassName(String className) {
        int dot = className.lastIndexOf('.');
        return dot >= 0 && dot < className.length() - 1 ? className.substring(dot + 1) : className;
    }

    private static String baseName(String path) {
        int slash = path.lastIndexOf('/');
        return slash >= 0 && slash < path.length() - 1 ? path.substring(slash + 1) : path;
    }

    private static List<String> split(String cmdline) {
        List<String> args = new ArrayList<>();
        if (cmdline == null) {
            return args;
        }
        for (String a : cmdline.split(cmdline.indexOf('\0') >= 0 ? "\0" : "\\s+")) {
            if (!a.isEmpty()) {
                args.add(a);
            }
        }
        return args;
    }
}

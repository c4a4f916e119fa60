package io.wattgraph.graph.cypher;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * Finds the function calls in the expression text of a plan operator (its {@code Details}): a dotted name
 * followed by {@code (}, outside string literals and backtick-quoted names. The text is Neo4j's rendering of
 * the parsed query (comments and escapes gone, names unquoted, literals mostly turned into parameters), so this
 * reads Neo4j's output, not the user's text. Hand-written because no library parses Neo4j's plan rendering.
 */
final class PlanExpressions {

    /** Words of Cypher that may stand before a parenthesis without being a function call. */
    static final Set<String> KEYWORDS = Set.of("and", "or", "xor", "not", "in", "is", "where", "when", "then",
            "else", "case", "end", "as", "distinct", "contains", "starts", "ends", "with", "shortest", "any", "all",
            "none", "single", "exists", "count", "collect", "reduce", "null", "asc", "desc", "limit", "skip",
            "shortestpath", "allshortestpaths");

    private PlanExpressions() {
    }

    static List<String> functionCalls(String text) {
        return functionCalls(text, false);
    }

    /**
     * @param indexOperator the text is an index operator's: its index is written {@code n:Label(prop)} or
     *     {@code [r:TYPE(prop)]} (e.g. {@code UNIQUE c:Container(id) WHERE id = $x}), a name right after a colon,
     *     which is not a call (a map's entry would be rendered {@code key: f(x)}, with a space)
     */
    static List<String> functionCalls(String text, boolean indexOperator) {
        List<String> calls = new ArrayList<>();
        int i = 0;
        int n = text.length();
        while (i < n) {
            char c = text.charAt(i);
            if (c == '\'' || c == '"') {
                i = skipString(text, i);
            } else if (c == '`' || Character.isJavaIdentifierStart(c)) {
                boolean indexed = indexOperator && i > 0 && text.charAt(i - 1) == ':';
                StringBuilder name = new StringBuilder();
                i = readName(text, i, name);
                while (i < n && text.charAt(i) == '.' && i + 1 < n
                        && (text.charAt(i + 1) == '`' || Character.isJavaIdentifierStart(text.charAt(i + 1)))) {
                    name.append('.');
                    i = readName(text, i + 1, name);
                }
                int j = i;
                while (j < n && Character.isWhitespace(text.charAt(j))) {
                    j++;
                }
                if (j < n && text.charAt(j) == '(' && !indexed) {
                    calls.add(name.toString());
                }
            } else if (Character.isDigit(c)) {
                while (i < n && Character.isJavaIdentifierPart(text.charAt(i))) {
                    i++; // 1e3, 0x1F: not a name
                }
            } else {
                i++;
            }
        }
        return calls;
    }

    /** Reads one name part, plain or backtick-quoted ({@code ``} is a backtick inside), into name. */
    private static int readName(String text, int i, StringBuilder name) {
        int n = text.length();
        if (text.charAt(i) == '`') {
            i++;
            while (i < n) {
                if (text.charAt(i) == '`') {
                    if (i + 1 < n && text.charAt(i + 1) == '`') {
                        name.append('`');
                        i += 2;
                        continue;
                    }
                    return i + 1;
                }
                name.append(text.charAt(i++));
            }
            return n;
        }
        while (i < n && Character.isJavaIdentifierPart(text.charAt(i))) {
            name.append(text.charAt(i++));
        }
        return i;
    }

    private static int skipString(String text, int i) {
        char quote = text.charAt(i);
        int n = text.length();
        i++;
        while (i < n) {
            char c = text.charAt(i);
            if (c == '\\') {
                i += 2;
            } else if (c == quote) {
                return i + 1;
            } else {
                i++;
            }
        }
        return n;
    }
}

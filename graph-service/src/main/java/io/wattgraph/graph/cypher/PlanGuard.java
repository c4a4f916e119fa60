package io.wattgraph.graph.cypher;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.neo4j.driver.Value;
import org.neo4j.driver.summary.Plan;
import org.neo4j.driver.summary.QueryType;
import org.neo4j.driver.summary.ResultSummary;
import org.neo4j.driver.types.TypeSystem;
import org.springframework.http.HttpStatus;

/**
 * Decides from Neo4j's own plan ({@code EXPLAIN}) whether a query only reads the graph: what the text says is
 * irrelevant (comments, backticks, escapes and case are gone once Neo4j has parsed it). A query passes when
 * Neo4j classifies it {@link QueryType#READ_ONLY}, runs on the expected database, every operator of its plan
 * tree is on {@link #READ_OPERATORS} (so LoadCSV, writes, Foreach, CALL IN TRANSACTIONS, SHOW/TERMINATE and
 * schema commands are refused because they are not reads, not because they are listed), procedure calls name
 * one of {@link #PROCEDURES}, and every function called in any operator's expressions is a built-in one
 * (plugin functions such as apoc.* never are) other than those reaching outside the graph.
 */
final class PlanGuard {

    /** Operators that only read the graph or shape rows (Neo4j 5.26 operator names, without the {@code @db}). */
    static final Set<String> READ_OPERATORS = Set.of(
            "ProduceResults", "EmptyResult", "Argument", "ArgumentTracker",
            "AllNodesScan", "NodeByLabelScan", "UnionNodeByLabelsScan", "IntersectionNodeByLabelsScan",
            "SubtractionNodeByLabelsScan", "NodeByIdSeek", "NodeByElementIdSeek", "NodeIndexSeek",
            "NodeUniqueIndexSeek", "MultiNodeIndexSeek", "AssertingMultiNodeIndexSeek", "NodeIndexSeekByRange",
            "NodeUniqueIndexSeekByRange", "NodeIndexContainsScan", "NodeIndexEndsWithScan", "NodeIndexScan",
            "DirectedAllRelationshipsScan", "UndirectedAllRelationshipsScan", "DirectedRelationshipTypeScan",
            "UndirectedRelationshipTypeScan", "DirectedUnionRelationshipTypesScan",
            "UndirectedUnionRelationshipTypesScan", "DirectedRelationshipIndexSeek",
            "UndirectedRelationshipIndexSeek", "DirectedRelationshipIndexSeekByRange",
            "UndirectedRelationshipIndexSeekByRange", "DirectedRelationshipIndexScan",
            "UndirectedRelationshipIndexScan", "DirectedRelationshipIndexContainsScan",
            "UndirectedRelationshipIndexContainsScan", "DirectedRelationshipIndexEndsWithScan",
            "UndirectedRelationshipIndexEndsWithScan", "DirectedRelationshipByIdSeek",
            "UndirectedRelationshipByIdSeek", "DirectedRelationshipByElementIdSeek",
            "UndirectedRelationshipByElementIdSeek", "NodeCountFromCountStore", "RelationshipCountFromCountStore",
            "Expand(All)", "Expand(Into)", "OptionalExpand(All)", "OptionalExpand(Into)", "VarLengthExpand(All)",
            "VarLengthExpand(Into)", "VarLengthExpand(Pruning)", "VarLengthExpand(Pruning,BFS,All)",
            "VarLengthExpand(Pruning,BFS,Into)", "BFSPruningVarLengthExpand(All)", "BFSPruningVarLengthExpand(Into)",
            "Repeat(Trail)", "Repeat(Walk)", "NullifyMetadata", "ShortestPath", "StatefulShortestPath(All)",
            "StatefulShortestPath(Into)", "ProjectEndpoints", "TriadicSelection", "TriadicBuild", "TriadicFilter",
            "AssertSameNode", "AssertSameRelationship",
            "Apply", "SemiApply", "AntiSemiApply", "LetSemiApply", "LetAntiSemiApply", "SelectOrSemiApply",
            "SelectOrAntiSemiApply", "LetSelectOrSemiApply", "LetSelectOrAntiSemiApply", "ConditionalApply",
            "AntiConditionalApply", "RollUpApply", "CartesianProduct", "NodeHashJoin", "ValueHashJoin",
            "NodeLeftOuterHashJoin", "NodeRightOuterHashJoin", "Optional", "Union", "OrderedUnion",
            "Filter", "Projection", "Unwind", "Limit", "ExhaustiveLimit", "Skip", "Sort", "PartialSort", "Top",
            "PartialTop", "Distinct", "OrderedDistinct", "EagerAggregation", "OrderedAggregation", "Eager",
            "CacheProperties", "DropResult");

    /** Procedures allowed in a ProcedureCall: the schema's names, nothing that reads outside the graph. */
    static final Set<String> PROCEDURES = Set.of("db.labels", "db.relationshipTypes", "db.propertyKeys");

    /** Built-in functions that are not about the graph: LOAD CSV's file/line, composite databases' graphs. */
    static final Set<String> OUTSIDE_FUNCTIONS = Set.of("file", "linenumber", "graph.names", "graph.byname",
            "graph.byelementid", "graph.propertiesbyname");

    /** Names Neo4j's plan prints for expressions it rewrote (EXISTS/COUNT subqueries over a pattern). */
    /** The plan argument holding the rendered plan (a table of every operator), not an expression. */
    static final String RENDERED_PLAN = "string-representation";

    static final Set<String> PLAN_INTERNAL_FUNCTIONS = Set.of("getdegree");

    private PlanGuard() {
    }

    /**
     * @param explain the summary of {@code EXPLAIN query}
     * @param database the database the query must run on
     * @param builtinFunctions lower-cased names of the server's built-in functions
     */
    static void check(ResultSummary explain, String database, Set<String> builtinFunctions) {
        if (explain.database() != null && !database.equals(explain.database().name())) {
            throw refused("the query runs on database '" + explain.database().name() + "'; only '" + database
                    + "' can be queried here");
        }
        if (explain.queryType() != QueryType.READ_ONLY) {
            throw refused("only read-only queries are allowed; this one is " + explain.queryType());
        }
        if (!explain.hasPlan()) {
            throw refused("Neo4j gave no plan for this query, so it cannot be checked");
        }
        Deque<Plan> todo = new ArrayDeque<>();
        todo.push(explain.plan());
        while (!todo.isEmpty()) {
            Plan p = todo.pop();
            checkOperator(p, database, builtinFunctions);
            p.children().forEach(todo::push);
        }
    }

    private static void checkOperator(Plan p, String database, Set<String> builtinFunctions) {
        String type = p.operatorType();
        int at = type.lastIndexOf('@');
        String operator = at < 0 ? type : type.substring(0, at);
        if (at >= 0 && !type.substring(at + 1).equals(database)) {
            throw refused("the plan reads database '" + type.substring(at + 1) + "'; only '" + database
                    + "' can be queried here");
        }
        Value details = p.arguments().get("Details");
        if (operator.equals("ProcedureCall")) {
            String text = details == null ? "" : details.asString();
            String name = text.contains("(") ? text.substring(0, text.indexOf('(')).trim() : text;
            if (!PROCEDURES.contains(name) || !text.startsWith(name + "() :: ")) {
                throw refused("procedure " + name + " is not allowed here (allowed: " + String.join(", ",
                        PROCEDURES.stream().sorted().toList()) + ")");
            }
            return; // an allowed procedure takes no arguments: no expression to check
        } else if (!READ_OPERATORS.contains(operator)) {
            throw refused("the plan has a " + operator + " step, which is not a read of the graph "
                    + "(refused: LOAD CSV, writes, FOREACH, CALL IN TRANSACTIONS, SHOW/TERMINATE and schema "
                    + "commands, and any step not known to be a read)");
        }
        for (Map.Entry<String, Value> entry : p.arguments().entrySet()) {
            Value argument = entry.getValue();
            // A server that renders plans (dbms.cypher.render_plan_description) puts the whole plan's table
            // in the root's string-representation: operator names such as Expand(All) are not calls, and
            // every operator it shows is checked on its own here.
            if (!argument.hasType(TypeSystem.getDefault().STRING()) || entry.getKey().equals(RENDERED_PLAN)) {
                continue;
            }
            for (String function : PlanExpressions.functionCalls(argument.asString(), operator.contains("Index"))) {
                String name = function.toLowerCase(Locale.ROOT);
                boolean allowed = (builtinFunctions.contains(name) || PLAN_INTERNAL_FUNCTIONS.contains(name)
                        || PlanExpressions.KEYWORDS.contains(name)) && !OUTSIDE_FUNCTIONS.contains(name);
                if (!allowed) {
                    throw refused("function " + function + " is not allowed here (only Neo4j's built-in "
                            + "functions that stay inside the graph)");
                }
            }
        }
    }

    private static CypherRejectedException refused(String message) {
        return new CypherRejectedException(HttpStatus.FORBIDDEN, message);
    }
}

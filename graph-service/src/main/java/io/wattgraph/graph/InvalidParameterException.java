package io.wattgraph.graph;

/** A request parameter with an unusable value; answered with 400 naming the parameter. */
public class InvalidParameterException extends RuntimeException {

    private final String parameter;

    public InvalidParameterException(String parameter, String reason) {
        super("invalid parameter '" + parameter + "': " + reason);
        this.parameter = parameter;
    }

    public String parameter() {
        return parameter;
    }
}

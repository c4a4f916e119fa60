package io.wattgraph.graph;

import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.web.error.ErrorAttributeOptions;
import org.springframework.boot.web.servlet.error.DefaultErrorAttributes;
import org.springframework.http.HttpStatus;
import org.springframework.stereotype.Component;
import org.springframework.web.context.request.WebRequest;

/**
 * Gives errors raised outside our controllers (unknown path, wrong method, ...) the same
 * {@code {"error", "status"}} shape as {@link ApiError}, instead of Spring's default body.
 */
@Component
public class ApiErrorAttributes extends DefaultErrorAttributes {

    @Override
    public Map<String, Object> getErrorAttributes(WebRequest request, ErrorAttributeOptions options) {
        Map<String, Object> defaults = super.getErrorAttributes(request,
                ErrorAttributeOptions.defaults().including(ErrorAttributeOptions.Include.MESSAGE));
        int status = defaults.get("status") instanceof Integer s ? s : 500;
        Object message = defaults.get("message");
        String error = message instanceof String m && !m.isBlank() ? m : reason(status);
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("error", error);
        body.put("status", status);
        return body;
    }

    private static String reason(int status) {
        HttpStatus resolved = HttpStatus.resolve(status);
        return resolved == null ? "error" : resolved.getReasonPhrase();
    }
}

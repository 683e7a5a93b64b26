// Package openapi builds the OpenAPI 3.1 document served at /openapi. The
// screenshot parameters come from the same table the validator reads, so the
// document and the server cannot disagree.
package openapi

import (
	"encoding/json"

	"github.com/shutterhq/shutter/internal/screenshot"
)

type obj = map[string]any

// Document returns the OpenAPI 3.1 document as JSON.
func Document(params []screenshot.Param) []byte {
	buf, err := json.MarshalIndent(build(params), "", "  ")
	if err != nil {
		panic(err) // only maps, strings and numbers: cannot fail
	}
	return buf
}

func build(params []screenshot.Param) obj {
	paths := healthPaths()
	paths["/v1/screenshots/take"] = obj{"get": takeOperation(params)}
	managePaths(paths)
	comps := components()
	manageComponents(comps)
	return obj{
		"openapi": "3.1.0",
		"info": obj{
			"title":       "Shutter screenshot API",
			"version":     "1.0.0",
			"description": "Renders web pages in headless Chromium and returns the image. Every option is a query parameter, so the request URL can be used directly as an image source.",
		},
		"paths":      paths,
		"components": comps,
	}
}

// takeOperation is the screenshot endpoint: the parameters of the table,
// the responses and their headers.
func takeOperation(params []screenshot.Param) obj {
	var qp []any
	for _, p := range params {
		if p.Name == "api_key" {
			continue // the security scheme describes it
		}
		qp = append(qp, parameter(p))
	}
	errResp := func(desc string, extra ...string) obj {
		h := obj{"X-Request-Id": ref("headers", "X-Request-Id")}
		for _, name := range extra {
			h[name] = ref("headers", name)
		}
		return obj{"description": desc, "headers": h,
			"content": obj{"application/json": obj{"schema": ref("schemas", "Error")}}}
	}
	image := obj{"type": "string", "contentMediaType": "image/*"}
	return obj{
		"operationId": "takeScreenshot",
		"summary":     "Render a page and return the image",
		"security":    []any{obj{"apiKey": []any{}}},
		"parameters": append(append(append([]any{obj{"$ref": "#/components/parameters/api_key"}}, qp...),
			obj{"name": "signature", "in": "query", "schema": obj{"type": "string", "pattern": "^[0-9a-f]{64}$"},
				"description": "Lowercase hex HMAC-SHA256, keyed by the key's signing secret, of the raw query string exactly as sent before &signature=. Must be the last parameter. Required for keys with requireSignature; checked whenever given."}),
			obj{"name": "If-None-Match", "in": "header", "description": "ETag of a cached image the client holds; a match gives 304.",
				"schema": obj{"type": "string"}}),
		"responses": obj{
			"200": obj{
				"description": "The image (or, with format=pdf, the PDF) in the requested format. Cached answers (is_cached=true) add ETag and X-Cache, and max-age is the entry's remaining lifetime.",
				"headers": obj{
					"Content-Length":         ref("headers", "Content-Length"),
					"Cache-Control":          ref("headers", "Cache-Control"),
					"X-Request-Id":           ref("headers", "X-Request-Id"),
					"X-RateLimit-Limit":      ref("headers", "X-RateLimit-Limit"),
					"X-RateLimit-Remaining":  ref("headers", "X-RateLimit-Remaining"),
					"X-RateLimit-Reset":      ref("headers", "X-RateLimit-Reset"),
					"ETag":                   ref("headers", "ETag"),
					"X-Cache":                ref("headers", "X-Cache"),
					"X-Screenshot-Truncated": ref("headers", "X-Screenshot-Truncated"),
				},
				"content": obj{"image/jpeg": obj{"schema": image}, "image/png": obj{"schema": image}, "image/webp": obj{"schema": image},
					"application/pdf": obj{"schema": obj{"type": "string", "contentMediaType": "application/pdf"}}},
			},
			"304": obj{
				"description": "Not modified: If-None-Match named the cached entry's ETag (is_cached=true only). No body.",
				"headers": obj{"ETag": ref("headers", "ETag"), "X-Cache": ref("headers", "X-Cache"),
					"Cache-Control": ref("headers", "Cache-Control"), "X-Request-Id": ref("headers", "X-Request-Id")},
			},
			"400": errResp("Invalid or unknown parameter; a parameter that is not a list given twice; parameters that may not go together (clip and selector, omit_background with jpeg, …); missing api_key or url; a target whose address is not public."),
			"403": errResp("Invalid, unknown or revoked API key; a target outside the key's allowed domains; the monthly quota is exhausted; a missing signature on a key that requires one, or a wrong signature.", rateHeaders...),
			"422": errResp("selector or click matched no element, or one without a visible size; wait_for_selector saw no visible match within the time limit; scripts threw.", rateHeaders...),
			"429": errResp("The key's rate limit is exceeded.", append(rateHeaders, "Retry-After")...),
			"500": errResp("Internal error; the message is generic, the request id finds the detail in the log."),
			"502": errResp("The target could not be reached (DNS, connection refused, TLS) or crashed the renderer.", rateHeaders...),
			"503": errResp("No render slot became free in time, no browser is available, or the database is unreachable.", append(rateHeaders, "Retry-After")...),
			"504": errResp("The page did not load, or the render did not finish, within the time limit.", rateHeaders...),
		},
	}
}

// healthPaths are the health endpoints and the document itself.
func healthPaths() obj {
	return obj{
		"/health": obj{"get": obj{
			"operationId": "health",
			"summary":     "Health of every component",
			"responses": obj{
				"200": jsonResp("Healthy or degraded.", "HealthReport"),
				"503": jsonResp("Unhealthy: a critical component (database, browser) fails.", "HealthReport"),
			},
		}},
		"/health/ready": obj{"get": obj{
			"operationId": "ready",
			"summary":     "Readiness probe: the database answers and a browser is ready",
			"responses": obj{
				"200": jsonResp("Ready.", "ReadinessReport"),
				"503": jsonResp("Not ready, with the reason.", "ReadinessReport"),
			},
		}},
		"/health/live": obj{"get": obj{
			"operationId": "live",
			"summary":     "Liveness probe: the process serves requests; touches no dependency",
			"responses":   obj{"200": jsonResp("Alive.", "LivenessReport")},
		}},
		"/openapi": obj{"get": obj{
			"operationId": "openapi",
			"summary":     "This document",
			"responses": obj{"200": obj{"description": "The OpenAPI 3.1 document.",
				"content": obj{"application/json": obj{"schema": obj{"type": "object"}}}}},
		}},
	}
}

// components are the shared schemas, headers, parameters and security
// scheme.
func components() obj {
	return obj{
		"securitySchemes": obj{"apiKey": obj{"type": "apiKey", "in": "query", "name": "api_key",
			"description": "API key, DEFAULT_API_KEY_PREFIX + _test_ or _live_ + random part."}},
		"parameters": obj{"api_key": obj{"name": "api_key", "in": "query", "required": true,
			"description": "API key (see the apiKey security scheme).", "schema": obj{"type": "string", "maxLength": 256}}},
		"headers": obj{
			"X-Request-Id":          header("Identifier of the request; equals requestId of an error.", obj{"type": "string"}),
			"Content-Length":        header("Size of the image in bytes.", obj{"type": "integer"}),
			"Cache-Control":         header("public, max-age=3600.", obj{"type": "string"}),
			"Retry-After":           header("Seconds after which to try again.", obj{"type": "integer"}),
			"X-RateLimit-Limit":     header("Requests the key may make in the current window.", obj{"type": "integer"}),
			"X-RateLimit-Remaining": header("Requests left in the current window.", obj{"type": "integer", "minimum": 0}),
			"X-RateLimit-Reset":     header("End of the current window, Unix seconds.", obj{"type": "integer"}),
			"ETag":                  header("Entity tag of a cached image.", obj{"type": "string"}),
			"X-Cache":               header("HIT when the image came from the cache, MISS when it was rendered for this request.", obj{"type": "string", "enum": []string{"HIT", "MISS"}}),
			"X-Screenshot-Truncated": header("true when a full_page capture was cut at full_page_max_height (or at 16384 device pixels); absent otherwise.",
				obj{"type": "string", "enum": []string{"true"}}),
		},
		"schemas": obj{
			"Error": obj{"type": "object", "required": []string{"error", "requestId"}, "additionalProperties": false,
				"properties": obj{"error": obj{"type": "string"}, "requestId": obj{"type": "string"}}},
			"CheckResult": obj{"type": "object", "required": []string{"name", "status", "duration"},
				"properties": obj{
					"name": obj{"type": "string", "enum": []string{"database", "storage", "queue", "s3", "browser", "redis", "consent"}},
					"status": obj{"type": "string", "enum": []string{"pass", "fail"},
						"description": "pass: the component works (when it works only in part, error says how and the report is degraded); fail: it does not."},
					"duration": obj{"type": "number", "description": "milliseconds"},
					"details":  obj{"type": "object"},
					"error":    obj{"type": "string"},
				}},
			"QueueDetails": obj{"type": "object", "required": []string{"waiting", "active", "completed", "failed", "workerRunning"},
				"properties": obj{"waiting": obj{"type": "integer"}, "active": obj{"type": "integer"},
					"completed": obj{"type": "integer"}, "failed": obj{"type": "integer"}, "workerRunning": obj{"type": "boolean"}}},
			"HealthReport": obj{"type": "object", "required": []string{"status", "timestamp", "uptime", "checks", "version"},
				"properties": obj{
					"status":    obj{"type": "string", "enum": []string{"healthy", "degraded", "unhealthy"}},
					"timestamp": obj{"type": "string", "format": "date-time"},
					"uptime":    obj{"type": "number", "description": "seconds"},
					"checks":    obj{"type": "array", "items": ref("schemas", "CheckResult")},
					"version":   obj{"type": "string"},
				}},
			"ReadinessReport": obj{"type": "object", "required": []string{"status", "timestamp"},
				"properties": obj{
					"status":    obj{"type": "string", "enum": []string{"ready", "not ready"}},
					"timestamp": obj{"type": "string", "format": "date-time"},
					"error":     obj{"type": "string"},
				}},
			"LivenessReport": obj{"type": "object", "required": []string{"status", "timestamp"},
				"properties": obj{
					"status":    obj{"type": "string", "enum": []string{"alive"}},
					"timestamp": obj{"type": "string", "format": "date-time"},
				}},
		},
	}
}

// rateHeaders are sent on every answer once the key is known.
var rateHeaders = []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"}

func ref(kind, name string) obj { return obj{"$ref": "#/components/" + kind + "/" + name} }

func header(desc string, schema obj) obj { return obj{"description": desc, "schema": schema} }

func jsonResp(desc, schema string) obj {
	return obj{"description": desc, "content": obj{"application/json": obj{"schema": ref("schemas", schema)}}}
}

// parameter is the OpenAPI parameter object of one query parameter.
func parameter(p screenshot.Param) obj {
	s := obj{"type": string(p.Kind)}
	switch p.Kind {
	case screenshot.KindInteger, screenshot.KindNumber:
		if p.HasRange {
			s["minimum"], s["maximum"] = num(p.Minimum, p.Kind), num(p.Maximum, p.Kind)
		}
	case screenshot.KindArray:
		s["items"] = obj{"type": "string", "enum": p.Enum}
		s["uniqueItems"] = true
	case screenshot.KindString:
		if len(p.Enum) > 0 {
			s["enum"] = p.Enum
		}
		if p.MaxLength > 0 {
			s["maxLength"] = p.MaxLength
		}
	}
	if p.Default != nil {
		s["default"] = p.Default
	}
	o := obj{"name": p.Name, "in": "query", "description": p.Description, "schema": s}
	if p.Required {
		o["required"] = true
	}
	if p.Kind == screenshot.KindArray {
		o["style"], o["explode"] = "form", false
	}
	if p.List {
		o["description"] = p.Description + " The parameter may also be repeated; its values are joined."
	}
	if p.Example != "" {
		o["example"] = p.Example
	}
	return o
}

func num(f float64, k screenshot.Kind) any {
	if k == screenshot.KindInteger {
		return int(f)
	}
	return f
}

package openapi

import "strconv"

// The management API: users, sessions, access tokens and keys.

// manageSecurity is a session cookie or a personal access token.
var manageSecurity = []any{obj{"session": []any{}}, obj{"accessToken": []any{}}}

// op is one management operation.
type op struct {
	id, summary string
	body        string // request schema; "" for none
	ok          int
	okSchema    string // "" for 204
	public      bool   // no credentials needed
	errors      []int
}

func (o op) build() obj {
	out := obj{"operationId": o.id, "summary": o.summary, "tags": []string{"management"}}
	if !o.public {
		out["security"] = manageSecurity
		out["parameters"] = []any{obj{"$ref": "#/components/parameters/csrf"}}
	}
	if o.body != "" {
		out["requestBody"] = obj{"required": true, "content": obj{"application/json": obj{"schema": ref("schemas", o.body)}}}
	}
	resp := obj{}
	switch o.okSchema {
	case "":
		resp[strconv.Itoa(o.ok)] = obj{"description": "Done."}
	default:
		resp[strconv.Itoa(o.ok)] = jsonResp("Success.", o.okSchema)
	}
	errs := o.errors
	if !o.public {
		errs = append([]int{401, 403}, errs...)
	}
	if o.body != "" {
		errs = append(errs, 400, 413, 422)
	}
	for _, code := range append(errs, 500) {
		resp[strconv.Itoa(code)] = jsonResp(errorMeaning[code], "Error")
	}
	out["responses"] = resp
	return out
}

var errorMeaning = map[int]string{
	400: "Malformed request: not JSON, wrong Content-Type, a bad query parameter.",
	401: "No valid session or access token (or, for sign-in, wrong email or password).",
	403: "Not allowed: a member on an admin operation or field, a missing or wrong X-CSRF-Token, a cross-origin request, sign-up closed.",
	404: "No such object, or one of another user (never 403, so that its existence is not revealed).",
	409: "Conflict: the email is in use, the key is revoked, an admin changing their own role.",
	413: "The body is larger than 64 KiB.",
	422: "A field is invalid or unknown; the message names it.",
	429: "Too many sign-in attempts for this email or from this address.",
	500: "Internal error.",
}

func managePaths(paths obj) {
	add := func(path, method string, o op) {
		item, _ := paths[path].(obj)
		if item == nil {
			item = obj{}
			paths[path] = item
		}
		item[method] = o.build()
	}
	add("/v1/auth/signup", "post", op{id: "signUp", summary: "Create an account (the first one is an admin) and sign in", body: "Credentials", ok: 201, okSchema: "User", public: true, errors: []int{403, 409}})
	add("/v1/auth/signin", "post", op{id: "signIn", summary: "Sign in: sets the session cookie", body: "Credentials", ok: 200, okSchema: "User", public: true, errors: []int{401, 403, 429}})
	add("/v1/auth/config", "get", op{id: "authConfig", summary: "How one signs in here: the sign-up policy and whether external sign-in is on", ok: 200, okSchema: "AuthConfig", public: true})
	redirect := func(id, summary, to string) obj {
		return obj{"operationId": id, "summary": summary, "tags": []string{"management"}, "responses": obj{
			"302": obj{"description": to}, "401": jsonResp(errorMeaning[401], "Error"), "403": jsonResp(errorMeaning[403], "Error"),
			"503": jsonResp("The identity provider cannot be reached.", "Error")}}
	}
	paths["/v1/auth/oidc/start"] = obj{"get": redirect("oidcStart", "External sign-in (when IDENTITY_CLIENT_ID is set): redirects to the identity provider; return= is the local path to come back to",
		"To the identity provider's authorization endpoint (code flow with PKCE).")}
	paths["/v1/auth/oidc/callback"] = obj{"get": redirect("oidcCallback", "The identity provider's answer: signs the user with its verified email in, then redirects to the return path",
		"To the return path, with the session cookie set.")}
	add("/v1/auth/signout", "post", op{id: "signOut", summary: "End this session", ok: 204, errors: []int{400}})
	add("/v1/auth/signout-everywhere", "post", op{id: "signOutEverywhere", summary: "End every session of the user", ok: 204})
	add("/v1/me", "get", op{id: "me", summary: "The signed-in user, with the session's csrfToken", ok: 200, okSchema: "User"})
	add("/v1/me/password", "post", op{id: "changePassword", summary: "Change the password; ends the user's other sessions", body: "PasswordChange", ok: 204})
	add("/v1/tokens", "get", op{id: "listTokens", summary: "The user's personal access tokens", ok: 200, okSchema: "TokenList"})
	add("/v1/tokens", "post", op{id: "createToken", summary: "Create a personal access token (shown once)", body: "TokenInput", ok: 201, okSchema: "Token"})
	add("/v1/tokens/{id}", "delete", op{id: "deleteToken", summary: "Revoke a personal access token", ok: 204, errors: []int{404}})
	add("/v1/keys", "get", op{id: "listKeys", summary: "Keys the caller may see (members: their own; admins: all)", ok: 200, okSchema: "KeyList"})
	add("/v1/keys", "post", op{id: "createKey", summary: "Create a key; the key and signing secret are shown once", body: "KeyInput", ok: 201, okSchema: "Key"})
	add("/v1/keys/{id}", "get", op{id: "getKey", summary: "One key with this month's usage", ok: 200, okSchema: "Key", errors: []int{404}})
	add("/v1/keys/{id}", "patch", op{id: "updateKey", summary: "Change a key's fields", body: "KeyInput", ok: 200, okSchema: "Key", errors: []int{404, 409}})
	add("/v1/keys/{id}", "delete", op{id: "revokeKey", summary: "Revoke a key", ok: 204, errors: []int{404}})
	add("/v1/keys/{id}/rotate", "post", op{id: "rotateKey", summary: "A new secret; the old one works until previousKeyValidUntil", ok: 200, okSchema: "Key", errors: []int{404, 409}})
	add("/v1/keys/{id}/signing-secret", "get", op{id: "getSigningSecret", summary: "Reveal the key's signing secret", ok: 200, okSchema: "SigningSecret", errors: []int{404}})
	add("/v1/keys/{id}/signing-secret/rotate", "post", op{id: "rotateSigningSecret", summary: "Replace the signing secret at once", ok: 200, okSchema: "SigningSecret", errors: []int{404}})
	add("/v1/keys/{id}/usage", "get", op{id: "keyUsage", summary: "Daily usage of a key, every day of the range", ok: 200, okSchema: "UsageSeries", errors: []int{400, 404}})
	add("/v1/keys/{id}/requests", "get", op{id: "keyRequests", summary: "The key's recent requests, newest first", ok: 200, okSchema: "RequestLog", errors: []int{400, 404}})
	add("/v1/users", "get", op{id: "listUsers", summary: "Every user (admins)", ok: 200, okSchema: "UserList"})
	add("/v1/users", "post", op{id: "inviteUser", summary: "Invite a user: an account without a password (admins)", body: "Invite", ok: 201, okSchema: "User", errors: []int{409}})
	add("/v1/users/{id}", "patch", op{id: "updateUser", summary: "Change a user's role or disable them (admins)", body: "UserPatch", ok: 200, okSchema: "User", errors: []int{404, 409}})

	idParam := obj{"name": "id", "in": "path", "required": true, "schema": obj{"type": "string"}}
	for path, item := range paths {
		if len(path) > len("/{id}") && containsID(path) {
			item.(obj)["parameters"] = []any{idParam}
		}
	}
	for _, path := range []string{"/v1/keys/{id}/usage", "/v1/keys/{id}/requests"} {
		get := paths[path].(obj)["get"].(obj)
		params := get["parameters"].([]any)
		if path == "/v1/keys/{id}/usage" {
			params = append(params, query("from", "First day, UTC (default: 29 days before to).", obj{"type": "string", "format": "date"}),
				query("to", "Last day, UTC (default: today).", obj{"type": "string", "format": "date"}))
		} else {
			params = append(params, query("limit", "Entries, newest first.", obj{"type": "integer", "minimum": 1, "maximum": 1000, "default": 50}),
				query("status", "Only entries with this HTTP status.", obj{"type": "integer", "minimum": 100, "maximum": 599}))
		}
		get["parameters"] = params
	}
}

func containsID(path string) bool {
	for i := 0; i+4 <= len(path); i++ {
		if path[i:i+4] == "{id}" {
			return true
		}
	}
	return false
}

func query(name, desc string, schema obj) obj {
	return obj{"name": name, "in": "query", "description": desc, "schema": schema}
}

// manageComponents adds the management schemas and security schemes.
func manageComponents(c obj) {
	c["securitySchemes"].(obj)["session"] = obj{"type": "apiKey", "in": "cookie", "name": "__Host-shutter_session",
		"description": "The session cookie set by sign-in (shutter_session in development, over plain HTTP). State-changing requests also need the X-CSRF-Token header."}
	c["securitySchemes"].(obj)["accessToken"] = obj{"type": "http", "scheme": "bearer", "description": "A personal access token (shp_…)."}
	c["parameters"].(obj)["csrf"] = obj{"name": "X-CSRF-Token", "in": "header",
		"description": "The session's csrfToken (from sign-in or GET /v1/me); required on POST, PATCH and DELETE with a session cookie, not with an access token.",
		"schema":      obj{"type": "string"}}
	str, boolean, integer := obj{"type": "string"}, obj{"type": "boolean"}, obj{"type": "integer", "minimum": 0}
	nullTime := obj{"type": []string{"string", "null"}, "format": "date-time"}
	date := obj{"type": "string", "format": "date-time"}
	object := func(required []string, props obj) obj {
		return obj{"type": "object", "required": required, "properties": props}
	}
	strict := func(props obj) obj { return obj{"type": "object", "additionalProperties": false, "properties": props} }
	s := c["schemas"].(obj)
	s["Credentials"] = obj{"type": "object", "required": []string{"email", "password"}, "additionalProperties": false,
		"properties": obj{"email": obj{"type": "string", "format": "email"}, "password": obj{"type": "string", "minLength": 10}}}
	s["AuthConfig"] = object([]string{"signup", "externalSignIn"}, obj{
		"signup": obj{"type": "string", "enum": []string{"closed", "invite", "open"}}, "externalSignIn": boolean})
	s["PasswordChange"] = strict(obj{"currentPassword": str, "newPassword": obj{"type": "string", "minLength": 10}})
	s["User"] = object([]string{"id", "email", "role", "disabled", "hasPassword", "createdAt", "lastSignInAt"}, obj{
		"id": str, "email": str, "role": obj{"type": "string", "enum": []string{"admin", "member"}}, "disabled": boolean,
		"hasPassword": boolean, "createdAt": date, "lastSignInAt": nullTime,
		"csrfToken": obj{"type": "string", "description": "Only for a session: send it as X-CSRF-Token."}})
	s["UserList"] = object([]string{"users"}, obj{"users": obj{"type": "array", "items": ref("schemas", "User")}})
	s["Invite"] = obj{"type": "object", "required": []string{"email"}, "additionalProperties": false,
		"properties": obj{"email": str, "role": obj{"type": "string", "enum": []string{"admin", "member"}, "default": "member"}}}
	s["UserPatch"] = strict(obj{"role": obj{"type": "string", "enum": []string{"admin", "member"}}, "disabled": boolean})
	s["TokenInput"] = strict(obj{"name": obj{"type": "string", "maxLength": 100}, "expiresAt": obj{"type": "string", "format": "date-time"}})
	s["Token"] = object([]string{"id", "name", "prefix", "createdAt", "expiresAt", "lastUsedAt"}, obj{
		"id": str, "name": str, "prefix": str, "createdAt": date, "expiresAt": nullTime, "lastUsedAt": nullTime,
		"token": obj{"type": "string", "description": "The token itself: only in the answer that created it."}})
	s["TokenList"] = object([]string{"tokens"}, obj{"tokens": obj{"type": "array", "items": ref("schemas", "Token")}})
	s["KeyInput"] = strict(obj{
		"name":             obj{"type": "string", "maxLength": 100},
		"domains":          obj{"type": "array", "maxItems": 100, "items": str, "description": "example.com (exactly that host) or *.example.com (any subdomain, not the name itself); empty: any public host."},
		"requireSignature": boolean,
		"plan":             obj{"type": "string", "enum": []string{"free", "pro", "enterprise"}, "description": "Admins only."},
		"rateLimit":        obj{"type": "integer", "minimum": 0, "description": "Admins only; 0: the plan's."},
		"monthlyQuota":     obj{"type": "integer", "minimum": 0, "description": "Admins only; 0: the plan's."},
		"owner":            obj{"type": "string", "description": "Admins only: the owning user's id; \"\" for none."},
	})
	s["Key"] = object([]string{"id", "name", "prefix", "plan", "domains", "rateLimit", "monthlyQuota", "requireSignature", "owner", "status", "createdAt", "revokedAt"}, obj{
		"id": str, "name": str, "prefix": str, "plan": obj{"type": "string", "enum": []string{"free", "pro", "enterprise"}},
		"domains": obj{"type": "array", "items": str}, "rateLimit": integer, "monthlyQuota": integer, "requireSignature": boolean,
		"owner": obj{"type": []string{"string", "null"}}, "status": obj{"type": "string", "enum": []string{"active", "revoked"}},
		"createdAt": date, "revokedAt": nullTime,
		"usage": object([]string{"period", "used", "quota", "rateLimit"}, obj{"period": str, "used": integer,
			"quota": obj{"type": "integer", "minimum": 0, "description": "0: unlimited"}, "rateLimit": integer}),
		"key":                   obj{"type": "string", "description": "The secret: only when created or rotated."},
		"signingSecret":         obj{"type": "string", "description": "Only when created."},
		"previousKeyValidUntil": date,
	})
	s["KeyList"] = object([]string{"keys"}, obj{"keys": obj{"type": "array", "items": ref("schemas", "Key")}})
	s["SigningSecret"] = object([]string{"signingSecret"}, obj{"signingSecret": str})
	s["UsageDay"] = object([]string{"date", "rendersSucceeded", "rendersFailed", "cacheHits", "refusals", "bytesServed"}, obj{
		"date": obj{"type": "string", "format": "date"}, "rendersSucceeded": integer, "rendersFailed": integer,
		"cacheHits": integer, "refusals": integer, "bytesServed": integer})
	s["UsageSeries"] = object([]string{"keyId", "from", "to", "days"}, obj{"keyId": str, "from": obj{"type": "string", "format": "date"},
		"to": obj{"type": "string", "format": "date"}, "days": obj{"type": "array", "items": ref("schemas", "UsageDay")}})
	s["LoggedRequest"] = object([]string{"time", "status", "durationMs", "targetHost", "format", "cached", "requestId"}, obj{
		"time": date, "status": obj{"type": "integer"}, "durationMs": integer, "targetHost": str, "format": str, "cached": boolean, "requestId": str})
	s["RequestLog"] = object([]string{"keyId", "requests"}, obj{"keyId": str, "requests": obj{"type": "array", "items": ref("schemas", "LoggedRequest")}})
}

package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"github.com/shutterhq/shutter/internal/account"
	"github.com/shutterhq/shutter/internal/embedded"
	"github.com/shutterhq/shutter/internal/netguard"
	"github.com/shutterhq/shutter/internal/openapi"
	"github.com/shutterhq/shutter/internal/queue"
	"github.com/shutterhq/shutter/internal/screenshot"
	"github.com/shutterhq/shutter/internal/usage"
)

// The README's test vector of request signing.
const (
	vectorSecret    = "sig_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	vectorQuery     = "api_key=ss_test_4fj2kq7x3m5n6p8r9s2t4v6w8y2z3b5c&url=https%3A%2F%2Fexample.com%2F&format=png&full_page=true"
	vectorSignature = "f7967e7d7d8f8779cf71e0f7e6dd50ab8983a52055e88517ff814db4eeaf12fd"
)

var (
	validatorOnce sync.Once
	docValidator  validator.Validator
)

// documentValidator checks answers against the OpenAPI document served.
func documentValidator(t *testing.T) validator.Validator {
	validatorOnce.Do(func() {
		doc, err := libopenapi.NewDocument(openapi.Document(screenshot.Params(screenshot.DefaultLimits)))
		if err != nil {
			t.Fatal(err)
		}
		v, errs := validator.NewValidator(doc)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		docValidator = v
	})
	return docValidator
}

type accountsFixture struct {
	*fixture
	accounts *account.Service
	history  *usage.Recorder
}

func newAccountsFixture(t *testing.T, signup account.Signup, identity ...*account.Identity) *accountsFixture {
	t.Helper()
	st, err := embedded.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &accountsFixture{fixture: &fixture{render: &fakeRenderer{}, store: st, queue: queue.New(4, 10, time.Second)}}
	f.accounts = &account.Service{Store: st, Keys: st, Secrets: account.NewSecrets(strings.Repeat("r", 32), ""), Signup: signup,
		SessionTTL: 24 * time.Hour, RotationGrace: time.Hour, KeyPrefix: "ss", NodeEnv: "development", Limiter: embedded.NewLimiter()}
	f.history = &usage.Recorder{Store: st, Interval: 50 * time.Millisecond}
	go f.history.Run()
	t.Cleanup(func() { f.history.Close(5 * time.Second) })
	s := New(Deps{
		Parser: screenshot.NewParser(screenshot.DefaultLimits), Keys: st, Guard: &netguard.Guard{}, Queue: f.queue,
		Renderer: f.render, Quota: st, Plans: screenshot.DefaultPlans, HoldTTL: time.Minute,
		Accounts: f.accounts, History: f.history, Identity: append(identity, nil)[0],
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	f.srv = httptest.NewServer(s)
	t.Cleanup(f.srv.Close)
	return f
}

// client is a browser-like client: a cookie jar, and the CSRF token of its
// session once it has one.
type client struct {
	t     *testing.T
	base  string
	http  *http.Client
	csrf  string
	token string // a personal access token instead of the session
}

func (f *accountsFixture) client(t *testing.T) *client {
	jar, _ := cookiejar.New(nil)
	return &client{t: t, base: f.srv.URL, http: &http.Client{Jar: jar}}
}

// do sends a JSON request and decodes the answer into out (when not nil).
func (c *client) do(method, path string, body any, out any) int {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, c.base+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.csrf != "" {
		req.Header.Set(CSRFHeader, c.csrf)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			c.t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	vreq, _ := http.NewRequest(method, path, nil)
	if ok, errs := documentValidator(c.t).ValidateHttpResponse(vreq, resp); !ok {
		for _, e := range errs {
			c.t.Errorf("%s %s (%d) disagrees with the OpenAPI document: %s: %s", method, path, resp.StatusCode, e.Message, e.Reason)
		}
	}
	if resp.StatusCode >= 400 {
		var e ErrorBody
		if json.Unmarshal(raw, &e) != nil || e.Error == "" || e.RequestID == "" {
			c.t.Errorf("%s %s: %d without the error object: %s", method, path, resp.StatusCode, raw)
		}
	}
	return resp.StatusCode
}

// signUp signs a new user up and keeps the CSRF token.
func (c *client) signUp(email string) (userJSON, int) {
	var u userJSON
	code := c.do("POST", "/v1/auth/signup", credentials{Email: email, Password: "correct horse battery"}, &u)
	c.csrf = u.CSRFToken
	return u, code
}

func TestSignUpSessionsAndCSRF(t *testing.T) {
	f := newAccountsFixture(t, account.SignupClosed)
	ada := f.client(t)
	u, code := ada.signUp("Ada@Example.com")
	if code != 201 || u.Role != "admin" || u.Email != "ada@example.com" || u.CSRFToken == "" {
		t.Fatalf("first sign-up = %d %+v; want 201, an admin", code, u)
	}
	cookies := ada.http.Jar.Cookies(mustURL(f.srv.URL))
	if len(cookies) != 1 || cookies[0].Name != "shutter_session" {
		t.Fatalf("cookies = %v", cookies)
	}
	// The cookie's attributes as set.
	resp, _ := http.Post(f.srv.URL+"/v1/auth/signin", "application/json", strings.NewReader(`{"email":"ada@example.com","password":"correct horse battery"}`))
	resp.Body.Close()
	set := resp.Header.Get("Set-Cookie")
	for _, want := range []string{"HttpOnly", "SameSite=Lax", "Path=/", "Max-Age=86400"} {
		if !strings.Contains(set, want) {
			t.Errorf("Set-Cookie %q lacks %s", set, want)
		}
	}
	if code := f.client(t).do("POST", "/v1/auth/signup", credentials{Email: "bob@example.com", Password: "correct horse battery"}, nil); code != 403 {
		t.Errorf("second sign-up under SIGNUP=closed: %d, want 403", code)
	}
	var me userJSON
	if code := ada.do("GET", "/v1/me", nil, &me); code != 200 || me.Email != "ada@example.com" || me.CSRFToken != ada.csrf {
		t.Errorf("GET /v1/me = %d %+v", code, me)
	}
	// State changes need the session's CSRF token.
	good := ada.csrf
	for _, bad := range []string{"", strings.Repeat("0", 64)} {
		ada.csrf = bad
		if code := ada.do("POST", "/v1/keys", map[string]any{"name": "x"}, nil); code != 403 {
			t.Errorf("POST with CSRF token %q: %d, want 403", bad, code)
		}
	}
	ada.csrf = good
	// A cross-site browser request is refused even with the token.
	req, _ := http.NewRequest("POST", f.srv.URL+"/v1/keys", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	req.Header.Set(CSRFHeader, good)
	if resp, err := ada.http.Do(req); err != nil || resp.StatusCode != 403 {
		t.Errorf("cross-site POST: %v %v, want 403", resp.StatusCode, err)
	}
	// Sign-out ends this session only; everywhere ends all.
	other := f.client(t)
	other.do("POST", "/v1/auth/signin", credentials{Email: "ada@example.com", Password: "correct horse battery"}, &me)
	other.csrf = me.CSRFToken
	if code := other.do("POST", "/v1/auth/signout", nil, nil); code != 204 {
		t.Errorf("sign-out: %d", code)
	}
	if code := other.do("GET", "/v1/me", nil, nil); code != 401 {
		t.Errorf("after sign-out: %d, want 401", code)
	}
	if code := ada.do("GET", "/v1/me", nil, nil); code != 200 {
		t.Errorf("signing out one session ended another: %d", code)
	}
	third := f.client(t)
	third.do("POST", "/v1/auth/signin", credentials{Email: "ada@example.com", Password: "correct horse battery"}, &me)
	third.csrf = me.CSRFToken
	if code := third.do("POST", "/v1/auth/signout-everywhere", nil, nil); code != 204 {
		t.Errorf("sign-out everywhere: %d", code)
	}
	if code := ada.do("GET", "/v1/me", nil, nil); code != 401 {
		t.Errorf("after signing out everywhere: %d, want 401", code)
	}
}

func mustURL(s string) *url.URL {
	u, _ := url.Parse(s)
	return u
}

// TestSignInAnswersAlikeAndSlowsDown: an unknown email and a wrong password
// get the same answer; ten attempts on one email lock it for the window,
// even with the right password, while other emails still work.
func TestSignInAnswersAlikeAndSlowsDown(t *testing.T) {
	f := newAccountsFixture(t, account.SignupOpen)
	f.client(t).signUp("ada@example.com")
	f.client(t).signUp("bob@example.com")
	c := f.client(t)
	var unknown, wrong ErrorBody
	t0 := time.Now()
	c1 := c.do("POST", "/v1/auth/signin", credentials{Email: "nobody@example.com", Password: "whatever is typed"}, &unknown)
	d1 := time.Since(t0)
	t0 = time.Now()
	c2 := c.do("POST", "/v1/auth/signin", credentials{Email: "ada@example.com", Password: "whatever is typed"}, &wrong)
	d2 := time.Since(t0)
	if c1 != 401 || c2 != 401 || unknown.Error != wrong.Error {
		t.Errorf("unknown email %d %q, wrong password %d %q: want the same 401", c1, unknown.Error, c2, wrong.Error)
	}
	// Both hash a password: neither answer is an order of magnitude faster.
	if d1 < d2/5 || d2 < d1/5 {
		t.Logf("unknown email took %v, wrong password %v", d1, d2)
	}
	for i := 1; i < account.SignInPerEmail; i++ {
		c.do("POST", "/v1/auth/signin", credentials{Email: "ada@example.com", Password: "whatever is typed"}, nil)
	}
	if code := c.do("POST", "/v1/auth/signin", credentials{Email: "ada@example.com", Password: "correct horse battery"}, nil); code != 429 {
		t.Errorf("after %d attempts: %d, want 429", account.SignInPerEmail, code)
	}
	if code := c.do("POST", "/v1/auth/signin", credentials{Email: "BOB@example.com", Password: "correct horse battery"}, nil); code != 200 {
		t.Errorf("another email from the same address: %d, want 200", code)
	}
}

// TestKeysBelongToTheirOwners: members see and manage their own keys;
// another's key is 404 on every verb; admins see all, keys of the shell
// included; only admins set plans and limits.
func TestKeysBelongToTheirOwners(t *testing.T) {
	f := newAccountsFixture(t, account.SignupOpen)
	admin := f.client(t)
	admin.signUp("admin@example.com")
	ann, bob := f.client(t), f.client(t)
	ann.signUp("ann@example.com")
	bob.signUp("bob@example.com")

	var k keyJSON
	if code := ann.do("POST", "/v1/keys", map[string]any{"name": "site", "domains": []string{"Example.com", "*.example.org"}}, &k); code != 201 ||
		!strings.HasPrefix(k.Key, "ss_test_") || !strings.HasPrefix(k.SigningSecret, "sig_") || k.Plan != "free" ||
		fmt.Sprint(k.Domains) != "[example.com *.example.org]" || k.Usage == nil || k.Usage.Quota != 100 {
		t.Fatalf("create = %d %+v", code, k)
	}
	var shown keyJSON
	ann.do("GET", "/v1/keys/"+k.ID, nil, &shown)
	if shown.Key != "" || shown.SigningSecret != "" || shown.Prefix == "" {
		t.Errorf("a key shown again carries a secret: %+v", shown)
	}
	if code := ann.do("POST", "/v1/keys", map[string]any{"plan": "enterprise"}, nil); code != 403 {
		t.Errorf("a member set a plan: %d, want 403", code)
	}
	for _, rt := range []struct{ method, path string }{{"GET", ""}, {"PATCH", ""}, {"DELETE", ""}, {"POST", "/rotate"},
		{"GET", "/signing-secret"}, {"GET", "/usage"}, {"GET", "/requests"}} {
		var body any
		if rt.method == "PATCH" {
			body = map[string]any{"name": "mine now"}
		}
		if code := bob.do(rt.method, "/v1/keys/"+k.ID+rt.path, body, nil); code != 404 {
			t.Errorf("another member's %s %s: %d, want 404", rt.method, rt.path, code)
		}
	}
	var list struct{ Keys []keyJSON }
	if bob.do("GET", "/v1/keys", nil, &list); len(list.Keys) != 0 {
		t.Errorf("bob lists %d keys", len(list.Keys))
	}
	// A key of the shell (no owner) is visible to admins only.
	if _, err := f.accounts.CreateKey(t.Context(), account.NewKey{Name: "cli"}); err != nil {
		t.Fatal(err)
	}
	if ann.do("GET", "/v1/keys", nil, &list); len(list.Keys) != 1 {
		t.Errorf("ann lists %d keys, want her 1", len(list.Keys))
	}
	if admin.do("GET", "/v1/keys", nil, &list); len(list.Keys) != 2 {
		t.Errorf("the admin lists %d keys, want 2", len(list.Keys))
	}
	if code := admin.do("PATCH", "/v1/keys/"+k.ID, map[string]any{"plan": "pro", "monthlyQuota": 5}, &shown); code != 200 ||
		shown.Plan != "pro" || shown.MonthlyQuota != 5 || shown.Usage.Quota != 5 {
		t.Errorf("admin patch = %d %+v", code, shown)
	}
	// Validation names the field.
	for _, tc := range []struct {
		body any
		code int
		want string
	}{
		{map[string]any{"domains": []string{"ok.example", "not a domain"}}, 422, "domains[1]"},
		{map[string]any{"colour": "red"}, 422, `unknown field "colour"`},
		{map[string]any{"requireSignature": "yes"}, 422, "requireSignature: must be true or false"},
		{map[string]any{"name": strings.Repeat("n", maxBody)}, 413, "larger than"},
	} {
		var e ErrorBody
		if code := ann.do("PATCH", "/v1/keys/"+k.ID, tc.body, &e); code != tc.code || !strings.Contains(e.Error, tc.want) {
			t.Errorf("PATCH %v: %d %q, want %d %q", tc.body, code, e.Error, tc.code, tc.want)
		}
	}
	req, _ := http.NewRequest("PATCH", f.srv.URL+"/v1/keys/"+k.ID, strings.NewReader(`name=x`))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set(CSRFHeader, ann.csrf)
	if resp, _ := ann.http.Do(req); resp.StatusCode != 400 {
		t.Errorf("a form body: %d, want 400", resp.StatusCode)
	}
	// Revoked keys stop working; a revoked key is shown as such.
	if code := ann.do("DELETE", "/v1/keys/"+k.ID, nil, nil); code != 204 {
		t.Errorf("revoke: %d", code)
	}
	ann.do("GET", "/v1/keys/"+k.ID, nil, &shown)
	if shown.Status != "revoked" || shown.RevokedAt == nil {
		t.Errorf("after revoking: %+v", shown)
	}
	if resp, _ := f.get(t, "/v1/screenshots/take", url.Values{"api_key": {k.Key}, "url": {"http://8.8.8.8/"}}); resp.StatusCode != 403 {
		t.Errorf("a revoked key took a screenshot: %d", resp.StatusCode)
	}
}

// TestRotateKeepsTheOldSecretForTheGrace: after a rotation both secrets
// work until the grace period ends.
func TestRotateKeepsTheOldSecretForTheGrace(t *testing.T) {
	f := newAccountsFixture(t, account.SignupOpen)
	c := f.client(t)
	c.signUp("ada@example.com")
	var k, rotated keyJSON
	c.do("POST", "/v1/keys", map[string]any{"name": "site"}, &k)
	if code := c.do("POST", "/v1/keys/"+k.ID+"/rotate", nil, &rotated); code != 200 || rotated.Key == "" || rotated.Key == k.Key ||
		rotated.PreviousKeyUntil == nil || time.Until(*rotated.PreviousKeyUntil) < 59*time.Minute {
		t.Fatalf("rotate = %d %+v", code, rotated)
	}
	for _, secret := range []string{k.Key, rotated.Key} {
		if resp, body := f.get(t, "/v1/screenshots/take", url.Values{"api_key": {secret}, "url": {"http://8.8.8.8/"}}); resp.StatusCode != 200 {
			t.Errorf("secret %s… after rotation: %d %s", secret[:12], resp.StatusCode, body)
		}
	}
}

// TestAccessTokens: a token authenticates without a session or CSRF
// token; revoked or expired, it does not.
func TestAccessTokens(t *testing.T) {
	f := newAccountsFixture(t, account.SignupOpen)
	c := f.client(t)
	c.signUp("ada@example.com")
	var tok tokenJSON
	if code := c.do("POST", "/v1/tokens", map[string]any{"name": "ci"}, &tok); code != 201 || !strings.HasPrefix(tok.Token, "shp_") {
		t.Fatalf("create token = %d %+v", code, tok)
	}
	bearer := &client{t: t, base: f.srv.URL, http: http.DefaultClient, token: tok.Token}
	var k keyJSON
	if code := bearer.do("POST", "/v1/keys", map[string]any{"name": "from ci"}, &k); code != 201 {
		t.Errorf("POST with a token: %d", code)
	}
	var list struct{ Tokens []tokenJSON }
	c.do("GET", "/v1/tokens", nil, &list)
	if len(list.Tokens) != 1 || list.Tokens[0].Token != "" || list.Tokens[0].LastUsedAt == nil {
		t.Errorf("token list = %+v", list.Tokens)
	}
	if code := c.do("DELETE", "/v1/tokens/"+tok.ID, nil, nil); code != 204 {
		t.Errorf("delete token: %d", code)
	}
	if code := bearer.do("GET", "/v1/me", nil, nil); code != 401 {
		t.Errorf("revoked token: %d, want 401", code)
	}
	past := time.Now().Add(-time.Hour)
	if code := c.do("POST", "/v1/tokens", map[string]any{"expiresAt": past}, nil); code != 422 {
		t.Errorf("a token expiring in the past: %d, want 422", code)
	}
	if code := (&client{t: t, base: f.srv.URL, http: http.DefaultClient, token: "shp_nonsense"}).do("GET", "/v1/me", nil, nil); code != 401 {
		t.Errorf("unknown token: %d, want 401", code)
	}
}

// TestSignedRequests checks the scheme against the README's vector, then
// end to end: a key that requires signing refuses a missing or wrong
// signature (saying which), and one changed byte breaks a signed URL.
func TestSignedRequests(t *testing.T) {
	if got := account.Sign(vectorSecret, vectorQuery); got != vectorSignature {
		t.Fatalf("the README's test vector: %s, want %s", got, vectorSignature)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{vectorSecret, vectorQuery, vectorSignature} {
		if !bytes.Contains(readme, []byte(s)) {
			t.Errorf("the README lacks the test vector's %q", s)
		}
	}
	f := newAccountsFixture(t, account.SignupOpen)
	c := f.client(t)
	c.signUp("ada@example.com")
	var k keyJSON
	c.do("POST", "/v1/keys", map[string]any{"requireSignature": true}, &k)
	query := "api_key=" + k.Key + "&url=http%3A%2F%2F8.8.8.8%2F&format=png"
	signed := query + "&signature=" + account.Sign(k.SigningSecret, query)
	take := func(raw string) (int, string) {
		resp, err := http.Get(f.srv.URL + "/v1/screenshots/take?" + raw)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e ErrorBody
		json.NewDecoder(resp.Body).Decode(&e)
		return resp.StatusCode, e.Error
	}
	if code, msg := take(signed); code != 200 {
		t.Errorf("signed request: %d %s", code, msg)
	}
	if code, msg := take(query); code != 403 || !strings.Contains(msg, "requires signed requests") {
		t.Errorf("unsigned: %d %q", code, msg)
	}
	tampered := strings.Replace(signed, "format=png", "format=webp", 1)
	if code, msg := take(tampered); code != 403 || !strings.Contains(msg, "does not match") {
		t.Errorf("one byte changed: %d %q", code, msg)
	}
	sig := signed[len(signed)-64:]
	if code, _ := take("signature=" + sig + "&" + query); code != 400 {
		t.Errorf("signature first: %d, want 400", code)
	}
	if code, _ := take(query + "&signature=" + sig + "&format=png"); code != 400 {
		t.Errorf("signature in the middle: %d, want 400", code)
	}
	// A key without the requirement still checks a signature it is given.
	var open keyJSON
	c.do("POST", "/v1/keys", map[string]any{}, &open)
	q2 := "api_key=" + open.Key + "&url=http%3A%2F%2F8.8.8.8%2F"
	if code, _ := take(q2); code != 200 {
		t.Errorf("unsigned on a key without the requirement: %d", code)
	}
	if code, _ := take(q2 + "&signature=" + strings.Repeat("0", 64)); code != 403 {
		t.Errorf("a wrong signature on a key without the requirement: %d, want 403", code)
	}
	// The signing secret rotates, and the old signature stops working.
	var rotated map[string]string
	c.do("POST", "/v1/keys/"+k.ID+"/signing-secret/rotate", nil, &rotated)
	if code, _ := take(signed); code != 403 {
		t.Errorf("a URL signed with the old signing secret: %d, want 403", code)
	}
	if code, msg := take(query + "&signature=" + account.Sign(rotated["signingSecret"], query)); code != 200 {
		t.Errorf("signed with the new secret: %d %s", code, msg)
	}
}

// TestUsageAndRequestLog: requests of a key appear in its daily series
// and its log by outcome, without query values.
func TestUsageAndRequestLog(t *testing.T) {
	f := newAccountsFixture(t, account.SignupOpen)
	c := f.client(t)
	c.signUp("ada@example.com")
	var k keyJSON
	c.do("POST", "/v1/keys", map[string]any{"domains": []string{"8.8.8.8"}}, &k)
	for range 3 {
		f.get(t, "/v1/screenshots/take", url.Values{"api_key": {k.Key}, "url": {"http://8.8.8.8/secret-path?token=hunter2"}})
	}
	f.render.err = screenshot.Errorf(screenshot.EUPSTREAM, "down")
	f.get(t, "/v1/screenshots/take", url.Values{"api_key": {k.Key}, "url": {"http://8.8.8.8/"}})
	f.get(t, "/v1/screenshots/take", url.Values{"api_key": {k.Key}, "url": {"http://not-allowed.example/"}})
	var series struct {
		Days []account.Day
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.do("GET", "/v1/keys/"+k.ID+"/usage", nil, &series)
		if last := series.Days[len(series.Days)-1]; last.Succeeded == 3 && last.Failed == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	today := time.Now().UTC().Format(time.DateOnly)
	last := series.Days[len(series.Days)-1]
	if len(series.Days) != 30 || last.Date != today || last.Succeeded != 3 || last.Failed != 1 || last.Bytes != 3*int64(len("image-bytes")) {
		t.Errorf("usage = %d days, today %+v", len(series.Days), last)
	}
	var log struct{ Requests []account.Request }
	c.do("GET", "/v1/keys/"+k.ID+"/requests?limit=10", nil, &log)
	if len(log.Requests) != 5 || log.Requests[0].Status != 403 || log.Requests[0].Host != "not-allowed.example" || log.Requests[4].Host != "8.8.8.8" {
		t.Errorf("request log = %+v", log.Requests)
	}
	raw, _ := json.Marshal(log)
	if bytes.Contains(raw, []byte("hunter2")) || bytes.Contains(raw, []byte("secret-path")) || bytes.Contains(raw, []byte(k.Key)) {
		t.Errorf("the request log holds query values or the key: %s", raw)
	}
	c.do("GET", "/v1/keys/"+k.ID+"/requests?status=502", nil, &log)
	if len(log.Requests) != 1 {
		t.Errorf("status filter: %+v", log.Requests)
	}
	for _, q := range []string{"?from=2026-13-01", "?from=2026-11-02&to=2026-11-01", "?from=2020-01-01&to=2026-01-01"} {
		if code := c.do("GET", "/v1/keys/"+k.ID+"/usage"+q, nil, nil); code != 400 {
			t.Errorf("usage%s: %d, want 400", q, code)
		}
	}
}

// TestAdminsManageUsers: members cannot; admins list, invite, change roles
// and disable (which ends the user's sessions), but not themselves.
func TestAdminsManageUsers(t *testing.T) {
	f := newAccountsFixture(t, account.SignupInvite)
	admin := f.client(t)
	me, _ := admin.signUp("admin@example.com")
	if _, code := f.client(t).signUp("stranger@example.com"); code != 403 {
		t.Errorf("sign-up without an invitation under SIGNUP=invite: %d, want 403", code)
	}
	var invited userJSON
	if code := admin.do("POST", "/v1/users", map[string]any{"email": "Ann@example.com"}, &invited); code != 201 || invited.HasPassword {
		t.Fatalf("invite = %d %+v", code, invited)
	}
	ann := f.client(t)
	if u, code := ann.signUp("ann@example.com"); code != 201 || u.Role != "member" {
		t.Fatalf("invited sign-up = %d %+v", code, u)
	}
	if code := ann.do("GET", "/v1/users", nil, nil); code != 403 {
		t.Errorf("a member listed users: %d", code)
	}
	var list struct{ Users []userJSON }
	if admin.do("GET", "/v1/users", nil, &list); len(list.Users) != 2 {
		t.Errorf("users = %+v", list.Users)
	}
	if code := admin.do("PATCH", "/v1/users/"+me.ID, map[string]any{"role": "member"}, nil); code != 409 {
		t.Errorf("an admin demoted themselves: %d, want 409", code)
	}
	if code := admin.do("PATCH", "/v1/users/"+invited.ID, map[string]any{"disabled": true}, nil); code != 200 {
		t.Errorf("disable: %d", code)
	}
	if code := ann.do("GET", "/v1/me", nil, nil); code != 401 {
		t.Errorf("a disabled user's session still works: %d", code)
	}
	if code := f.client(t).do("POST", "/v1/auth/signin", credentials{Email: "ann@example.com", Password: "correct horse battery"}, nil); code != 401 {
		t.Errorf("a disabled user signed in: %d", code)
	}
	if code := admin.do("PATCH", "/v1/users/usr_missing", map[string]any{"role": "admin"}, nil); code != 404 {
		t.Errorf("patch a missing user: %d", code)
	}
}

package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shutterhq/shutter/internal/account"
	"github.com/shutterhq/shutter/internal/testenv"
)

// TestAccountsFromTheShell: users made and reset from the shell sign in
// to the running server; keys made with --json sign requests with the
// signing secret they print; the development AUTH_SECRET survives a
// restart (signing secrets still open).
func TestAccountsFromTheShell(t *testing.T) {
	chrome := testenv.Chrome(t)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `<body style="background:#00f">signed</body>`)
	}))
	defer site.Close()
	dir := t.TempDir()
	env := environ{"PORT": "0", "METRICS_PORT": "-1", "DATA_DIR": dir, "CHROME_PATH": chrome, "ALLOW_PRIVATE_TARGETS": "true",
		"LOG_LEVEL": "error", "SIGNUP": "closed"}

	withStdin := func(in string) environ {
		e := environ{}
		for k, v := range env {
			e[k] = v
		}
		e["STDIN"] = in
		return e
	}
	out := cli(t, withStdin("first password here\n"), "users", "create", "--email", "Ops@Example.com", "--admin", "--password-stdin")
	if !strings.Contains(out, "ops@example.com") || strings.Contains(out, "first password") {
		t.Errorf("users create: %q", out)
	}
	out = cli(t, env, "users", "create", "--email", "dev@example.com")
	generated := strings.TrimSpace(out[strings.LastIndex(out, ": ")+2:])
	if len(generated) < account.MinPasswordLength {
		t.Fatalf("generated password: %q", out)
	}
	if list := cli(t, env, "users", "list"); !strings.Contains(list, "ops@example.com  admin") || !strings.Contains(list, "dev@example.com  member") {
		t.Errorf("users list:\n%s", list)
	}
	var k struct {
		ID, Key, SigningSecret string
		RequireSignature       bool
	}
	if err := json.Unmarshal([]byte(cli(t, env, "keys", "create", "--plan", "pro", "--require-signature=true", "--json")), &k); err != nil ||
		!strings.HasPrefix(k.Key, "ss_test_") || !strings.HasPrefix(k.SigningSecret, "sig_") || !k.RequireSignature {
		t.Fatalf("keys create --json: %v %+v", err, k)
	}
	secret, err := os.ReadFile(filepath.Join(dir, "auth-secret"))
	if err != nil || len(strings.TrimSpace(string(secret))) < 32 {
		t.Fatalf("development AUTH_SECRET file: %v %q", err, secret)
	}

	m := startMain(t, env)
	base := "http://" + m.Addr
	signIn := func(email, password string) int {
		resp, err := http.Post(base+"/v1/auth/signin", "application/json",
			strings.NewReader(`{"email":"`+email+`","password":"`+password+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := signIn("OPS@example.com", "first password here"); code != 200 {
		t.Errorf("sign-in of the shell's admin: %d", code)
	}
	if code := signIn("dev@example.com", generated); code != 200 {
		t.Errorf("sign-in with the generated password: %d", code)
	}
	cli(t, withStdin("second password here\n"), "users", "reset-password", "--email", "dev@example.com", "--password-stdin")
	if code := signIn("dev@example.com", generated); code != 401 {
		t.Errorf("the old password after a reset: %d, want 401", code)
	}
	if code := signIn("dev@example.com", "second password here"); code != 200 {
		t.Errorf("the new password: %d", code)
	}

	query := "api_key=" + k.Key + "&url=" + url.QueryEscape(site.URL) + "&format=png"
	signed := query + "&signature=" + account.Sign(k.SigningSecret, query)
	for _, tc := range []struct {
		q    string
		want int
	}{{query, 403}, {signed, 200}} {
		resp, body := getRaw(t, m, tc.q)
		if resp.StatusCode != tc.want {
			t.Errorf("%.60s…: %d %s, want %d", tc.q, resp.StatusCode, body, tc.want)
		}
	}
	cli(t, env, "keys", "update", k.ID, "--require-signature=false")
	m.Close()

	// After a restart the sealed signing secret still opens (the same
	// development AUTH_SECRET), and the key no longer needs signing.
	m = startMain(t, env)
	for _, q := range []string{query, signed} {
		resp, body := getRaw(t, m, q)
		if resp.StatusCode != 200 {
			t.Errorf("after restart, %.60s…: %d %s", q, resp.StatusCode, body)
		}
	}
}

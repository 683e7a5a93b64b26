package httpapi

import (
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"

	"github.com/oauth2-proxy/mockoidc"

	"github.com/shutterhq/shutter/internal/account"
)

// startProvider runs a real OpenID Connect provider (oauth2-proxy's
// mockoidc: discovery, authorization with PKCE, token endpoint, signed ID
// tokens) on 127.0.0.1.
func startProvider(t *testing.T) (*mockoidc.MockOIDC, *account.Identity) {
	t.Helper()
	m, err := mockoidc.Run()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Shutdown() })
	cfg := m.Config()
	return m, &account.Identity{Issuer: cfg.Issuer, ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret}
}

// browse follows the sign-in redirects like a browser and returns where
// it ended and the status there.
func browse(t *testing.T, c *http.Client, u string) (string, int) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.Request.URL.String(), resp.StatusCode
}

func TestExternalSignIn(t *testing.T) {
	provider, identity := startProvider(t)
	f := newAccountsFixture(t, account.SignupClosed, identity)
	newBrowser := func() *client {
		jar, _ := cookiejar.New(nil)
		return &client{t: t, base: f.srv.URL, http: &http.Client{Jar: jar}}
	}
	var cfg map[string]any
	newBrowser().do("GET", "/v1/auth/config", nil, &cfg)
	if cfg["externalSignIn"] != true || cfg["signup"] != "closed" {
		t.Errorf("auth config = %v", cfg)
	}

	// The first user of the instance comes through the provider: an admin.
	provider.QueueUser(&mockoidc.MockUser{Subject: "1", Email: "Ada@Example.com", EmailVerified: true})
	ada := newBrowser()
	end, _ := browse(t, ada.http, f.srv.URL+"/v1/auth/oidc/start?return=/dashboard/keys")
	if !strings.HasSuffix(end, "/dashboard/keys") {
		t.Errorf("after sign-in the browser is at %s, want /dashboard/keys", end)
	}
	var me userJSON
	if code := ada.do("GET", "/v1/me", nil, &me); code != 200 || me.Email != "ada@example.com" || me.Role != "admin" || me.HasPassword {
		t.Fatalf("after external sign-in: %d %+v", code, me)
	}

	// Another email under SIGNUP=closed: refused, no account made.
	provider.QueueUser(&mockoidc.MockUser{Subject: "2", Email: "eve@example.com", EmailVerified: true})
	eve := newBrowser()
	if _, code := browse(t, eve.http, f.srv.URL+"/v1/auth/oidc/start"); code != 403 {
		t.Errorf("unknown email under SIGNUP=closed: %d, want 403", code)
	}
	if _, err := f.accounts.Store.UserByEmail(t.Context(), "eve@example.com"); err == nil {
		t.Error("an account was made for eve")
	}
	// An invited user comes in; an unverified email does not.
	ada.csrf = me.CSRFToken
	ada.do("POST", "/v1/users", map[string]any{"email": "bob@example.com"}, nil)
	provider.QueueUser(&mockoidc.MockUser{Subject: "3", Email: "bob@example.com", EmailVerified: true})
	bob := newBrowser()
	browse(t, bob.http, f.srv.URL+"/v1/auth/oidc/start")
	if code := bob.do("GET", "/v1/me", nil, &me); code != 200 || me.Email != "bob@example.com" || me.Role != "member" {
		t.Errorf("invited user: %d %+v", code, me)
	}
	provider.QueueUser(&mockoidc.MockUser{Subject: "4", Email: "bob@example.com", EmailVerified: false})
	if _, code := browse(t, newBrowser().http, f.srv.URL+"/v1/auth/oidc/start"); code != 401 {
		t.Errorf("unverified email: %d, want 401", code)
	}

	// A callback this browser did not start, and a return address off the
	// site, go nowhere.
	if _, code := browse(t, newBrowser().http, f.srv.URL+"/v1/auth/oidc/callback?code=x&state=y"); code != 401 {
		t.Errorf("a callback without a flow: %d, want 401", code)
	}
	provider.QueueUser(&mockoidc.MockUser{Subject: "1", Email: "ada@example.com", EmailVerified: true})
	noFollow := newBrowser().http
	noFollow.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if strings.HasPrefix(req.URL.Path, "/v1/auth/oidc/") || strings.HasPrefix(req.URL.String(), provider.Issuer()) {
			return nil
		}
		return http.ErrUseLastResponse
	}
	resp, err := noFollow.Get(f.srv.URL + "/v1/auth/oidc/start?return=//evil.example/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); loc != "/" {
		t.Errorf("return=//evil.example/x sent the browser to %q, want /", loc)
	}
}

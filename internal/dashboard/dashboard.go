// Package dashboard is the web console served at /dashboard/: server-
// rendered pages (html/template) over the account service, enhanced by a
// small script of our own, under a strict Content-Security-Policy. Every
// page works without JavaScript; forms post with a CSRF token.
package dashboard

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/shutterhq/shutter/internal/account"
	"github.com/shutterhq/shutter/internal/health"
	"github.com/shutterhq/shutter/internal/httpapi"
	"github.com/shutterhq/shutter/internal/screenshot"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// CSP is the Content-Security-Policy of every dashboard answer: no inline
// script or style, images from here or data: (playground results), no
// framing.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Dashboard serves the console.
type Dashboard struct {
	Accounts *account.Service
	Quota    screenshot.QuotaStore // this month's usage; nil shows none
	Plans    screenshot.Plans
	Params   []screenshot.Param // the playground's fields
	// API serves the screenshot endpoint for the playground.
	API http.Handler
	// Health runs the instance's health report for admins; nil hides it.
	Health *health.Checker
	// PublicURL is the API's public address (VITE_SERVER_URL); "" uses the
	// request's.
	PublicURL     string
	SecureCookies bool
	// External is the name of the external sign-in provider's button; ""
	// without one.
	External string
	Log      *slog.Logger

	pages map[string]*template.Template
}

// Prefix is where the dashboard lives.
const Prefix = "/dashboard"

// Init parses the templates; it must run before Routes.
func (d *Dashboard) Init() error {
	d.pages = map[string]*template.Template{}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return err
	}
	for _, n := range names {
		page := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if page == "layout" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", n)
		if err != nil {
			return fmt.Errorf("dashboard template %s: %w", page, err)
		}
		d.pages[page] = t
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	return nil
}

var funcs = template.FuncMap{
	"date": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04 UTC")
	},
	"join":  strings.Join,
	"int64": func(n int) int64 { return int64(n) },
	"bytes": func(n int64) string {
		switch {
		case n >= 1<<30:
			return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
		case n >= 1<<20:
			return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
		case n >= 1<<10:
			return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
		}
		return fmt.Sprintf("%d B", n)
	},
}

// Routes adds the dashboard's routes.
func (d *Dashboard) Routes(r *httprouter.Router) {
	static, _ := fs.Sub(staticFS, "static")
	files := http.StripPrefix(Prefix+"/static/", http.FileServerFS(static))
	r.GET(Prefix+"/static/*file", func(w http.ResponseWriter, req *http.Request, _ httprouter.Params) {
		d.headers(w)
		w.Header().Set("Cache-Control", "public, max-age=3600")
		files.ServeHTTP(w, req)
	})
	r.GET("/", func(w http.ResponseWriter, req *http.Request, _ httprouter.Params) {
		http.Redirect(w, req, Prefix+"/", http.StatusFound)
	})
	r.GET(Prefix, func(w http.ResponseWriter, req *http.Request, _ httprouter.Params) {
		http.Redirect(w, req, Prefix+"/", http.StatusFound)
	})
	public := map[string]handler{
		"GET /signin": d.signInPage, "POST /signin": d.signIn,
		"GET /signup": d.signUpPage, "POST /signup": d.signUp,
	}
	for route, h := range public {
		method, path, _ := strings.Cut(route, " ")
		r.Handle(method, Prefix+path, d.serve(h, false, false))
	}
	for _, rt := range []struct {
		route string
		admin bool
		h     handler
	}{
		{"GET /", false, d.keysPage},
		{"POST /signout", false, d.signOut},
		{"POST /signout-everywhere", false, d.signOutEverywhere},
		{"GET /account", false, d.accountPage},
		{"POST /account/password", false, d.changePassword},
		{"POST /keys", false, d.createKey},
		{"GET /keys/:id", false, d.keyPage},
		{"POST /keys/:id", false, d.updateKey},
		{"POST /keys/:id/reveal", false, d.revealSigningSecret},
		{"POST /keys/:id/rotate", false, d.rotateKey},
		{"POST /keys/:id/rotate-signing-secret", false, d.rotateSigningSecret},
		{"GET /keys/:id/revoke", false, d.revokePage},
		{"POST /keys/:id/revoke", false, d.revokeKey},
		{"GET /usage", false, d.usagePage},
		{"GET /requests", false, d.requestsPage},
		{"GET /playground", false, d.playgroundPage},
		{"POST /playground", false, d.playground},
		{"GET /tokens", false, d.tokensPage},
		{"POST /tokens", false, d.createToken},
		{"POST /tokens/:id/delete", false, d.deleteToken},
		{"GET /admin/users", true, d.usersPage},
		{"POST /admin/users", true, d.inviteUser},
		{"POST /admin/users/:id", true, d.updateUser},
		{"GET /admin/health", true, d.healthPage},
	} {
		method, path, _ := strings.Cut(rt.route, " ")
		r.Handle(method, Prefix+path, d.serve(rt.h, true, rt.admin))
	}
}

// visit is one request to the dashboard: who, and the page's common data.
type visit struct {
	w       http.ResponseWriter
	r       *http.Request
	p       httprouter.Params
	user    *account.User
	session *account.Session
	csrf    string
}

type handler func(v *visit) error

// headers are the security headers of every dashboard answer.
func (d *Dashboard) headers(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
}

var cop = http.NewCrossOriginProtection()

// serve wraps a page: the security headers, cross-origin refusal, the
// session (sign-in page when there is none), admin-only pages, and the
// CSRF token of every POST.
func (d *Dashboard) serve(h handler, signedIn, admin bool) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		d.headers(w)
		w.Header().Set("Cache-Control", "no-store")
		v := &visit{w: w, r: r, p: p}
		if err := cop.Check(r); err != nil {
			d.fail(v, http.StatusForbidden, "This form was sent from another site and was refused.")
			return
		}
		if signedIn {
			var token string
			if ck, err := r.Cookie(account.SessionCookieName(d.SecureCookies)); err == nil {
				token = ck.Value
			}
			u, se, err := d.Accounts.Session(r.Context(), token)
			if err != nil {
				if screenshot.ErrorCode(err) == screenshot.EUNAUTHENTICATED {
					//nolint:gosec // a path of this site; the sign-in page keeps only /dashboard/ paths (localNext)
					http.Redirect(w, r, Prefix+"/signin?next="+urlEscape(r.URL.Path), http.StatusSeeOther)
					return
				}
				d.fail(v, http.StatusServiceUnavailable, "The account store is unavailable; try again shortly.")
				return
			}
			v.user, v.session, v.csrf = u, se, d.Accounts.Secrets.CSRFToken(se.Hash)
			if admin && u.Role != account.RoleAdmin {
				d.fail(v, http.StatusForbidden, "Only admins may open this page.")
				return
			}
			if r.Method == http.MethodPost && !d.Accounts.Secrets.CheckCSRF(se.Hash, r.PostFormValue("csrf_token")) {
				d.fail(v, http.StatusForbidden, "This form has expired or was not sent from this page. Reload the page and try again.")
				return
			}
		}
		if err := h(v); err != nil {
			d.failErr(v, err)
		}
	}
}

// page is what every template gets.
type page struct {
	Title   string
	Nav     string
	User    *account.User
	CSRF    string
	Notice  string
	Error   string
	Data    any
	Status  int
	Base    string // the API's public address
	Version string
}

// render writes a page with the status (200 when zero).
func (d *Dashboard) render(v *visit, name string, p page) error {
	t, ok := d.pages[name]
	if !ok {
		return fmt.Errorf("no template %s", name)
	}
	p.User, p.CSRF = v.user, v.csrf
	if p.Base == "" {
		p.Base = d.base(v.r)
	}
	if p.Notice == "" {
		p.Notice = notices[v.r.URL.Query().Get("done")]
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", p); err != nil {
		return err
	}
	v.w.Header().Set("Content-Type", "text/html; charset=utf-8")
	status := p.Status
	if status == 0 {
		status = http.StatusOK
	}
	v.w.WriteHeader(status)
	_, err := v.w.Write(buf.Bytes())
	return err
}

// notices are the messages after a form's redirect (never reflected input).
var notices = map[string]string{ //nolint:gosec // messages, not credentials
	"updated":  "Saved.",
	"revoked":  "The key was revoked. Requests with it are refused.",
	"password": "Your password was changed; your other sessions were signed out.",
	"token":    "The token was revoked.",
	"user":     "The user was updated.",
	"invited":  "The user was invited: they set a password by signing up with that email.",
}

// fail renders the error page.
func (d *Dashboard) fail(v *visit, status int, msg string) {
	if err := d.render(v, "error", page{Title: http.StatusText(status), Error: msg, Status: status}); err != nil {
		d.Log.Error("dashboard error page", "err", err)
	}
}

// failErr renders an error of the domain with the status the API gives it
// (the one table); a 500's detail goes to the log only.
func (d *Dashboard) failErr(v *visit, err error) {
	status := httpapi.Status(err)
	if status >= 500 {
		d.Log.ErrorContext(v.r.Context(), "dashboard", "path", v.r.URL.Path, "err", err)
	}
	d.fail(v, status, screenshot.ErrorMessage(err))
}

// back redirects after a form to a page of the dashboard with a notice.
func (v *visit) back(path, notice string) error {
	to := Prefix + path
	if notice != "" {
		to += "?done=" + notice
	}
	http.Redirect(v.w, v.r, to, http.StatusSeeOther)
	return nil
}

// base is the API's public address.
func (d *Dashboard) base(r *http.Request) string { return account.PublicBase(d.PublicURL, r) }

func urlEscape(s string) string {
	return strings.NewReplacer("%", "%25", "&", "%26", "?", "%3F", "#", "%23", " ", "%20").Replace(s)
}

// setSession sets or clears the session cookie.
func (d *Dashboard) setSession(w http.ResponseWriter, token string) {
	account.SetSessionCookie(w, token, d.SecureCookies, d.Accounts.SessionTTL)
}

// visibleKey is a key the visitor may see, or 404.
func (d *Dashboard) visibleKey(ctx context.Context, v *visit) (*screenshot.Key, error) {
	return d.Accounts.Visible(ctx, v.user, v.p.ByName("id"))
}

package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/shutterhq/shutter/internal/account"
	"github.com/shutterhq/shutter/internal/screenshot"
)

// routeIdentity adds external sign-in and the sign-in configuration.
func (s *Server) routeIdentity(r *httprouter.Router) {
	r.GET("/v1/auth/config", s.protect(func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
		writeJSON(w, http.StatusOK, map[string]any{"signup": s.Accounts.Signup, "externalSignIn": s.Identity != nil})
	}))
	if s.Identity == nil {
		return
	}
	r.GET("/v1/auth/oidc/start", s.protect(func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
		if err := s.oidcStart(w, r); err != nil {
			s.writeError(w, r, err)
		}
	}))
	r.GET("/v1/auth/oidc/callback", s.protect(func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
		if err := s.oidcCallback(w, r); err != nil {
			s.writeError(w, r, err)
		}
	}))
}

// flowCookie holds the sealed flow between the redirect and the callback.
func (s *Server) flowCookie() string {
	if s.SecureCookies {
		return "__Host-shutter_oidc"
	}
	return "shutter_oidc"
}

// PublicBase is the API's public address.
func (s *Server) PublicBase(r *http.Request) string { return account.PublicBase(s.PublicURL, r) }

// localPath keeps a return address on this site: a path, never another
// host (//evil.example or a scheme).
func localPath(p string) string {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.HasPrefix(p, "/\\") || strings.ContainsAny(p, "\r\n") {
		return "/"
	}
	return p
}

func (s *Server) oidcStart(w http.ResponseWriter, r *http.Request) error {
	redirect := s.PublicBase(r) + "/v1/auth/oidc/callback"
	u, flow, err := s.Identity.Start(r.Context(), redirect, localPath(r.URL.Query().Get("return")))
	if err != nil {
		return &screenshot.Error{Code: screenshot.EUNAVAILABLE, Message: "the identity provider cannot be reached; try again shortly",
			RetryAfter: 5 * time.Second, Err: err}
	}
	raw, _ := json.Marshal(flow)
	//nolint:gosec // Secure in production; development serves plain HTTP (README: Sessions)
	http.SetCookie(w, &http.Cookie{Name: s.flowCookie(), Value: s.Accounts.Secrets.Seal(string(raw)), Path: "/", HttpOnly: true,
		Secure: s.SecureCookies, SameSite: http.SameSiteLaxMode, MaxAge: 600})
	http.Redirect(w, r, u, http.StatusFound) //nolint:gosec // the provider's authorization endpoint (discovered), not input
	return nil
}

func (s *Server) oidcCallback(w http.ResponseWriter, r *http.Request) error {
	//nolint:gosec // deletes the cookie; Secure as when it was set
	http.SetCookie(w, &http.Cookie{Name: s.flowCookie(), Path: "/", HttpOnly: true, Secure: s.SecureCookies, SameSite: http.SameSiteLaxMode, MaxAge: -1})
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		return screenshot.Errorf(screenshot.EUNAUTHENTICATED, "the identity provider refused the sign-in: %.100s", e)
	}
	var flow account.Flow
	ck, err := r.Cookie(s.flowCookie())
	if err == nil {
		var plain string
		if plain, _, err = s.Accounts.Secrets.Open(ck.Value); err == nil {
			err = json.Unmarshal([]byte(plain), &flow)
		}
	}
	if err != nil || time.Now().After(flow.Expires) || flow.State == "" || q.Get("state") != flow.State {
		return screenshot.Errorf(screenshot.EUNAUTHENTICATED, "this sign-in expired or was not started here; start again")
	}
	email, err := s.Identity.Finish(r.Context(), s.PublicBase(r)+"/v1/auth/oidc/callback", q.Get("code"), &flow)
	if err != nil {
		return &screenshot.Error{Code: screenshot.EUNAUTHENTICATED, Message: "the identity provider's answer was not accepted", Err: err}
	}
	_, token, err := s.Accounts.SignInExternal(r.Context(), email)
	if err != nil {
		return err
	}
	s.SetSessionCookie(w, token)
	http.Redirect(w, r, localPath(flow.Return), http.StatusFound)
	return nil
}

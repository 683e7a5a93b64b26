package account

import (
	"net/http"
	"time"
)

// SessionCookieName is the session cookie's name: with the __Host- prefix
// (Secure, the whole host, path /) when cookies are secure (production,
// over HTTPS); browsers refuse that prefix over plain HTTP.
func SessionCookieName(secure bool) string {
	if secure {
		return "__Host-shutter_session"
	}
	return "shutter_session"
}

// SetSessionCookie sets the session cookie, or with an empty token clears it.
func SetSessionCookie(w http.ResponseWriter, token string, secure bool, ttl time.Duration) {
	//nolint:gosec // Secure in production; development serves plain HTTP (README: Sessions)
	ck := &http.Cookie{Name: SessionCookieName(secure), Value: token, Path: "/", HttpOnly: true, Secure: secure,
		SameSite: http.SameSiteLaxMode, MaxAge: int(ttl / time.Second)}
	if token == "" {
		ck.MaxAge = -1
	}
	http.SetCookie(w, ck)
}

// PublicBase is the API's public address for links, snippets and the
// sign-in callback: the configured one (VITE_SERVER_URL), else the
// request's own scheme and host.
func PublicBase(configured string, r *http.Request) string {
	if configured != "" {
		return configured
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/shutterhq/shutter/internal/account"
	"github.com/shutterhq/shutter/internal/screenshot"
)

// maxBody is the largest management request body.
const maxBody = 64 << 10

// caller is who makes a management request: a user through a session
// (with its CSRF token checked) or through an access token.
type caller struct {
	user    *account.User
	session *account.Session // nil for an access token
}

// handler is a management endpoint.
type handler func(w http.ResponseWriter, r *http.Request, c *caller, p httprouter.Params) error

// keyHandler is an endpoint of one key, which the caller may see.
type keyHandler func(w http.ResponseWriter, r *http.Request, c *caller, k *screenshot.Key) error

// withKey finds the key of the path; another user's key is 404.
func (s *Server) withKey(h keyHandler) handler {
	return func(w http.ResponseWriter, r *http.Request, c *caller, p httprouter.Params) error {
		k, err := s.Accounts.Visible(r.Context(), c.user, p.ByName("id"))
		if err != nil {
			return err
		}
		return h(w, r, c, k)
	}
}

// SessionCookie is the name of the session cookie.
func (s *Server) SessionCookie() string { return account.SessionCookieName(s.SecureCookies) }

// CSRFHeader carries the session's CSRF token on state-changing requests.
const CSRFHeader = "X-CSRF-Token"

// routeAccounts adds the management API.
func (s *Server) routeAccounts(r *httprouter.Router) {
	public := func(h func(w http.ResponseWriter, r *http.Request) error) httprouter.Handle {
		return s.protect(func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
			if err := h(w, r); err != nil {
				s.writeError(w, r, err)
			}
		})
	}
	r.POST("/v1/auth/signup", public(s.signUp))
	r.POST("/v1/auth/signin", public(s.signIn))
	for _, rt := range []struct {
		method, path string
		admin        bool
		h            handler
	}{
		{"POST", "/v1/auth/signout", false, s.signOut},
		{"POST", "/v1/auth/signout-everywhere", false, s.signOutEverywhere},
		{"GET", "/v1/me", false, s.me},
		{"POST", "/v1/me/password", false, s.changePassword},
		{"GET", "/v1/tokens", false, s.listTokens},
		{"POST", "/v1/tokens", false, s.createToken},
		{"DELETE", "/v1/tokens/:id", false, s.deleteToken},
		{"GET", "/v1/keys", false, s.listKeys},
		{"POST", "/v1/keys", false, s.createKey},
		{"GET", "/v1/keys/:id", false, s.withKey(s.getKey)},
		{"PATCH", "/v1/keys/:id", false, s.withKey(s.patchKey)},
		{"DELETE", "/v1/keys/:id", false, s.withKey(s.revokeKey)},
		{"POST", "/v1/keys/:id/rotate", false, s.withKey(s.rotateKey)},
		{"GET", "/v1/keys/:id/signing-secret", false, s.withKey(s.signing(s.Accounts.SigningSecret))},
		{"POST", "/v1/keys/:id/signing-secret/rotate", false, s.withKey(s.signing(s.Accounts.RotateSigningSecret))},
		{"GET", "/v1/keys/:id/usage", false, s.withKey(s.keyUsage)},
		{"GET", "/v1/keys/:id/requests", false, s.withKey(s.keyRequests)},
		{"GET", "/v1/users", true, s.listUsers},
		{"POST", "/v1/users", true, s.inviteUser},
		{"PATCH", "/v1/users/:id", true, s.patchUser},
	} {
		r.Handle(rt.method, rt.path, s.authed(rt.admin, rt.h))
	}
}

// protect refuses cross-origin state-changing requests (by the browser's
// Sec-Fetch-Site and Origin headers) and sets the headers of every
// management answer.
func (s *Server) protect(h httprouter.Handle) httprouter.Handle {
	cop := http.NewCrossOriginProtection()
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if err := cop.Check(r); err != nil {
			s.writeError(w, r, screenshot.Errorf(screenshot.EFORBIDDEN, "cross-origin request refused"))
			return
		}
		h(w, r, p)
	}
}

// authed finds the caller and runs h: 401 without valid credentials, 403
// for a member on an admin endpoint or a state change without the CSRF
// token of its session.
func (s *Server) authed(admin bool, h handler) httprouter.Handle {
	return s.protect(func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		c, err := s.caller(r)
		if err == nil && admin && c.user.Role != account.RoleAdmin {
			err = screenshot.Errorf(screenshot.EFORBIDDEN, "only admins may do this")
		}
		if err == nil {
			err = h(w, r, c, p)
		}
		if err != nil {
			s.writeError(w, r, err)
		}
	})
}

func (s *Server) caller(r *http.Request) (*caller, error) {
	ctx := r.Context()
	if auth := r.Header.Get("Authorization"); auth != "" {
		token, ok := strings.CutPrefix(auth, "Bearer ")
		if !ok {
			return nil, screenshot.Errorf(screenshot.EUNAUTHENTICATED, "Authorization must be \"Bearer <personal access token>\"")
		}
		u, err := s.Accounts.TokenUser(ctx, strings.TrimSpace(token))
		if err != nil {
			return nil, err
		}
		return &caller{user: u}, nil
	}
	var token string
	if ck, err := r.Cookie(s.SessionCookie()); err == nil {
		token = ck.Value
	}
	u, se, err := s.Accounts.Session(ctx, token)
	if err != nil {
		return nil, err
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !s.Accounts.Secrets.CheckCSRF(se.Hash, r.Header.Get(CSRFHeader)) {
		return nil, screenshot.Errorf(screenshot.EFORBIDDEN, "missing or wrong %s header (the csrfToken of GET /v1/me)", CSRFHeader)
	}
	return &caller{user: u, session: se}, nil
}

// decode reads a JSON body strictly: a size limit, no unknown fields,
// errors that name the field.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return screenshot.Errorf(screenshot.EINVALID, "send a JSON body with Content-Type: application/json")
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("trailing data after the JSON object")
	}
	var tooLarge *http.MaxBytesError
	var typeErr *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &tooLarge):
		return screenshot.Errorf(screenshot.ETOOLARGE, "the body is larger than %d bytes", maxBody)
	case errors.As(err, &typeErr):
		return screenshot.Errorf(screenshot.EUNPROCESSABLE, "%s: must be %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return screenshot.Errorf(screenshot.EUNPROCESSABLE, "unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	case errors.Is(err, io.EOF):
		return screenshot.Errorf(screenshot.EINVALID, "the body is empty; send a JSON object")
	}
	return screenshot.Errorf(screenshot.EINVALID, "the body is not valid JSON")
}

func jsonKind(k string) string {
	switch k {
	case "int", "int64":
		return "an integer"
	case "bool":
		return "true or false"
	case "slice":
		return "an array"
	case "string":
		return "a string"
	}
	return "of another type"
}

// ClientAddr is the address the request came from (the connection's peer:
// forwarded headers are not trusted).
func ClientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// userJSON is a user as the API shows it.
type userJSON struct {
	ID           string     `json:"id"`
	Email        string     `json:"email"`
	Role         string     `json:"role"`
	Disabled     bool       `json:"disabled"`
	HasPassword  bool       `json:"hasPassword"`
	CreatedAt    time.Time  `json:"createdAt"`
	LastSignInAt *time.Time `json:"lastSignInAt"`
	CSRFToken    string     `json:"csrfToken,omitempty"`
}

func showUser(u *account.User) userJSON {
	return userJSON{ID: u.ID, Email: u.Email, Role: string(u.Role), Disabled: u.Disabled, HasPassword: u.PasswordHash != "",
		CreatedAt: u.CreatedAt, LastSignInAt: timePtr(u.LastSignInAt)}
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

type credentials struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

func (s *Server) signUp(w http.ResponseWriter, r *http.Request) error {
	var c credentials
	if err := decode(w, r, &c); err != nil {
		return err
	}
	u, token, err := s.Accounts.SignUp(r.Context(), c.Email, c.Password)
	if err != nil {
		return err
	}
	return s.startSession(w, http.StatusCreated, u, token)
}

func (s *Server) signIn(w http.ResponseWriter, r *http.Request) error {
	var c credentials
	if err := decode(w, r, &c); err != nil {
		return err
	}
	u, token, err := s.Accounts.SignIn(r.Context(), c.Email, c.Password, ClientAddr(r))
	if err != nil {
		return err
	}
	return s.startSession(w, http.StatusOK, u, token)
}

// startSession sets the session cookie and answers with the user and the
// session's CSRF token.
func (s *Server) startSession(w http.ResponseWriter, status int, u *account.User, token string) error {
	s.SetSessionCookie(w, token)
	body := showUser(u)
	body.CSRFToken = s.Accounts.Secrets.CSRFToken(account.HashToken(token))
	writeJSON(w, status, body)
	return nil
}

// SetSessionCookie sets (or, with an empty token, clears) the session cookie.
func (s *Server) SetSessionCookie(w http.ResponseWriter, token string) {
	account.SetSessionCookie(w, token, s.SecureCookies, s.Accounts.SessionTTL)
}

func (s *Server) signOut(w http.ResponseWriter, r *http.Request, c *caller, _ httprouter.Params) error {
	if c.session == nil {
		return screenshot.Errorf(screenshot.EINVALID, "an access token has no session; revoke it with DELETE /v1/tokens/{id}")
	}
	if err := s.Accounts.SignOut(r.Context(), c.session); err != nil {
		return err
	}
	s.SetSessionCookie(w, "")
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) signOutEverywhere(w http.ResponseWriter, r *http.Request, c *caller, _ httprouter.Params) error {
	if err := s.Accounts.Store.DeleteUserSessions(r.Context(), c.user.ID); err != nil {
		return err
	}
	s.SetSessionCookie(w, "")
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) me(w http.ResponseWriter, r *http.Request, c *caller, _ httprouter.Params) error {
	body := showUser(c.user)
	if c.session != nil {
		body.CSRFToken = s.Accounts.Secrets.CSRFToken(c.session.Hash)
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}

func (s *Server) changePassword(w http.ResponseWriter, r *http.Request, c *caller, _ httprouter.Params) error {
	var body struct {
		CurrentPassword string `json:"currentPassword"`
		NewPassword     string `json:"newPassword"`
	}
	if err := decode(w, r, &body); err != nil {
		return err
	}
	if err := s.Accounts.ChangePassword(r.Context(), c.user, body.CurrentPassword, body.NewPassword, c.session); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type tokenJSON struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	CreatedAt  time.Time  `json:"createdAt"`
	ExpiresAt  *time.Time `json:"expiresAt"`
	LastUsedAt *time.Time `json:"lastUsedAt"`
	Token      string     `json:"token,omitempty"`
}

func showToken(t *account.Token) tokenJSON {
	return tokenJSON{ID: t.ID, Name: t.Name, Prefix: t.Prefix, CreatedAt: t.CreatedAt, ExpiresAt: timePtr(t.ExpiresAt), LastUsedAt: timePtr(t.LastUsedAt)}
}

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request, c *caller, _ httprouter.Params) error {
	ts, err := s.Accounts.Store.ListTokens(r.Context(), c.user.ID)
	return writeList(w, "tokens", ts, err, showToken)
}

// writeList answers {name: [...]} with each item shown, or the error.
func writeList[T, J any](w http.ResponseWriter, name string, items []T, err error, show func(T) J) error {
	if err != nil {
		return err
	}
	out := make([]J, 0, len(items))
	for _, it := range items {
		out = append(out, show(it))
	}
	writeJSON(w, http.StatusOK, map[string]any{name: out})
	return nil
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request, c *caller, _ httprouter.Params) error {
	var body struct {
		Name      string     `json:"name"`
		ExpiresAt *time.Time `json:"expiresAt"`
	}
	if err := decode(w, r, &body); err != nil {
		return err
	}
	var exp time.Time
	if body.ExpiresAt != nil {
		exp = *body.ExpiresAt
	}
	secret, t, err := s.Accounts.CreateToken(r.Context(), c.user, body.Name, exp)
	if err != nil {
		return err
	}
	out := showToken(t)
	out.Token = secret
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) deleteToken(w http.ResponseWriter, r *http.Request, c *caller, p httprouter.Params) error {
	if err := s.Accounts.Store.DeleteToken(r.Context(), c.user.ID, p.ByName("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// keyJSON is a key as the API shows it: never its secret's hash.
type keyJSON struct {
	ID               string     `json:"id"`
	Name             string     `json:"name"`
	Prefix           string     `json:"prefix"`
	Plan             string     `json:"plan"`
	Domains          []string   `json:"domains"`
	RateLimit        int        `json:"rateLimit"`
	MonthlyQuota     int        `json:"monthlyQuota"`
	RequireSignature bool       `json:"requireSignature"`
	Owner            *string    `json:"owner"`
	Status           string     `json:"status"`
	CreatedAt        time.Time  `json:"createdAt"`
	RevokedAt        *time.Time `json:"revokedAt"`
	Usage            *keyUsage  `json:"usage,omitempty"`
	Key              string     `json:"key,omitempty"`
	SigningSecret    string     `json:"signingSecret,omitempty"`
	PreviousKeyUntil *time.Time `json:"previousKeyValidUntil,omitempty"`
}

// keyUsage is this month's use against the key's figures.
type keyUsage struct {
	Period    string `json:"period"`
	Used      int    `json:"used"`
	Quota     int    `json:"quota"` // 0: unlimited
	RateLimit int    `json:"rateLimit"`
}

func (s *Server) showKey(ctx context.Context, k *screenshot.Key) keyJSON {
	out := keyJSON{ID: k.ID, Name: k.Name, Prefix: k.Prefix, Plan: string(k.Plan), Domains: k.Domains, RateLimit: k.RateLimit,
		MonthlyQuota: k.MonthlyQuota, RequireSignature: k.RequireSignature, Status: "active", CreatedAt: k.CreatedAt, RevokedAt: timePtr(k.RevokedAt)}
	if out.Domains == nil {
		out.Domains = []string{}
	}
	if k.OwnerID != "" {
		out.Owner = &k.OwnerID
	}
	if k.Revoked() {
		out.Status = "revoked"
	}
	if k.PreviousHash != "" && time.Now().Before(k.PreviousExpires) {
		out.PreviousKeyUntil = &k.PreviousExpires
	}
	limits := s.Plans.For(k)
	period, _ := screenshot.PeriodOf(time.Now())
	u := &keyUsage{Period: period, Quota: limits.Quota, RateLimit: limits.Rate}
	if s.Quota != nil {
		u.Used, _ = s.Quota.Usage(ctx, k.ID, period)
	}
	out.Usage = u
	return out
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request, c *caller, _ httprouter.Params) error {
	keys, err := s.Keys.ListKeys(r.Context())
	if err != nil {
		return err
	}
	out := []keyJSON{}
	for _, k := range keys {
		if account.CanSee(c.user, k) {
			out = append(out, s.showKey(r.Context(), k))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"keys": out})
	return nil
}

// keyBody is a key's fields in a create or update request; nil is absent.
type keyBody struct {
	Name             *string   `json:"name"`
	Domains          *[]string `json:"domains"`
	RequireSignature *bool     `json:"requireSignature"`
	Plan             *string   `json:"plan"`
	RateLimit        *int      `json:"rateLimit"`
	MonthlyQuota     *int      `json:"monthlyQuota"`
	Owner            *string   `json:"owner"`
}

// adminFields refuses what only admins may set.
func (b *keyBody) adminFields(u *account.User) error {
	if u.Role == account.RoleAdmin {
		return nil
	}
	for name, set := range map[string]bool{"plan": b.Plan != nil, "rateLimit": b.RateLimit != nil, "monthlyQuota": b.MonthlyQuota != nil, "owner": b.Owner != nil} {
		if set {
			return screenshot.Errorf(screenshot.EFORBIDDEN, "%s: only admins may set it", name)
		}
	}
	return nil
}

// update is the body as a key change, validated.
func (s *Server) update(ctx context.Context, b *keyBody) (screenshot.KeyUpdate, error) {
	u := screenshot.KeyUpdate{Name: b.Name, Domains: b.Domains, RequireSignature: b.RequireSignature, RateLimit: b.RateLimit, MonthlyQuota: b.MonthlyQuota}
	if b.Name != nil && len(*b.Name) > 100 {
		return u, screenshot.Errorf(screenshot.EUNPROCESSABLE, "name: at most 100 characters")
	}
	if b.Domains != nil {
		if err := account.CheckDomains(*b.Domains); err != nil {
			return u, err
		}
	}
	if b.Plan != nil {
		p, err := screenshot.ParsePlan(*b.Plan)
		if err != nil {
			return u, screenshot.Errorf(screenshot.EUNPROCESSABLE, "plan: must be free, pro or enterprise")
		}
		u.Plan = &p
	}
	for name, v := range map[string]*int{"rateLimit": b.RateLimit, "monthlyQuota": b.MonthlyQuota} {
		if v != nil && *v < 0 {
			return u, screenshot.Errorf(screenshot.EUNPROCESSABLE, "%s: must not be negative", name)
		}
	}
	if b.Owner != nil {
		if *b.Owner != "" {
			if _, err := s.Accounts.Store.UserByID(ctx, *b.Owner); err != nil {
				return u, screenshot.Errorf(screenshot.EUNPROCESSABLE, "owner: no such user")
			}
		}
		u.OwnerID = b.Owner
	}
	return u, nil
}

func (s *Server) createKey(w http.ResponseWriter, r *http.Request, c *caller, _ httprouter.Params) error {
	var b keyBody
	if err := decode(w, r, &b); err != nil {
		return err
	}
	if err := b.adminFields(c.user); err != nil {
		return err
	}
	u, err := s.update(r.Context(), &b)
	if err != nil {
		return err
	}
	k := &screenshot.Key{Plan: screenshot.PlanFree, OwnerID: c.user.ID}
	u.Apply(k)
	created, err := s.Accounts.CreateKey(r.Context(), account.NewKey{Name: k.Name, Plan: k.Plan, Domains: k.Domains, RateLimit: k.RateLimit,
		MonthlyQuota: k.MonthlyQuota, RequireSignature: k.RequireSignature, OwnerID: k.OwnerID})
	if err != nil {
		return err
	}
	out := s.showKey(r.Context(), created.Key)
	out.Key, out.SigningSecret = created.Secret, created.SigningSecret
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) getKey(w http.ResponseWriter, r *http.Request, c *caller, k *screenshot.Key) error {
	writeJSON(w, http.StatusOK, s.showKey(r.Context(), k))
	return nil
}

func (s *Server) patchKey(w http.ResponseWriter, r *http.Request, c *caller, k *screenshot.Key) error {
	var b keyBody
	if err := decode(w, r, &b); err != nil {
		return err
	}
	if err := b.adminFields(c.user); err != nil {
		return err
	}
	u, err := s.update(r.Context(), &b)
	if err != nil {
		return err
	}
	if k.Revoked() {
		return screenshot.Errorf(screenshot.ECONFLICT, "the key is revoked")
	}
	if err := s.Keys.UpdateKey(r.Context(), k.ID, u); err != nil {
		return err
	}
	if k, err = s.Keys.KeyByID(r.Context(), k.ID); err != nil {
		return err
	}
	return s.getKey(w, r, c, k)
}

func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request, c *caller, k *screenshot.Key) error {
	if err := s.Keys.RevokeKey(r.Context(), k.ID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) rotateKey(w http.ResponseWriter, r *http.Request, c *caller, k *screenshot.Key) error {
	if k.Revoked() {
		return screenshot.Errorf(screenshot.ECONFLICT, "the key is revoked")
	}
	secret, until, err := s.Accounts.RotateKey(r.Context(), k)
	if err != nil {
		return err
	}
	if k, err = s.Keys.KeyByID(r.Context(), k.ID); err != nil {
		return err
	}
	out := s.showKey(r.Context(), k)
	out.Key, out.PreviousKeyUntil = secret, &until
	writeJSON(w, http.StatusOK, out)
	return nil
}

// signing answers a key's signing secret: revealed, or made anew.
func (s *Server) signing(get func(ctx context.Context, k *screenshot.Key) (string, error)) keyHandler {
	return func(w http.ResponseWriter, r *http.Request, _ *caller, k *screenshot.Key) error {
		secret, err := get(r.Context(), k)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]string{"signingSecret": secret})
		return nil
	}
}

// keyUsage answers the daily series of a key, every day of the range
// present (zero when nothing happened).
func (s *Server) keyUsage(w http.ResponseWriter, r *http.Request, c *caller, k *screenshot.Key) error {
	from, to, err := dateRange(r)
	if err != nil {
		return err
	}
	stored, err := s.Accounts.Store.UsageDays(r.Context(), k.ID, from.Format(time.DateOnly), to.Format(time.DateOnly))
	if err != nil {
		return err
	}
	byDate := map[string]account.Day{}
	for _, d := range stored {
		byDate[d.Date] = d
	}
	days := []account.Day{}
	for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
		date := d.Format(time.DateOnly)
		day, ok := byDate[date]
		if !ok {
			day = account.Day{Date: date}
		}
		days = append(days, day)
	}
	writeJSON(w, http.StatusOK, map[string]any{"keyId": k.ID, "from": from.Format(time.DateOnly), "to": to.Format(time.DateOnly), "days": days})
	return nil
}

// dateRange reads from and to (UTC dates, inclusive); the default is the
// last 30 days, the longest range 366 days.
func dateRange(r *http.Request) (from, to time.Time, err error) {
	q := r.URL.Query()
	today := time.Now().UTC().Truncate(24 * time.Hour)
	to, from = today, today.AddDate(0, 0, -29)
	for name, dst := range map[string]*time.Time{"from": &from, "to": &to} {
		if v := q.Get(name); v != "" {
			t, err := time.Parse(time.DateOnly, v)
			if err != nil {
				return from, to, screenshot.Errorf(screenshot.EINVALID, "%s: want a date as YYYY-MM-DD", name)
			}
			*dst = t
		}
	}
	if from.After(to) {
		return from, to, screenshot.Errorf(screenshot.EINVALID, "from is after to")
	}
	if to.Sub(from) > 366*24*time.Hour {
		return from, to, screenshot.Errorf(screenshot.EINVALID, "the range is longer than 366 days")
	}
	return from, to, nil
}

func (s *Server) keyRequests(w http.ResponseWriter, r *http.Request, c *caller, k *screenshot.Key) error {
	q := r.URL.Query()
	limit, status := 50, 0
	for name, dst := range map[string]*int{"limit": &limit, "status": &status} {
		if v := q.Get(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || name == "limit" && (n < 1 || n > 1000) || name == "status" && n != 0 && (n < 100 || n > 599) {
				return screenshot.Errorf(screenshot.EINVALID, "%s: want %s", name, map[string]string{"limit": "1 to 1000", "status": "an HTTP status"}[name])
			}
			*dst = n
		}
	}
	reqs, err := s.Accounts.Store.Requests(r.Context(), k.ID, limit, status)
	if err != nil {
		return err
	}
	if reqs == nil {
		reqs = []account.Request{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"keyId": k.ID, "requests": reqs})
	return nil
}

func (s *Server) listUsers(w http.ResponseWriter, r *http.Request, c *caller, _ httprouter.Params) error {
	us, err := s.Accounts.Store.ListUsers(r.Context())
	return writeList(w, "users", us, err, showUser)
}

// inviteUser makes an account without a password: its owner sets one by
// signing up with that email (under SIGNUP=invite or open), or signs in
// through the identity provider.
func (s *Server) inviteUser(w http.ResponseWriter, r *http.Request, c *caller, _ httprouter.Params) error {
	var body struct {
		Email string `json:"email"`
		Role  string `json:"role"`
	}
	if err := decode(w, r, &body); err != nil {
		return err
	}
	role, err := account.ParseRole(body.Role, account.RoleMember)
	if err != nil {
		return err
	}
	u, err := s.Accounts.Invite(r.Context(), body.Email, role)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, showUser(u))
	return nil
}

func (s *Server) patchUser(w http.ResponseWriter, r *http.Request, c *caller, p httprouter.Params) error {
	var body struct {
		Role     *string `json:"role"`
		Disabled *bool   `json:"disabled"`
	}
	if err := decode(w, r, &body); err != nil {
		return err
	}
	id := p.ByName("id")
	var u account.UserUpdate
	if body.Role != nil {
		role, err := account.ParseRole(*body.Role, "")
		if err != nil {
			return err
		}
		u.Role = &role
	}
	u.Disabled = body.Disabled
	if err := s.Accounts.ChangeUser(r.Context(), c.user, id, u); err != nil {
		return err
	}
	got, err := s.Accounts.Store.UserByID(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, showUser(got))
	return nil
}

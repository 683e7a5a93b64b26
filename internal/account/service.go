package account

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/shutterhq/shutter/internal/screenshot"
)

// Signup is who may create an account.
type Signup string

const (
	SignupClosed Signup = "closed" // only the first user; the rest are made by admins or the shell
	SignupInvite Signup = "invite" // emails an admin invited
	SignupOpen   Signup = "open"   // anyone
)

// Service is the account rules over the stores.
type Service struct {
	Store   Store
	Keys    screenshot.KeyStore
	Secrets *Secrets
	Signup  Signup
	// SessionTTL is the sliding lifetime of a session.
	SessionTTL time.Duration
	// RotationGrace is how long a key's old secret works after a rotation.
	RotationGrace time.Duration
	// KeyPrefix and NodeEnv shape new key secrets.
	KeyPrefix, NodeEnv string
	// Limiter slows sign-in attempts per email and per client address; nil
	// does not.
	Limiter screenshot.Limiter
}

// Sign-in attempts allowed per window: per email (a targeted guess) and per
// client address (a spray over many emails).
const (
	SignInWindow   = 15 * time.Minute
	SignInPerEmail = 10
	SignInPerAddr  = 50
)

func unprocessable(field, format string, args ...any) error {
	return screenshot.Errorf(screenshot.EUNPROCESSABLE, "%s: %s", field, fmt.Sprintf(format, args...))
}

// SignUp creates an account, or sets the password of an invited one. The
// first user of an instance can always sign up and becomes an admin.
func (s *Service) SignUp(ctx context.Context, email, password string) (*User, string, error) {
	email = NormalizeEmail(email)
	if !ValidEmail(email) {
		return nil, "", unprocessable("email", "not an email address")
	}
	if err := CheckPassword(password); err != nil {
		return nil, "", unprocessable("password", "%v", err)
	}
	n, err := s.Store.CountUsers(ctx)
	if err != nil {
		return nil, "", err
	}
	existing, err := s.Store.UserByEmail(ctx, email)
	switch {
	case err == nil && existing.PasswordHash == "" && !existing.Disabled && s.Signup != SignupClosed:
		// An invited user sets a password.
		hash := HashPassword(password)
		if err := s.Store.UpdateUser(ctx, existing.ID, UserUpdate{PasswordHash: &hash}); err != nil {
			return nil, "", err
		}
		return s.startSession(ctx, existing)
	case err == nil:
		return nil, "", screenshot.Errorf(screenshot.ECONFLICT, "an account with this email exists; sign in instead")
	case screenshot.ErrorCode(err) != screenshot.ENOTFOUND:
		return nil, "", err
	case n > 0 && s.Signup != SignupOpen:
		return nil, "", screenshot.Errorf(screenshot.EFORBIDDEN, "sign-up is %s on this instance; ask an admin for an account", s.Signup)
	}
	u := &User{ID: NewID("usr"), Email: email, PasswordHash: HashPassword(password), Role: RoleMember, CreatedAt: time.Now().UTC()}
	if n == 0 {
		u.Role = RoleAdmin
	}
	if err := s.Store.CreateUser(ctx, u); err != nil {
		return nil, "", err
	}
	return s.startSession(ctx, u)
}

// errSignIn is the one answer to every failed sign-in.
var errSignIn = screenshot.Errorf(screenshot.EUNAUTHENTICATED, "wrong email or password")

// SignIn checks a password and starts a session. An unknown email, a wrong
// password and a disabled user get the same answer after the same work.
func (s *Service) SignIn(ctx context.Context, email, password, clientAddr string) (*User, string, error) {
	email = NormalizeEmail(email)
	if err := s.slowDown(ctx, email, clientAddr); err != nil {
		return nil, "", err
	}
	u, err := s.Store.UserByEmail(ctx, email)
	if err != nil && screenshot.ErrorCode(err) != screenshot.ENOTFOUND {
		return nil, "", err
	}
	hash := ""
	if u != nil {
		hash = u.PasswordHash
	}
	if !VerifyPassword(hash, password) || u == nil || u.Disabled {
		return nil, "", errSignIn
	}
	return s.startSession(ctx, u)
}

// slowDown counts a sign-in attempt against the email and the address.
func (s *Service) slowDown(ctx context.Context, email, addr string) error {
	if s.Limiter == nil {
		return nil
	}
	for _, c := range []struct {
		id    string
		limit int
	}{{"signin:email:" + email, SignInPerEmail}, {"signin:addr:" + addr, SignInPerAddr}} {
		st, err := s.Limiter.Allow(ctx, c.id, c.limit, SignInWindow)
		if err != nil {
			return &screenshot.Error{Code: screenshot.EUNAVAILABLE, Message: "sign-in is unavailable; try again shortly", RetryAfter: time.Second, Err: err}
		}
		if !st.Allowed {
			return &screenshot.Error{Code: screenshot.ERATELIMIT, RetryAfter: max(time.Until(st.Reset), time.Second),
				Message: "too many sign-in attempts; try again later"}
		}
	}
	return nil
}

// startSession records a session and returns its token (the cookie value).
func (s *Service) startSession(ctx context.Context, u *User) (*User, string, error) {
	token := "shs_" + randomHex(32)
	now := time.Now().UTC()
	if err := s.Store.CreateSession(ctx, &Session{Hash: HashToken(token), UserID: u.ID, CreatedAt: now, ExpiresAt: now.Add(s.SessionTTL)}); err != nil {
		return nil, "", err
	}
	_ = s.Store.UpdateUser(ctx, u.ID, UserUpdate{LastSignInAt: &now})
	u.LastSignInAt = now
	return u, token, nil
}

// SignInUser starts a session for a user already identified (by the
// identity provider).
func (s *Service) SignInUser(ctx context.Context, u *User) (string, error) {
	_, token, err := s.startSession(ctx, u)
	return token, err
}

var errNoSession = screenshot.Errorf(screenshot.EUNAUTHENTICATED, "sign in first: no valid session or access token")

// Session returns the user of a session token and extends the session
// (sliding expiry; written at most once an hour).
func (s *Service) Session(ctx context.Context, token string) (*User, *Session, error) {
	if token == "" {
		return nil, nil, errNoSession
	}
	se, err := s.Store.SessionByHash(ctx, HashToken(token))
	if err != nil {
		return nil, nil, orUnauthenticated(err)
	}
	u, err := s.Store.UserByID(ctx, se.UserID)
	if err != nil || u.Disabled {
		return nil, nil, orUnauthenticated(err)
	}
	if now := time.Now(); se.ExpiresAt.Sub(now) < s.SessionTTL-time.Hour {
		se.ExpiresAt = now.Add(s.SessionTTL).UTC()
		_ = s.Store.ExtendSession(ctx, se.Hash, se.ExpiresAt)
	}
	return u, se, nil
}

// orUnauthenticated maps "not found" (and nil: a disabled user) to the
// 401 of a missing session; store failures stay what they are.
func orUnauthenticated(err error) error {
	if err == nil || screenshot.ErrorCode(err) == screenshot.ENOTFOUND {
		return errNoSession
	}
	return err
}

// SignOut ends one session.
func (s *Service) SignOut(ctx context.Context, se *Session) error {
	return s.Store.DeleteSession(ctx, se.Hash)
}

// ChangePassword checks the current password, sets the new one and ends
// every other session of the user.
func (s *Service) ChangePassword(ctx context.Context, u *User, current, next string, keep *Session) error {
	if u.PasswordHash != "" && !VerifyPassword(u.PasswordHash, current) {
		return unprocessable("currentPassword", "does not match")
	}
	if err := CheckPassword(next); err != nil {
		return unprocessable("newPassword", "%v", err)
	}
	hash := HashPassword(next)
	if err := s.Store.UpdateUser(ctx, u.ID, UserUpdate{PasswordHash: &hash}); err != nil {
		return err
	}
	if err := s.Store.DeleteUserSessions(ctx, u.ID); err != nil {
		return err
	}
	if keep != nil {
		return s.Store.CreateSession(ctx, keep)
	}
	return nil
}

// TokenUser returns the user of a personal access token.
func (s *Service) TokenUser(ctx context.Context, secret string) (*User, error) {
	t, err := s.Store.TokenByHash(ctx, HashToken(secret))
	if err != nil {
		return nil, orUnauthenticated(err)
	}
	now := time.Now()
	if t.Expired(now) {
		return nil, screenshot.Errorf(screenshot.EUNAUTHENTICATED, "this access token has expired")
	}
	u, err := s.Store.UserByID(ctx, t.UserID)
	if err != nil || u.Disabled {
		return nil, orUnauthenticated(err)
	}
	if now.Sub(t.LastUsedAt) > time.Minute {
		_ = s.Store.TouchToken(ctx, t.ID, now.UTC())
	}
	return u, nil
}

// CreateToken makes a personal access token; the secret is returned once.
func (s *Service) CreateToken(ctx context.Context, u *User, name string, expires time.Time) (string, *Token, error) {
	if len(name) > 100 {
		return "", nil, unprocessable("name", "at most 100 characters")
	}
	if !expires.IsZero() && !expires.After(time.Now()) {
		return "", nil, unprocessable("expiresAt", "must be in the future")
	}
	secret := "shp_" + randomHex(32)
	t := &Token{ID: NewID("tok"), UserID: u.ID, Name: name, Prefix: secret[:8] + "…", Hash: HashToken(secret),
		CreatedAt: time.Now().UTC(), ExpiresAt: expires.UTC()}
	if expires.IsZero() {
		t.ExpiresAt = time.Time{}
	}
	if err := s.Store.CreateToken(ctx, t); err != nil {
		return "", nil, err
	}
	return secret, t, nil
}

// NewKey is what a new key is made of.
type NewKey struct {
	Name             string
	Plan             screenshot.Plan
	Domains          []string
	RateLimit        int
	MonthlyQuota     int
	RequireSignature bool
	OwnerID          string
}

// Created is a new key with its secrets, which exist only in this answer.
type Created struct {
	Key           *screenshot.Key
	Secret        string
	SigningSecret string
}

// CheckDomains validates a key's allowed domains, naming the bad entry.
func CheckDomains(domains []string) error {
	if len(domains) > 100 {
		return unprocessable("domains", "at most 100 entries")
	}
	for i, d := range domains {
		if err := screenshot.ValidDomain(d); err != nil {
			return unprocessable(fmt.Sprintf("domains[%d]", i), "%v", err)
		}
	}
	return nil
}

// CreateKey makes a key with a signing secret.
func (s *Service) CreateKey(ctx context.Context, n NewKey) (*Created, error) {
	if n.Plan == "" {
		n.Plan = screenshot.PlanFree
	}
	if len(n.Name) > 100 {
		return nil, unprocessable("name", "at most 100 characters")
	}
	if err := CheckDomains(n.Domains); err != nil {
		return nil, err
	}
	if n.RateLimit < 0 || n.MonthlyQuota < 0 {
		return nil, unprocessable("rateLimit", "rateLimit and monthlyQuota must not be negative")
	}
	secret := screenshot.NewSecret(s.KeyPrefix, s.NodeEnv)
	signing := NewSigningSecret()
	k := &screenshot.Key{
		ID: screenshot.NewKeyID(), Name: n.Name, Prefix: screenshot.DisplayPrefix(secret), Hash: screenshot.HashSecret(secret),
		Plan: n.Plan, Domains: lower(n.Domains), RateLimit: n.RateLimit, MonthlyQuota: n.MonthlyQuota, CreatedAt: time.Now().UTC(),
		OwnerID: n.OwnerID, RequireSignature: n.RequireSignature, SigningSecret: s.Secrets.Seal(signing),
	}
	if err := s.Keys.CreateKey(ctx, k); err != nil {
		return nil, err
	}
	return &Created{Key: k, Secret: secret, SigningSecret: signing}, nil
}

func lower(ds []string) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = strings.ToLower(strings.TrimSpace(d))
	}
	return out
}

// RotateKey gives a key a new secret; the old one works for RotationGrace.
func (s *Service) RotateKey(ctx context.Context, k *screenshot.Key) (string, time.Time, error) {
	secret := screenshot.NewSecret(s.KeyPrefix, s.NodeEnv)
	grace := time.Now().Add(s.RotationGrace).UTC()
	if err := s.Keys.RotateKey(ctx, k.ID, screenshot.HashSecret(secret), screenshot.DisplayPrefix(secret), grace); err != nil {
		return "", time.Time{}, err
	}
	return secret, grace, nil
}

// SigningSecret opens a key's signing secret, making one for a key that
// has none (made before signing existed) and resealing one sealed under the
// previous AUTH_SECRET.
func (s *Service) SigningSecret(ctx context.Context, k *screenshot.Key) (string, error) {
	if k.SigningSecret == "" {
		return s.RotateSigningSecret(ctx, k)
	}
	plain, stale, err := s.Secrets.Open(k.SigningSecret)
	if err != nil {
		return "", err
	}
	if stale {
		sealed := s.Secrets.Seal(plain)
		_ = s.Keys.UpdateKey(ctx, k.ID, screenshot.KeyUpdate{SigningSecret: &sealed})
	}
	return plain, nil
}

// RotateSigningSecret replaces a key's signing secret at once: URLs signed
// with the old one stop working.
func (s *Service) RotateSigningSecret(ctx context.Context, k *screenshot.Key) (string, error) {
	plain := NewSigningSecret()
	sealed := s.Secrets.Seal(plain)
	if err := s.Keys.UpdateKey(ctx, k.ID, screenshot.KeyUpdate{SigningSecret: &sealed}); err != nil {
		return "", err
	}
	k.SigningSecret = sealed
	return plain, nil
}

// Visible returns the key if u may see it; another user's key is "not
// found", never "forbidden", so that its existence is not revealed.
func (s *Service) Visible(ctx context.Context, u *User, id string) (*screenshot.Key, error) {
	k, err := s.Keys.KeyByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if !CanSee(u, k) {
		return nil, screenshot.Errorf(screenshot.ENOTFOUND, "no key with id %s", id)
	}
	return k, nil
}

// SignInExternal signs in the user whose email the identity provider
// verified, creating the account when the sign-up policy allows (the first
// user, or SIGNUP=open; under invite, an invited account exists already).
func (s *Service) SignInExternal(ctx context.Context, email string) (*User, string, error) {
	u, err := s.Store.UserByEmail(ctx, email)
	switch {
	case err == nil && u.Disabled:
		return nil, "", screenshot.Errorf(screenshot.EFORBIDDEN, "this account is disabled")
	case err == nil:
		return s.startSession(ctx, u)
	case screenshot.ErrorCode(err) != screenshot.ENOTFOUND:
		return nil, "", err
	}
	n, err := s.Store.CountUsers(ctx)
	if err != nil {
		return nil, "", err
	}
	if n > 0 && s.Signup != SignupOpen {
		return nil, "", screenshot.Errorf(screenshot.EFORBIDDEN, "there is no account for %s on this instance; ask an admin for an invitation", email)
	}
	u = &User{ID: NewID("usr"), Email: email, Role: RoleMember, CreatedAt: time.Now().UTC()}
	if n == 0 {
		u.Role = RoleAdmin
	}
	if err := s.Store.CreateUser(ctx, u); err != nil {
		return nil, "", err
	}
	return s.startSession(ctx, u)
}

// ParseRole reads a role; "" is def (and an error when def is "").
func ParseRole(s string, def Role) (Role, error) {
	r := Role(s)
	if r == "" {
		r = def
	}
	if r != RoleAdmin && r != RoleMember {
		return "", unprocessable("role", "must be admin or member")
	}
	return r, nil
}

// Invite makes an account without a password: its owner sets one by
// signing up with that email (under SIGNUP=invite or open), or signs in
// through the identity provider.
func (s *Service) Invite(ctx context.Context, email string, role Role) (*User, error) {
	email = NormalizeEmail(email)
	if !ValidEmail(email) {
		return nil, unprocessable("email", "not an email address")
	}
	u := &User{ID: NewID("usr"), Email: email, Role: role, CreatedAt: time.Now().UTC()}
	if err := s.Store.CreateUser(ctx, u); err != nil {
		return nil, err
	}
	return u, nil
}

// ChangeUser is an admin's change to a user: nobody demotes or disables
// themselves (another admin can), and disabling ends the user's sessions.
func (s *Service) ChangeUser(ctx context.Context, by *User, id string, u UserUpdate) error {
	if id == by.ID && (u.Role != nil && *u.Role != RoleAdmin || u.Disabled != nil && *u.Disabled) {
		return screenshot.Errorf(screenshot.ECONFLICT, "you cannot demote or disable yourself; another admin can")
	}
	if err := s.Store.UpdateUser(ctx, id, u); err != nil {
		return err
	}
	if u.Disabled != nil && *u.Disabled {
		return s.Store.DeleteUserSessions(ctx, id)
	}
	return nil
}

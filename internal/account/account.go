// Package account is the account layer around API keys: users and their
// sessions, personal access tokens, and the usage history of every key. It
// holds the domain types, the store interface both SQL backends implement,
// and the rules (who may see what, how secrets are derived and sealed).
package account

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"github.com/shutterhq/shutter/internal/screenshot"
)

// Role is what a user may do: admins manage every key and user, members
// their own keys.
type Role string

const (
	RoleAdmin  Role = "admin"
	RoleMember Role = "member"
)

// User is a person who signs in.
type User struct {
	ID    string
	Email string // lower case; unique
	// PasswordHash is an argon2id hash in PHC form; "" for a user who has
	// none yet (invited, or signing in only through the identity provider).
	PasswordHash string
	Role         Role
	Disabled     bool
	CreatedAt    time.Time
	LastSignInAt time.Time
}

// UserUpdate changes the fields that are set.
type UserUpdate struct {
	Role         *Role
	Disabled     *bool
	PasswordHash *string
	LastSignInAt *time.Time
}

// Session is a signed-in browser. Only the hash of its token is stored.
type Session struct {
	Hash      string
	UserID    string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// Token is a personal access token for the management API. Only its hash
// is stored.
type Token struct {
	ID         string
	UserID     string
	Name       string
	Prefix     string
	Hash       string
	CreatedAt  time.Time
	ExpiresAt  time.Time // zero: never
	LastUsedAt time.Time
}

// Expired reports whether the token has passed its expiry.
func (t *Token) Expired(now time.Time) bool { return !t.ExpiresAt.IsZero() && !now.Before(t.ExpiresAt) }

// Day is one key's usage on one UTC day. Added to the stored day, not
// replacing it.
type Day struct {
	KeyID     string `json:"-"`
	Date      string `json:"date"` // 2006-01-02
	Succeeded int64  `json:"rendersSucceeded"`
	Failed    int64  `json:"rendersFailed"`
	CacheHits int64  `json:"cacheHits"`
	Refused   int64  `json:"refusals"`
	Bytes     int64  `json:"bytesServed"`
}

// Request is one entry of a key's recent-requests log. It never holds the
// query, headers, cookies or the key.
type Request struct {
	KeyID      string    `json:"-"`
	At         time.Time `json:"time"`
	Status     int       `json:"status"`
	DurationMS int64     `json:"durationMs"`
	Host       string    `json:"targetHost"`
	Format     string    `json:"format"`
	Cached     bool      `json:"cached"`
	RequestID  string    `json:"requestId"`
}

// Store keeps users, sessions, tokens and usage history.
type Store interface {
	// CreateUser stores a user; ECONFLICT when the email is taken.
	CreateUser(ctx context.Context, u *User) error
	UserByID(ctx context.Context, id string) (*User, error)
	UserByEmail(ctx context.Context, email string) (*User, error)
	ListUsers(ctx context.Context) ([]*User, error)
	CountUsers(ctx context.Context) (int, error)
	UpdateUser(ctx context.Context, id string, u UserUpdate) error

	CreateSession(ctx context.Context, s *Session) error
	SessionByHash(ctx context.Context, hash string) (*Session, error)
	// ExtendSession moves a session's expiry.
	ExtendSession(ctx context.Context, hash string, expires time.Time) error
	DeleteSession(ctx context.Context, hash string) error
	DeleteUserSessions(ctx context.Context, userID string) error

	CreateToken(ctx context.Context, t *Token) error
	TokenByHash(ctx context.Context, hash string) (*Token, error)
	ListTokens(ctx context.Context, userID string) ([]*Token, error)
	// DeleteToken deletes one of the user's tokens; ENOTFOUND otherwise.
	DeleteToken(ctx context.Context, userID, id string) error
	TouchToken(ctx context.Context, id string, at time.Time) error

	// AddUsage adds each day's counts to what is stored.
	AddUsage(ctx context.Context, days []Day) error
	// UsageDays returns the stored days of a key from..to (inclusive dates).
	UsageDays(ctx context.Context, keyID, from, to string) ([]Day, error)
	// AddRequests appends to the log and keeps at most perKey entries of
	// each key involved.
	AddRequests(ctx context.Context, reqs []Request, perKey int) error
	// Requests returns a key's newest entries; status 0 means any.
	Requests(ctx context.Context, keyID string, limit, status int) ([]Request, error)
	// PruneRequests deletes entries older than before.
	PruneRequests(ctx context.Context, before time.Time) error
}

// NormalizeEmail is the stored form of an email: trimmed and lower case.
func NormalizeEmail(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// ValidEmail checks an email address loosely: one @ with something on each
// side and a dot in the domain. Delivery proves the rest.
func ValidEmail(s string) bool {
	local, domain, ok := strings.Cut(s, "@")
	return ok && local != "" && len(s) <= 254 && strings.Contains(domain, ".") &&
		!strings.ContainsAny(s, " \t\r\n<>,;\"") && !strings.Contains(domain, "@") &&
		!strings.HasPrefix(domain, ".") && !strings.HasSuffix(domain, ".")
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// NewID returns a record id with a kind prefix ("usr", "tok").
func NewID(kind string) string { return kind + "_" + randomHex(8) }

// HashToken is the stored form of a session or access token (256 random
// bits: a fast hash suffices).
func HashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// NewSigningSecret returns a key's new signing secret: 256 random bits, in
// hex behind a prefix that says what it is.
func NewSigningSecret() string { return "sig_" + randomHex(32) }

// CanSee reports whether u may see and manage key k: admins every key,
// members their own.
func CanSee(u *User, k *screenshot.Key) bool {
	return u.Role == RoleAdmin || k.OwnerID != "" && k.OwnerID == u.ID
}

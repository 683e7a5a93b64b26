package screenshot

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"strings"
	"time"
)

// Plan is a key's plan.
type Plan string

const (
	PlanFree       Plan = "free"
	PlanPro        Plan = "pro"
	PlanEnterprise Plan = "enterprise"
)

// ParsePlan checks a plan name.
func ParsePlan(s string) (Plan, error) {
	switch p := Plan(strings.ToLower(s)); p {
	case PlanFree, PlanPro, PlanEnterprise:
		return p, nil
	}
	return "", Errorf(EINVALID, "plan must be free, pro or enterprise, got %q", s)
}

// Key is an API key's record. The secret itself is never stored: only its
// hash, and a short prefix that lets people tell keys apart.
type Key struct {
	ID           string
	Name         string
	Prefix       string // the first characters of the secret, for display
	Hash         string // hex SHA-256 of the secret
	Plan         Plan
	Domains      []string
	RateLimit    int // requests per window; 0 means the plan's figure
	MonthlyQuota int // screenshots per month; 0 means the plan's figure
	CreatedAt    time.Time
	RevokedAt    time.Time // zero while the key is valid

	// OwnerID is the user the key belongs to; "" for keys made on the
	// command line, which only admins see.
	OwnerID string
	// RequireSignature refuses requests without a valid signature.
	RequireSignature bool
	// SigningSecret is the sealed (encrypted) signing secret; only the
	// account secrets open it.
	SigningSecret string
	// PreviousHash authenticates the secret before the last rotation until
	// PreviousExpires.
	PreviousHash    string
	PreviousExpires time.Time
}

// Revoked reports whether the key was revoked.
func (k *Key) Revoked() bool { return !k.RevokedAt.IsZero() }

// KeyStore keeps API keys.
type KeyStore interface {
	CreateKey(ctx context.Context, k *Key) error
	// KeyByHash returns the key with that hash, or an ENOTFOUND error.
	KeyByHash(ctx context.Context, hash string) (*Key, error)
	ListKeys(ctx context.Context) ([]*Key, error)
	// RevokeKey marks the key revoked; ENOTFOUND when there is no such key.
	RevokeKey(ctx context.Context, id string) error
	// UpdateKey changes the fields of u that are set; ENOTFOUND when there is
	// no such key.
	UpdateKey(ctx context.Context, id string, u KeyUpdate) error
	// KeyByID returns one key, or an ENOTFOUND error.
	KeyByID(ctx context.Context, id string) (*Key, error)
	// RotateKey gives the key a new secret; the old one keeps working until
	// grace ends.
	RotateKey(ctx context.Context, id, hash, prefix string, grace time.Time) error
}

// KeyUpdate is a change to a key; nil fields stay as they are.
type KeyUpdate struct {
	Name         *string
	Plan         *Plan
	Domains      *[]string
	RateLimit    *int
	MonthlyQuota *int

	RequireSignature *bool
	OwnerID          *string
	SigningSecret    *string
}

// Apply changes k as u says.
func (u KeyUpdate) Apply(k *Key) {
	if u.Name != nil {
		k.Name = *u.Name
	}
	if u.Plan != nil {
		k.Plan = *u.Plan
	}
	if u.Domains != nil {
		k.Domains = *u.Domains
	}
	if u.RateLimit != nil {
		k.RateLimit = *u.RateLimit
	}
	if u.MonthlyQuota != nil {
		k.MonthlyQuota = *u.MonthlyQuota
	}
	if u.RequireSignature != nil {
		k.RequireSignature = *u.RequireSignature
	}
	if u.OwnerID != nil {
		k.OwnerID = *u.OwnerID
	}
	if u.SigningSecret != nil {
		k.SigningSecret = *u.SigningSecret
	}
}

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewSecret returns a new API key secret: prefix, "_test_" or "_live_" by
// environment, and 160 random bits.
func NewSecret(prefix, nodeEnv string) string {
	mode := "test"
	if nodeEnv == "production" {
		mode = "live"
	}
	b := make([]byte, 20)
	rand.Read(b) // never fails (crypto/rand panics on a broken source)
	return prefix + "_" + mode + "_" + strings.ToLower(b32.EncodeToString(b))
}

// HashSecret is the stored form of a secret. Secrets carry 160 random bits,
// so a fast hash is enough: there is nothing to brute-force.
func HashSecret(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// NewKeyID returns a short random identifier for a key record.
func NewKeyID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "key_" + hex.EncodeToString(b)
}

// NewToken returns an opaque random token (128 bits, hex) for holds, locks
// and the like: nothing a person reads, nothing that looks like a key id.
func NewToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// DisplayPrefix is the part of a secret that may be shown.
func DisplayPrefix(secret string) string {
	i := strings.LastIndexByte(secret, '_')
	if i < 0 || len(secret) < i+5 {
		return ""
	}
	return secret[:i+5] + "…"
}

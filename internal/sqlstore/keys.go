package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/shutterhq/shutter/internal/screenshot"
)

const keyColumns = `id, name, prefix, hash, plan, domains, rate_limit, monthly_quota, created_at, revoked_at,
	owner_id, require_signature, signing_secret, previous_hash, previous_expires_at`

func scanKey(scan func(...any) error) (*screenshot.Key, error) {
	var k screenshot.Key
	var plan, domains string
	var owner, prev sql.NullString
	err := scan(&k.ID, &k.Name, &k.Prefix, &k.Hash, &plan, &domains, &k.RateLimit, &k.MonthlyQuota,
		tm{&k.CreatedAt}, tm{&k.RevokedAt}, &owner, &k.RequireSignature, &k.SigningSecret, &prev, tm{&k.PreviousExpires})
	if err != nil {
		return nil, err
	}
	k.Plan = screenshot.Plan(plan)
	if domains != "" {
		k.Domains = strings.Split(domains, ",")
	}
	k.OwnerID, k.PreviousHash = owner.String, prev.String
	return &k, nil
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// CreateKey stores a new key.
func (s *Store) CreateKey(ctx context.Context, k *screenshot.Key) error {
	_, err := s.exec(ctx, `INSERT INTO api_keys (`+keyColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		k.ID, k.Name, k.Prefix, k.Hash, string(k.Plan), strings.Join(k.Domains, ","), k.RateLimit, k.MonthlyQuota,
		s.t(k.CreatedAt), s.t(k.RevokedAt), nullable(k.OwnerID), k.RequireSignature, k.SigningSecret,
		nullable(k.PreviousHash), s.t(k.PreviousExpires))
	if err != nil {
		if s.d.IsConflict(err) {
			return screenshot.Errorf(screenshot.ECONFLICT, "a key with this id or secret exists")
		}
		return fmt.Errorf("create key: %w", err)
	}
	return nil
}

// KeyByHash finds a key by the hash of its secret, or of its previous
// secret while that is in its grace period.
func (s *Store) KeyByHash(ctx context.Context, hash string) (*screenshot.Key, error) {
	k, err := scanKey(s.row(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE hash = ?`, hash).Scan)
	if err == sql.ErrNoRows {
		k, err = scanKey(s.row(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE previous_hash = ?`, hash).Scan)
		if err == nil && !time.Now().Before(k.PreviousExpires) {
			err = sql.ErrNoRows
		}
	}
	if err != nil {
		return nil, fmt.Errorf("key by hash: %w", notFound(err, "no such key"))
	}
	return k, nil
}

// KeyByID returns one key.
func (s *Store) KeyByID(ctx context.Context, id string) (*screenshot.Key, error) {
	k, err := scanKey(s.row(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE id = ?`, id).Scan)
	if err != nil {
		return nil, fmt.Errorf("key: %w", notFound(err, "no key with id "+id))
	}
	return k, nil
}

// ListKeys returns every key, oldest first.
func (s *Store) ListKeys(ctx context.Context) ([]*screenshot.Key, error) {
	keys, err := list(ctx, s, scanKey, `SELECT `+keyColumns+` FROM api_keys ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	return keys, nil
}

// RevokeKey marks a key revoked; revoking twice keeps the first time.
func (s *Store) RevokeKey(ctx context.Context, id string) error {
	k, err := s.KeyByID(ctx, id)
	if err != nil || k.Revoked() {
		return err
	}
	_, err = s.exec(ctx, `UPDATE api_keys SET revoked_at = ? WHERE id = ?`, s.t(time.Now()), id)
	if err != nil {
		return fmt.Errorf("revoke key: %w", err)
	}
	return nil
}

// UpdateKey changes a key.
func (s *Store) UpdateKey(ctx context.Context, id string, u screenshot.KeyUpdate) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		k, err := scanKey(tx.QueryRowContext(ctx, s.q(`SELECT `+keyColumns+` FROM api_keys WHERE id = ?`), id).Scan)
		if err != nil {
			return fmt.Errorf("update key: %w", notFound(err, "no key with id "+id))
		}
		u.Apply(k)
		_, err = tx.ExecContext(ctx, s.q(`UPDATE api_keys SET name = ?, plan = ?, domains = ?, rate_limit = ?, monthly_quota = ?,
			owner_id = ?, require_signature = ?, signing_secret = ? WHERE id = ?`),
			k.Name, string(k.Plan), strings.Join(k.Domains, ","), k.RateLimit, k.MonthlyQuota,
			nullable(k.OwnerID), k.RequireSignature, k.SigningSecret, id)
		if err != nil {
			return fmt.Errorf("update key: %w", err)
		}
		return nil
	})
}

// RotateKey replaces the key's secret; the old hash authenticates until
// grace.
func (s *Store) RotateKey(ctx context.Context, id, hash, prefix string, grace time.Time) error {
	res, err := s.exec(ctx, `UPDATE api_keys SET previous_hash = hash, previous_expires_at = ?, hash = ?, prefix = ? WHERE id = ?`,
		s.t(grace), hash, prefix, id)
	if err := affected(res, err, "no key with id "+id); err != nil {
		return fmt.Errorf("rotate key: %w", err)
	}
	return nil
}

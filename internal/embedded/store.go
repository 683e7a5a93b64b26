// Package embedded holds the stores of the embedded default: a local SQLite
// database file in the data directory, so that one machine needs no database
// server. SQLite lets the running server and the `server keys` commands use
// the file at the same time.
package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // database/sql driver "sqlite"

	"github.com/shutterhq/shutter/internal/screenshot"
)

const schema = `
CREATE TABLE IF NOT EXISTS api_keys (
	id            TEXT PRIMARY KEY,
	name          TEXT NOT NULL DEFAULT '',
	prefix        TEXT NOT NULL,
	hash          TEXT NOT NULL UNIQUE,
	plan          TEXT NOT NULL,
	domains       TEXT NOT NULL DEFAULT '',
	rate_limit    INTEGER NOT NULL DEFAULT 0,
	monthly_quota INTEGER NOT NULL DEFAULT 0,
	created_at    INTEGER NOT NULL,
	revoked_at    INTEGER NOT NULL DEFAULT 0
);`

// Store is the embedded key store.
type Store struct {
	db *sql.DB
}

var _ screenshot.KeyStore = (*Store)(nil)

// Open opens (creating when missing) the database file shutter.db in dir.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded store: %w", err)
	}
	path := filepath.Join(dir, "shutter.db")
	dsn := "file:" + path + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("embedded store %s: %w", path, err)
	}
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("embedded store %s: %w", path, err)
	}
	return &Store{db: db}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	var n int
	return s.db.QueryRowContext(ctx, `SELECT count(*) FROM api_keys`).Scan(&n)
}

// CreateKey stores a new key.
func (s *Store) CreateKey(ctx context.Context, k *screenshot.Key) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO api_keys
		(id, name, prefix, hash, plan, domains, rate_limit, monthly_quota, created_at, revoked_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		k.ID, k.Name, k.Prefix, k.Hash, string(k.Plan), strings.Join(k.Domains, ","),
		k.RateLimit, k.MonthlyQuota, k.CreatedAt.UnixNano(), unixNano(k.RevokedAt))
	if err != nil {
		return fmt.Errorf("create key: %w", err)
	}
	return nil
}

const keyColumns = `id, name, prefix, hash, plan, domains, rate_limit, monthly_quota, created_at, revoked_at`

func scanKey(row interface{ Scan(...any) error }) (*screenshot.Key, error) {
	var k screenshot.Key
	var plan, domains string
	var created, revoked int64
	err := row.Scan(&k.ID, &k.Name, &k.Prefix, &k.Hash, &plan, &domains, &k.RateLimit, &k.MonthlyQuota, &created, &revoked)
	if err != nil {
		return nil, err
	}
	k.Plan = screenshot.Plan(plan)
	if domains != "" {
		k.Domains = strings.Split(domains, ",")
	}
	k.CreatedAt = time.Unix(0, created).UTC()
	if revoked != 0 {
		k.RevokedAt = time.Unix(0, revoked).UTC()
	}
	return &k, nil
}

// KeyByHash finds a key by the hash of its secret.
func (s *Store) KeyByHash(ctx context.Context, hash string) (*screenshot.Key, error) {
	k, err := scanKey(s.db.QueryRowContext(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE hash = ?`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, screenshot.Errorf(screenshot.ENOTFOUND, "no such key")
	}
	if err != nil {
		return nil, fmt.Errorf("key by hash: %w", err)
	}
	return k, nil
}

// ListKeys returns every key, oldest first.
func (s *Store) ListKeys(ctx context.Context) ([]*screenshot.Key, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+keyColumns+` FROM api_keys ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	defer rows.Close()
	var out []*screenshot.Key
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, fmt.Errorf("list keys: %w", err)
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// RevokeKey marks a key revoked; revoking twice keeps the first time.
func (s *Store) RevokeKey(ctx context.Context, id string) error {
	res, err := s.db.ExecContext(ctx, `UPDATE api_keys SET revoked_at = CASE WHEN revoked_at = 0 THEN ? ELSE revoked_at END WHERE id = ?`,
		time.Now().UnixNano(), id)
	if err != nil {
		return fmt.Errorf("revoke key: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return screenshot.Errorf(screenshot.ENOTFOUND, "no key with id %s", id)
	}
	return nil
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

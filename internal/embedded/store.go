// Package embedded holds the stores of the embedded default: a local SQLite
// database file in the data directory, so that one machine needs no database
// server. SQLite lets the running server and the `server keys` commands use
// the file at the same time.
package embedded

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // database/sql driver "sqlite"

	"github.com/shutterhq/shutter/internal/account"
	"github.com/shutterhq/shutter/internal/migration"
	"github.com/shutterhq/shutter/internal/screenshot"
	"github.com/shutterhq/shutter/internal/sqlstore"
)

// migrations are the numbered schema changes, applied in order once each;
// schema_migrations records which ran (as in the PostgreSQL store).
//
//go:embed migrations/*.sql
var migrations embed.FS

// Store is the embedded store: keys, accounts and usage history through
// the shared SQL store, and the monthly quota.
type Store struct {
	*sqlstore.Store
	db *sql.DB
}

var (
	_ screenshot.KeyStore   = (*Store)(nil)
	_ screenshot.QuotaStore = (*Store)(nil)
	_ account.Store         = (*Store)(nil)
)

// dialect is SQLite's: "?" placeholders, times as integer nanoseconds.
var dialect = sqlstore.Dialect{Name: "sqlite", UnixTimes: true, IsConflict: func(err error) bool {
	return strings.Contains(err.Error(), "UNIQUE constraint failed")
}}

// Open opens (creating when missing) the database file shutter.db in dir.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded store: %w", err)
	}
	path := filepath.Join(dir, "shutter.db")
	dsn := "file:" + path + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("embedded store %s: %w", path, err)
	}
	if err := migrate(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("embedded store %s: %w", path, err)
	}
	return &Store{Store: sqlstore.New(db, dialect), db: db}, nil
}

// migrate applies the migrations that have not run, each in an immediate
// transaction (SQLite's writer lock: two processes opening one file at once
// take turns).
func migrate(db *sql.DB) error {
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
		version TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	all, err := migration.Load(migrations)
	if err != nil {
		return err
	}
	for _, mg := range all {
		version, body := mg.Version, mg.SQL
		tx, err := db.Begin()
		if err != nil {
			return fmt.Errorf("migrate %s: %w", version, err)
		}
		var done int
		err = tx.QueryRow(`SELECT COUNT(*) FROM schema_migrations WHERE version = ?`, version).Scan(&done)
		if err == nil && done == 0 {
			if _, err = tx.Exec(body); err == nil {
				_, err = tx.Exec(`INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, version, time.Now().Unix())
			}
		}
		if err != nil {
			tx.Rollback()
			return fmt.Errorf("migrate %s: %w", version, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migrate %s: %w", version, err)
		}
	}
	return nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	var n int
	return s.db.QueryRowContext(ctx, `SELECT count(*) FROM api_keys`).Scan(&n)
}

// Reserve holds one unit of the period's quota. The write transaction
// (BEGIN IMMEDIATE) serialises reservations, also across processes.
func (s *Store) Reserve(ctx context.Context, keyID, period string, quota int, ttl time.Duration) (string, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return "", fmt.Errorf("reserve quota: %w", err)
	}
	defer tx.Rollback()
	now := time.Now()
	if _, err := tx.ExecContext(ctx, `DELETE FROM quota_holds WHERE key_id = ? AND expires_at < ?`, keyID, now.UnixNano()); err != nil {
		return "", fmt.Errorf("reserve quota: %w", err)
	}
	if quota > 0 {
		var used, held int
		err := tx.QueryRowContext(ctx, `SELECT COALESCE((SELECT used FROM usage WHERE key_id = ? AND period = ?), 0),
			(SELECT count(*) FROM quota_holds WHERE key_id = ? AND period = ?)`, keyID, period, keyID, period).Scan(&used, &held)
		if err != nil {
			return "", fmt.Errorf("reserve quota: %w", err)
		}
		if used+held >= quota {
			return "", screenshot.ErrQuotaExhausted
		}
	}
	hold := screenshot.NewToken()
	if _, err := tx.ExecContext(ctx, `INSERT INTO quota_holds (id, key_id, period, expires_at) VALUES (?, ?, ?, ?)`,
		hold, keyID, period, now.Add(ttl).UnixNano()); err != nil {
		return "", fmt.Errorf("reserve quota: %w", err)
	}
	return hold, tx.Commit()
}

// Commit turns a hold into a used unit.
func (s *Store) Commit(ctx context.Context, hold string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("commit quota: %w", err)
	}
	defer tx.Rollback()
	var keyID, period string
	err = tx.QueryRowContext(ctx, `DELETE FROM quota_holds WHERE id = ? RETURNING key_id, period`, hold).Scan(&keyID, &period)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("commit quota %s: %w", hold, screenshot.ErrHoldGone)
	}
	if err != nil {
		return fmt.Errorf("commit quota: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO usage (key_id, period, used) VALUES (?, ?, 1)
		ON CONFLICT (key_id, period) DO UPDATE SET used = used + 1`, keyID, period); err != nil {
		return fmt.Errorf("commit quota: %w", err)
	}
	return tx.Commit()
}

// Release gives a held unit back.
func (s *Store) Release(ctx context.Context, hold string) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM quota_holds WHERE id = ?`, hold); err != nil {
		return fmt.Errorf("release quota: %w", err)
	}
	return nil
}

// Usage is the number of committed units of the period.
func (s *Store) Usage(ctx context.Context, keyID, period string) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE((SELECT used FROM usage WHERE key_id = ? AND period = ?), 0)`, keyID, period).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("usage: %w", err)
	}
	return n, nil
}

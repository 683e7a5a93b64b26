// Package postgres is the production store of keys and monthly usage on
// PostgreSQL through a pgx pool. Its schema migrations are embedded in the
// binary and applied under an advisory lock, so replicas that start together
// do not race.
package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/shutterhq/shutter/internal/account"
	"github.com/shutterhq/shutter/internal/migration"
	"github.com/shutterhq/shutter/internal/screenshot"
	"github.com/shutterhq/shutter/internal/sqlstore"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrationLock is the advisory lock key of schema migrations.
const migrationLock = 0x5348555454455201 // "SHUTTER" + 1

// Config configures the store.
type Config struct {
	DSN      string
	MaxConns int32
}

// Store is the PostgreSQL store: keys, accounts and usage history through
// the shared SQL store (on the same pool), and the monthly quota.
type Store struct {
	*sqlstore.Store
	pool *pgxpool.Pool
	db   *sql.DB
}

var (
	_ screenshot.KeyStore   = (*Store)(nil)
	_ screenshot.QuotaStore = (*Store)(nil)
	_ account.Store         = (*Store)(nil)
)

// dialect is PostgreSQL's: numbered placeholders, timestamps.
var dialect = sqlstore.Dialect{Name: "postgres", Numbered: true, IsConflict: func(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}}

// Open connects, waits for the database to answer and applies migrations.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	pc, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		return nil, errors.New("DATABASE_URL: not a valid PostgreSQL connection string")
	}
	if cfg.MaxConns > 0 {
		pc.MaxConns = cfg.MaxConns
	}
	pc.ConnConfig.ConnectTimeout = 5 * time.Second
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	db := stdlib.OpenDBFromPool(pool)
	s := &Store{Store: sqlstore.New(db, dialect), pool: pool, db: db}
	if err := s.Migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the pool.
func (s *Store) Close() error {
	err := s.db.Close()
	s.pool.Close()
	return err
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// Migrate applies the embedded migrations that have not run yet.
func (s *Store) Migrate(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLock)); err != nil {
		return fmt.Errorf("migrate: lock: %w", err)
	}
	defer func() {
		// The lock also ends with the connection, should this fail.
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrationLock))
	}()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	all, err := migration.Load(migrations)
	if err != nil {
		return err
	}
	for _, mg := range all {
		version := mg.Version
		var done bool
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`, version).Scan(&done); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if done {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, mg.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, version)
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate %s: %w", version, err)
		}
	}
	return nil
}

// Reserve holds one unit of the period's quota. The usage row is locked for
// the transaction, so reservations of one key are serialised across every
// server that shares the database.
func (s *Store) Reserve(ctx context.Context, keyID, period string, quota int, ttl time.Duration) (string, error) {
	hold := screenshot.NewToken()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO usage (key_id, period, used) VALUES ($1, $2, 0) ON CONFLICT DO NOTHING`, keyID, period); err != nil {
			return err
		}
		var used int
		if err := tx.QueryRow(ctx, `SELECT used FROM usage WHERE key_id = $1 AND period = $2 FOR UPDATE`, keyID, period).Scan(&used); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM quota_holds WHERE key_id = $1 AND expires_at < now()`, keyID); err != nil {
			return err
		}
		if quota > 0 {
			var held int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM quota_holds WHERE key_id = $1 AND period = $2`, keyID, period).Scan(&held); err != nil {
				return err
			}
			if used+held >= quota {
				return screenshot.ErrQuotaExhausted
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO quota_holds (id, key_id, period, expires_at) VALUES ($1, $2, $3, now() + $4::interval)`,
			hold, keyID, period, fmt.Sprintf("%d milliseconds", ttl.Milliseconds()))
		return err
	})
	if errors.Is(err, screenshot.ErrQuotaExhausted) {
		return "", err
	}
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23503" { // foreign key: no such key
			return "", screenshot.Errorf(screenshot.ENOTFOUND, "no key with id %s", keyID)
		}
		return "", fmt.Errorf("reserve quota: %w", err)
	}
	return hold, nil
}

// Commit turns a hold into a used unit.
func (s *Store) Commit(ctx context.Context, hold string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var keyID, period string
		err := tx.QueryRow(ctx, `DELETE FROM quota_holds WHERE id = $1 RETURNING key_id, period`, hold).Scan(&keyID, &period)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("commit quota %s: %w", hold, screenshot.ErrHoldGone)
		}
		if err != nil {
			return fmt.Errorf("commit quota: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE usage SET used = used + 1 WHERE key_id = $1 AND period = $2`, keyID, period); err != nil {
			return fmt.Errorf("commit quota: %w", err)
		}
		return nil
	})
}

// Release gives a held unit back.
func (s *Store) Release(ctx context.Context, hold string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM quota_holds WHERE id = $1`, hold); err != nil {
		return fmt.Errorf("release quota: %w", err)
	}
	return nil
}

// Usage is the number of committed units of the period.
func (s *Store) Usage(ctx context.Context, keyID, period string) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT COALESCE((SELECT used FROM usage WHERE key_id = $1 AND period = $2), 0)`, keyID, period).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("usage: %w", err)
	}
	return n, nil
}

// Package sqlstore keeps keys, users, sessions, access tokens and usage
// history in SQL, once for both backends: the embedded SQLite file and
// PostgreSQL (through pgx's database/sql adapter). Only the dialect differs
// — placeholders, how times and booleans are stored — and the schema, which
// each backend creates with its own numbered migrations. What needs locking
// semantics of one database (the quota) stays in the backend's package.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shutterhq/shutter/internal/account"
	"github.com/shutterhq/shutter/internal/screenshot"
)

// Dialect is what differs between the two databases.
type Dialect struct {
	Name string
	// Numbered placeholders ($1, $2…) instead of "?".
	Numbered bool
	// UnixTimes stores times as integer nanoseconds (0 for none) instead of
	// timestamps (NULL for none).
	UnixTimes bool
	// IsConflict reports a unique-constraint violation.
	IsConflict func(error) bool
}

// Store is the shared SQL store.
type Store struct {
	db *sql.DB
	d  Dialect
}

var (
	_ screenshot.KeyStore = (*Store)(nil)
	_ account.Store       = (*Store)(nil)
)

// New returns the store on db, whose schema the backend has migrated.
func New(db *sql.DB, d Dialect) *Store { return &Store{db: db, d: d} }

// q rewrites the placeholders of query for the dialect.
func (s *Store) q(query string) string {
	if !s.d.Numbered {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// t is a time as the dialect stores it.
func (s *Store) t(t time.Time) any {
	switch {
	case s.d.UnixTimes && t.IsZero():
		return int64(0)
	case s.d.UnixTimes:
		return t.UnixNano()
	case t.IsZero():
		return nil
	}
	return t.UTC()
}

// tm scans a time in either form.
type tm struct{ t *time.Time }

func (s tm) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		*s.t = time.Time{}
	case int64:
		*s.t = time.Time{}
		if x != 0 {
			*s.t = time.Unix(0, x).UTC()
		}
	case time.Time:
		*s.t = x.UTC()
	default:
		return fmt.Errorf("a time stored as %T", v)
	}
	return nil
}

func (s *Store) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return s.db.ExecContext(ctx, s.q(query), args...)
}

func (s *Store) row(ctx context.Context, query string, args ...any) *sql.Row {
	return s.db.QueryRowContext(ctx, s.q(query), args...)
}

// notFound maps "no rows" to an ENOTFOUND error with msg.
func notFound(err error, msg string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return screenshot.Errorf(screenshot.ENOTFOUND, "%s", msg)
	}
	return err
}

// affected turns "no row changed" into ENOTFOUND.
func affected(res sql.Result, err error, msg string) error {
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return screenshot.Errorf(screenshot.ENOTFOUND, "%s", msg)
	}
	return nil
}

// list runs a query and scans every row with scan.
func list[T any](ctx context.Context, s *Store, scan func(func(...any) error) (T, error), query string, args ...any) ([]T, error) {
	rows, err := s.db.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows.Scan)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// tx runs f in a transaction.
func (s *Store) tx(ctx context.Context, f func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	if err := f(tx); err != nil {
		return err
	}
	return tx.Commit()
}

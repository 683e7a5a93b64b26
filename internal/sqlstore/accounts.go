package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/shutterhq/shutter/internal/account"
	"github.com/shutterhq/shutter/internal/screenshot"
)

const userColumns = `id, email, password_hash, role, disabled, created_at, last_sign_in_at`

func scanUser(scan func(...any) error) (*account.User, error) {
	var u account.User
	var role string
	if err := scan(&u.ID, &u.Email, &u.PasswordHash, &role, &u.Disabled, tm{&u.CreatedAt}, tm{&u.LastSignInAt}); err != nil {
		return nil, err
	}
	u.Role = account.Role(role)
	return &u, nil
}

// CreateUser stores a user.
func (s *Store) CreateUser(ctx context.Context, u *account.User) error {
	_, err := s.exec(ctx, `INSERT INTO users (`+userColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		u.ID, account.NormalizeEmail(u.Email), u.PasswordHash, string(u.Role), u.Disabled, s.t(u.CreatedAt), s.t(u.LastSignInAt))
	if err != nil {
		if s.d.IsConflict(err) {
			return screenshot.Errorf(screenshot.ECONFLICT, "a user with this email exists")
		}
		return fmt.Errorf("create user: %w", err)
	}
	return nil
}

// UserByID returns a user.
func (s *Store) UserByID(ctx context.Context, id string) (*account.User, error) {
	u, err := scanUser(s.row(ctx, `SELECT `+userColumns+` FROM users WHERE id = ?`, id).Scan)
	if err != nil {
		return nil, fmt.Errorf("user: %w", notFound(err, "no such user"))
	}
	return u, nil
}

// UserByEmail returns the user with that email, in any case.
func (s *Store) UserByEmail(ctx context.Context, email string) (*account.User, error) {
	u, err := scanUser(s.row(ctx, `SELECT `+userColumns+` FROM users WHERE email = ?`, account.NormalizeEmail(email)).Scan)
	if err != nil {
		return nil, fmt.Errorf("user: %w", notFound(err, "no such user"))
	}
	return u, nil
}

// ListUsers returns every user, oldest first.
func (s *Store) ListUsers(ctx context.Context) ([]*account.User, error) {
	us, err := list(ctx, s, scanUser, `SELECT `+userColumns+` FROM users ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	return us, nil
}

// CountUsers counts users.
func (s *Store) CountUsers(ctx context.Context) (int, error) {
	var n int
	if err := s.row(ctx, `SELECT count(*) FROM users`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count users: %w", err)
	}
	return n, nil
}

// UpdateUser changes the fields of u that are set.
func (s *Store) UpdateUser(ctx context.Context, id string, u account.UserUpdate) error {
	var sets []string
	var args []any
	if u.Role != nil {
		sets, args = append(sets, "role = ?"), append(args, string(*u.Role))
	}
	if u.Disabled != nil {
		sets, args = append(sets, "disabled = ?"), append(args, *u.Disabled)
	}
	if u.PasswordHash != nil {
		sets, args = append(sets, "password_hash = ?"), append(args, *u.PasswordHash)
	}
	if u.LastSignInAt != nil {
		sets, args = append(sets, "last_sign_in_at = ?"), append(args, s.t(*u.LastSignInAt))
	}
	if len(sets) == 0 {
		_, err := s.UserByID(ctx, id)
		return err
	}
	res, err := s.exec(ctx, `UPDATE users SET `+strings.Join(sets, ", ")+` WHERE id = ?`, append(args, id)...)
	if err := affected(res, err, "no such user"); err != nil {
		return fmt.Errorf("update user: %w", err)
	}
	return nil
}

// CreateSession stores a session.
func (s *Store) CreateSession(ctx context.Context, se *account.Session) error {
	_, err := s.exec(ctx, `INSERT INTO sessions (hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)`,
		se.Hash, se.UserID, s.t(se.CreatedAt), s.t(se.ExpiresAt))
	if err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	return nil
}

// SessionByHash returns a session that has not expired.
func (s *Store) SessionByHash(ctx context.Context, hash string) (*account.Session, error) {
	var se account.Session
	err := s.row(ctx, `SELECT hash, user_id, created_at, expires_at FROM sessions WHERE hash = ? AND expires_at > ?`, hash, s.t(time.Now())).
		Scan(&se.Hash, &se.UserID, tm{&se.CreatedAt}, tm{&se.ExpiresAt})
	if err != nil {
		return nil, fmt.Errorf("session: %w", notFound(err, "no such session"))
	}
	return &se, nil
}

// ExtendSession moves a session's expiry.
func (s *Store) ExtendSession(ctx context.Context, hash string, expires time.Time) error {
	if _, err := s.exec(ctx, `UPDATE sessions SET expires_at = ? WHERE hash = ?`, s.t(expires), hash); err != nil {
		return fmt.Errorf("extend session: %w", err)
	}
	return nil
}

// DeleteSession ends a session, and takes expired ones with it.
func (s *Store) DeleteSession(ctx context.Context, hash string) error {
	if _, err := s.exec(ctx, `DELETE FROM sessions WHERE hash = ? OR expires_at < ?`, hash, s.t(time.Now())); err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return nil
}

// DeleteUserSessions ends every session of a user.
func (s *Store) DeleteUserSessions(ctx context.Context, userID string) error {
	if _, err := s.exec(ctx, `DELETE FROM sessions WHERE user_id = ?`, userID); err != nil {
		return fmt.Errorf("delete sessions: %w", err)
	}
	return nil
}

const tokenColumns = `id, user_id, name, prefix, hash, created_at, expires_at, last_used_at` //nolint:gosec // column names

func scanToken(scan func(...any) error) (*account.Token, error) {
	var t account.Token
	err := scan(&t.ID, &t.UserID, &t.Name, &t.Prefix, &t.Hash, tm{&t.CreatedAt}, tm{&t.ExpiresAt}, tm{&t.LastUsedAt})
	return &t, err
}

// CreateToken stores an access token.
func (s *Store) CreateToken(ctx context.Context, t *account.Token) error {
	_, err := s.exec(ctx, `INSERT INTO access_tokens (`+tokenColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		t.ID, t.UserID, t.Name, t.Prefix, t.Hash, s.t(t.CreatedAt), s.t(t.ExpiresAt), s.t(t.LastUsedAt))
	if err != nil {
		return fmt.Errorf("create token: %w", err)
	}
	return nil
}

// TokenByHash returns a token by the hash of its secret.
func (s *Store) TokenByHash(ctx context.Context, hash string) (*account.Token, error) {
	t, err := scanToken(s.row(ctx, `SELECT `+tokenColumns+` FROM access_tokens WHERE hash = ?`, hash).Scan)
	if err != nil {
		return nil, fmt.Errorf("token: %w", notFound(err, "no such token"))
	}
	return t, nil
}

// ListTokens returns a user's tokens, newest first.
func (s *Store) ListTokens(ctx context.Context, userID string) ([]*account.Token, error) {
	ts, err := list(ctx, s, scanToken, `SELECT `+tokenColumns+` FROM access_tokens WHERE user_id = ? ORDER BY created_at DESC, id`, userID)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	return ts, nil
}

// DeleteToken revokes one of the user's tokens.
func (s *Store) DeleteToken(ctx context.Context, userID, id string) error {
	res, err := s.exec(ctx, `DELETE FROM access_tokens WHERE id = ? AND user_id = ?`, id, userID)
	if err := affected(res, err, "no such token"); err != nil {
		return fmt.Errorf("delete token: %w", err)
	}
	return nil
}

// TouchToken records a token's last use.
func (s *Store) TouchToken(ctx context.Context, id string, at time.Time) error {
	if _, err := s.exec(ctx, `UPDATE access_tokens SET last_used_at = ? WHERE id = ?`, s.t(at), id); err != nil {
		return fmt.Errorf("touch token: %w", err)
	}
	return nil
}

// AddUsage adds the days' counts in one transaction.
func (s *Store) AddUsage(ctx context.Context, days []account.Day) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, s.q(`INSERT INTO usage_days (key_id, day, succeeded, failed, cache_hits, refused, bytes)
			VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (key_id, day) DO UPDATE SET succeeded = usage_days.succeeded + excluded.succeeded,
				failed = usage_days.failed + excluded.failed, cache_hits = usage_days.cache_hits + excluded.cache_hits,
				refused = usage_days.refused + excluded.refused, bytes = usage_days.bytes + excluded.bytes`))
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, d := range days {
			if _, err := stmt.ExecContext(ctx, d.KeyID, d.Date, d.Succeeded, d.Failed, d.CacheHits, d.Refused, d.Bytes); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("add usage: %w", err)
	}
	return nil
}

// UsageDays returns a key's stored days in date order.
func (s *Store) UsageDays(ctx context.Context, keyID, from, to string) ([]account.Day, error) {
	days, err := list(ctx, s, func(scan func(...any) error) (account.Day, error) {
		d := account.Day{KeyID: keyID}
		err := scan(&d.Date, &d.Succeeded, &d.Failed, &d.CacheHits, &d.Refused, &d.Bytes)
		return d, err
	}, `SELECT day, succeeded, failed, cache_hits, refused, bytes FROM usage_days WHERE key_id = ? AND day >= ? AND day <= ? ORDER BY day`,
		keyID, from, to)
	if err != nil {
		return nil, fmt.Errorf("usage days: %w", err)
	}
	return days, nil
}

// AddRequests appends entries and trims each key's log to perKey.
func (s *Store) AddRequests(ctx context.Context, reqs []account.Request, perKey int) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, s.q(`INSERT INTO request_log (key_id, at, status, duration_ms, host, format, cached, request_id)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`))
		if err != nil {
			return err
		}
		defer stmt.Close()
		keys := map[string]bool{}
		for _, r := range reqs {
			keys[r.KeyID] = true
			if _, err := stmt.ExecContext(ctx, r.KeyID, s.t(r.At), r.Status, r.DurationMS, r.Host, r.Format, r.Cached, r.RequestID); err != nil {
				return err
			}
		}
		for k := range keys {
			if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM request_log WHERE key_id = ? AND id NOT IN
				(SELECT id FROM request_log WHERE key_id = ? ORDER BY id DESC LIMIT ?)`), k, k, perKey); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("add requests: %w", err)
	}
	return nil
}

// Requests returns a key's newest log entries.
func (s *Store) Requests(ctx context.Context, keyID string, limit, status int) ([]account.Request, error) {
	query, args := `SELECT at, status, duration_ms, host, format, cached, request_id FROM request_log WHERE key_id = ?`, []any{keyID}
	if status != 0 {
		query, args = query+` AND status = ?`, append(args, status)
	}
	reqs, err := list(ctx, s, func(scan func(...any) error) (account.Request, error) {
		r := account.Request{KeyID: keyID}
		err := scan(tm{&r.At}, &r.Status, &r.DurationMS, &r.Host, &r.Format, &r.Cached, &r.RequestID)
		return r, err
	}, query+` ORDER BY id DESC LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("requests: %w", err)
	}
	return reqs, nil
}

// PruneRequests deletes old entries.
func (s *Store) PruneRequests(ctx context.Context, before time.Time) error {
	if _, err := s.exec(ctx, `DELETE FROM request_log WHERE at < ?`, s.t(before)); err != nil {
		return fmt.Errorf("prune requests: %w", err)
	}
	return nil
}

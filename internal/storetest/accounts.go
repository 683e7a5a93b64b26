package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shutterhq/shutter/internal/account"
	"github.com/shutterhq/shutter/internal/screenshot"
)

// Accounts is a store of keys and accounts under test.
type Accounts interface {
	screenshot.KeyStore
	account.Store
}

// NewUser creates a user in s.
func NewUser(tb testing.TB, s account.Store, email string, role account.Role) *account.User {
	tb.Helper()
	u := &account.User{ID: account.NewID("usr"), Email: email, Role: role, CreatedAt: time.Now().UTC().Truncate(time.Millisecond)}
	if err := s.CreateUser(context.Background(), u); err != nil {
		tb.Fatal(err)
	}
	return u
}

// RunAccounts tests users, sessions, tokens, key ownership, signing and
// rotation, and usage history.
func RunAccounts(t *testing.T, s Accounts) {
	t.Run("users", func(t *testing.T) { runUsers(t, s) })
	t.Run("sessions", func(t *testing.T) { runSessions(t, s) })
	t.Run("tokens", func(t *testing.T) { runTokens(t, s) })
	t.Run("keys", func(t *testing.T) { runOwnedKeys(t, s) })
	t.Run("usage", func(t *testing.T) { runUsage(t, s) })
	t.Run("requests", func(t *testing.T) { runRequests(t, s) })
}

func code(err error) screenshot.Code {
	if err == nil {
		return ""
	}
	return screenshot.ErrorCode(err)
}

func runUsers(t *testing.T, s Accounts) {
	ctx := context.Background()
	u := NewUser(t, s, "Ada@Example.COM", account.RoleAdmin)
	dup := &account.User{ID: account.NewID("usr"), Email: "ada@example.com", Role: account.RoleMember, CreatedAt: time.Now()}
	if err := s.CreateUser(ctx, dup); code(err) != screenshot.ECONFLICT {
		t.Errorf("same email in another case: %v, want ECONFLICT", err)
	}
	got, err := s.UserByEmail(ctx, " ADA@example.com")
	if err != nil || got.ID != u.ID || got.Email != "ada@example.com" || got.Role != account.RoleAdmin || got.Disabled ||
		!got.CreatedAt.Equal(u.CreatedAt) || !got.LastSignInAt.IsZero() {
		t.Errorf("UserByEmail = %+v, %v", got, err)
	}
	if _, err := s.UserByEmail(ctx, "nobody@example.com"); code(err) != screenshot.ENOTFOUND {
		t.Errorf("unknown email: %v", err)
	}
	role, off, hash, at := account.RoleMember, true, "h", time.Now().UTC().Truncate(time.Millisecond)
	if err := s.UpdateUser(ctx, u.ID, account.UserUpdate{Role: &role, Disabled: &off, PasswordHash: &hash, LastSignInAt: &at}); err != nil {
		t.Fatal(err)
	}
	got, _ = s.UserByID(ctx, u.ID)
	if got.Role != role || !got.Disabled || got.PasswordHash != "h" || !got.LastSignInAt.Equal(at) {
		t.Errorf("after update: %+v", got)
	}
	if err := s.UpdateUser(ctx, "usr_missing", account.UserUpdate{Role: &role}); code(err) != screenshot.ENOTFOUND {
		t.Errorf("update missing: %v", err)
	}
	n, err := s.CountUsers(ctx)
	users, err2 := s.ListUsers(ctx)
	if err != nil || err2 != nil || n < 1 || len(users) != n {
		t.Errorf("CountUsers = %d, %v; ListUsers = %d, %v", n, err, len(users), err2)
	}
}

func runSessions(t *testing.T, s Accounts) {
	ctx := context.Background()
	u := NewUser(t, s, fmt.Sprintf("s%d@example.com", time.Now().UnixNano()), account.RoleMember)
	now := time.Now().UTC().Truncate(time.Millisecond)
	a := &account.Session{Hash: account.HashToken("a" + u.ID), UserID: u.ID, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	b := &account.Session{Hash: account.HashToken("b" + u.ID), UserID: u.ID, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	old := &account.Session{Hash: account.HashToken("c" + u.ID), UserID: u.ID, CreatedAt: now, ExpiresAt: now.Add(-time.Second)}
	for _, se := range []*account.Session{a, b, old} {
		if err := s.CreateSession(ctx, se); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.SessionByHash(ctx, a.Hash); err != nil || got.UserID != u.ID || !got.ExpiresAt.Equal(a.ExpiresAt) {
		t.Errorf("SessionByHash = %+v, %v", got, err)
	}
	if _, err := s.SessionByHash(ctx, old.Hash); code(err) != screenshot.ENOTFOUND {
		t.Errorf("expired session: %v, want ENOTFOUND", err)
	}
	later := now.Add(48 * time.Hour)
	if err := s.ExtendSession(ctx, a.Hash, later); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.SessionByHash(ctx, a.Hash); got == nil || !got.ExpiresAt.Equal(later) {
		t.Errorf("after extending: %+v", got)
	}
	if err := s.DeleteSession(ctx, a.Hash); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SessionByHash(ctx, a.Hash); code(err) != screenshot.ENOTFOUND {
		t.Errorf("deleted session: %v", err)
	}
	if _, err := s.SessionByHash(ctx, b.Hash); err != nil {
		t.Errorf("signing out one session ended another: %v", err)
	}
	if err := s.DeleteUserSessions(ctx, u.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SessionByHash(ctx, b.Hash); code(err) != screenshot.ENOTFOUND {
		t.Errorf("after signing out everywhere: %v", err)
	}
}

func runTokens(t *testing.T, s Accounts) {
	ctx := context.Background()
	u := NewUser(t, s, fmt.Sprintf("t%d@example.com", time.Now().UnixNano()), account.RoleMember)
	other := NewUser(t, s, fmt.Sprintf("o%d@example.com", time.Now().UnixNano()), account.RoleMember)
	now := time.Now().UTC().Truncate(time.Millisecond)
	tok := &account.Token{ID: account.NewID("tok"), UserID: u.ID, Name: "ci", Prefix: "shp_ab…", Hash: account.HashToken("x" + u.ID),
		CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := s.CreateToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	got, err := s.TokenByHash(ctx, tok.Hash)
	if err != nil || got.ID != tok.ID || got.UserID != u.ID || got.Name != "ci" || !got.ExpiresAt.Equal(tok.ExpiresAt) || !got.LastUsedAt.IsZero() {
		t.Errorf("TokenByHash = %+v, %v", got, err)
	}
	if err := s.TouchToken(ctx, tok.ID, now); err != nil {
		t.Fatal(err)
	}
	if list, err := s.ListTokens(ctx, u.ID); err != nil || len(list) != 1 || !list[0].LastUsedAt.Equal(now) {
		t.Errorf("ListTokens = %v, %v", list, err)
	}
	if err := s.DeleteToken(ctx, other.ID, tok.ID); code(err) != screenshot.ENOTFOUND {
		t.Errorf("another user deleted the token: %v", err)
	}
	if err := s.DeleteToken(ctx, u.ID, tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TokenByHash(ctx, tok.Hash); code(err) != screenshot.ENOTFOUND {
		t.Errorf("deleted token: %v", err)
	}
}

func runOwnedKeys(t *testing.T, s Accounts) {
	ctx := context.Background()
	u := NewUser(t, s, fmt.Sprintf("k%d@example.com", time.Now().UnixNano()), account.RoleMember)
	k := NewKey(t, s, screenshot.PlanFree, 0)
	owner, yes, sealed := u.ID, true, "v1:sealed"
	if err := s.UpdateKey(ctx, k.ID, screenshot.KeyUpdate{OwnerID: &owner, RequireSignature: &yes, SigningSecret: &sealed}); err != nil {
		t.Fatal(err)
	}
	got, err := s.KeyByID(ctx, k.ID)
	if err != nil || got.OwnerID != u.ID || !got.RequireSignature || got.SigningSecret != sealed || got.PreviousHash != "" {
		t.Errorf("KeyByID = %+v, %v", got, err)
	}
	if _, err := s.KeyByID(ctx, "key_missing"); code(err) != screenshot.ENOTFOUND {
		t.Errorf("missing key: %v", err)
	}
	if err := s.RotateKey(ctx, k.ID, "new-hash"+k.ID, "ss_new…", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{k.Hash, "new-hash" + k.ID} {
		if got, err := s.KeyByHash(ctx, h); err != nil || got.ID != k.ID || got.Prefix != "ss_new…" {
			t.Errorf("within the grace period, hash %s: %+v, %v", h, got, err)
		}
	}
	if err := s.RotateKey(ctx, k.ID, "newer-hash"+k.ID, "ss_nwr…", time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.KeyByHash(ctx, "new-hash"+k.ID); code(err) != screenshot.ENOTFOUND {
		t.Errorf("a secret past its grace period still works: %v", err)
	}
	if _, err := s.KeyByHash(ctx, k.Hash); code(err) != screenshot.ENOTFOUND {
		t.Errorf("the secret of two rotations ago still works: %v", err)
	}
	if err := s.RotateKey(ctx, "key_missing", "h", "p", time.Now()); code(err) != screenshot.ENOTFOUND {
		t.Errorf("rotate missing: %v", err)
	}
	if err := s.CreateKey(ctx, &screenshot.Key{ID: screenshot.NewKeyID(), Prefix: "p", Hash: "newer-hash" + k.ID, Plan: screenshot.PlanFree,
		CreatedAt: time.Now()}); code(err) != screenshot.ECONFLICT {
		t.Errorf("a second key with a taken secret: %v, want ECONFLICT", err)
	}
}

func runUsage(t *testing.T, s Accounts) {
	ctx := context.Background()
	k := NewKey(t, s, screenshot.PlanFree, 0)
	batch := []account.Day{
		{KeyID: k.ID, Date: "2026-11-20", Succeeded: 2, Failed: 1, CacheHits: 3, Refused: 4, Bytes: 100},
		{KeyID: k.ID, Date: "2026-11-21", Succeeded: 1},
	}
	for range 2 {
		if err := s.AddUsage(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	days, err := s.UsageDays(ctx, k.ID, "2026-11-01", "2026-11-30")
	want := "[{2026-11-20 4 2 6 8 200} {2026-11-21 2 0 0 0 0}]"
	if err != nil || fmt.Sprint(strip(days)) != want {
		t.Errorf("UsageDays = %v, %v; want %s", strip(days), err, want)
	}
	if days, _ := s.UsageDays(ctx, k.ID, "2026-11-21", "2026-11-21"); len(days) != 1 {
		t.Errorf("one day's range: %v", days)
	}
}

// strip leaves the key id out, for printing.
func strip(days []account.Day) []any {
	out := make([]any, len(days))
	for i, d := range days {
		out[i] = struct {
			D             string
			S, F, C, R, B int64
		}{d.Date, d.Succeeded, d.Failed, d.CacheHits, d.Refused, d.Bytes}
	}
	return out
}

func runRequests(t *testing.T, s Accounts) {
	ctx := context.Background()
	k := NewKey(t, s, screenshot.PlanFree, 0)
	other := NewKey(t, s, screenshot.PlanFree, 0)
	base := time.Now().UTC().Truncate(time.Millisecond)
	var reqs []account.Request
	for i := range 8 {
		status := 200
		if i%2 == 1 {
			status = 429
		}
		reqs = append(reqs, account.Request{KeyID: k.ID, At: base.Add(time.Duration(i) * time.Second), Status: status,
			DurationMS: int64(i), Host: "example.com", Format: "png", Cached: i == 0, RequestID: fmt.Sprint("r", i)})
	}
	reqs = append(reqs, account.Request{KeyID: other.ID, At: base, Status: 200, RequestID: "o"})
	if err := s.AddRequests(ctx, reqs, 5); err != nil {
		t.Fatal(err)
	}
	got, err := s.Requests(ctx, k.ID, 100, 0)
	if err != nil || len(got) != 5 || got[0].RequestID != "r7" || got[4].RequestID != "r3" || !got[0].At.Equal(base.Add(7*time.Second)) ||
		got[0].Status != 429 || got[0].Host != "example.com" || got[0].Format != "png" || got[0].DurationMS != 7 {
		t.Errorf("Requests (capped at 5, newest first) = %+v, %v", got, err)
	}
	if got, _ := s.Requests(ctx, k.ID, 100, 429); len(got) != 3 || got[0].RequestID != "r7" {
		t.Errorf("status filter: %+v", got)
	}
	if got, _ := s.Requests(ctx, k.ID, 2, 0); len(got) != 2 {
		t.Errorf("limit 2: %d entries", len(got))
	}
	if err := s.PruneRequests(ctx, base.Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Requests(ctx, k.ID, 100, 0); len(got) != 3 {
		t.Errorf("after pruning: %+v", got)
	}
	if got, _ := s.Requests(ctx, other.ID, 100, 0); len(got) != 0 {
		t.Errorf("pruning left an old entry of another key: %+v", got)
	}
}

package embedded

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/shutterhq/shutter/internal/migration"
	"github.com/shutterhq/shutter/internal/storetest"
)

func open(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestKeys(t *testing.T) { storetest.RunKeys(t, open(t, t.TempDir())) }

// Several handles on one file stand for several processes (the server and
// the keys command).
func TestQuota(t *testing.T) {
	dir := t.TempDir()
	storetest.RunQuota(t, open(t, dir), open(t, dir), open(t, dir))
}

func TestLimiter(t *testing.T) { storetest.RunLimiter(t, NewLimiter()) }

func TestSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	k := storetest.NewKey(t, s, "pro", 0)
	h, err := s.Reserve(t.Context(), k.ID, "2026-11", 10, 60e9)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(t.Context(), h); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2 := open(t, dir)
	if n, err := s2.Usage(t.Context(), k.ID, "2026-11"); err != nil || n != 1 {
		t.Fatalf("usage after reopen = %d, %v", n, err)
	}
}

// TestMigrations: numbered migrations run once each and are recorded; a
// database made before them is adopted; the constraints of the PostgreSQL
// schema hold here too (foreign keys on, CHECKs).
func TestMigrations(t *testing.T) {
	dir := t.TempDir()
	// A database as the first releases made it, with a key in it.
	old, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "shutter.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(`CREATE TABLE api_keys (id TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '', prefix TEXT NOT NULL,
		hash TEXT NOT NULL UNIQUE, plan TEXT NOT NULL, domains TEXT NOT NULL DEFAULT '', rate_limit INTEGER NOT NULL DEFAULT 0,
		monthly_quota INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL, revoked_at INTEGER NOT NULL DEFAULT 0);
		INSERT INTO api_keys (id, prefix, hash, plan, created_at) VALUES ('key_old', 'ss_', 'h', 'free', 1)`); err != nil {
		t.Fatal(err)
	}
	old.Close()
	for range 2 {
		s, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		var versions, keys int
		s.db.QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&versions)
		s.db.QueryRow(`SELECT COUNT(*) FROM api_keys`).Scan(&keys)
		if all, _ := migration.Load(migrations); versions != len(all) || keys != 1 {
			t.Errorf("schema_migrations %d rows, api_keys %d rows", versions, keys)
		}
		s.Close()
	}
	fresh, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if _, err := fresh.db.Exec(`INSERT INTO usage (key_id, period, used) VALUES ('no-such-key', '2026-11', 1)`); err == nil {
		t.Error("usage for a key that does not exist was stored: foreign keys are off")
	}
	if _, err := fresh.db.Exec(`INSERT INTO api_keys (id, prefix, hash, plan, created_at) VALUES ('k', 'p', 'h2', 'gold', 1)`); err == nil {
		t.Error("a plan outside free, pro, enterprise was stored")
	}
}

func TestAccounts(t *testing.T) { storetest.RunAccounts(t, open(t, t.TempDir())) }

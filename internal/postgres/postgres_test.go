package postgres

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/shutterhq/shutter/internal/migration"
	"github.com/shutterhq/shutter/internal/screenshot"
	"github.com/shutterhq/shutter/internal/storetest"
	"github.com/shutterhq/shutter/internal/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.StopShared()
	os.Exit(code)
}

func open(t *testing.T, dsn string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Config{DSN: dsn, MaxConns: 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestKeys(t *testing.T) { storetest.RunKeys(t, open(t, testenv.PostgresDB(t))) }

// Three pools on one database stand for three server processes.
func TestQuota(t *testing.T) {
	dsn := testenv.PostgresDB(t)
	storetest.RunQuota(t, open(t, dsn), open(t, dsn), open(t, dsn))
}

func TestMigrationsAreIdempotentAndConcurrent(t *testing.T) {
	dsn := testenv.PostgresDB(t)
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	for range 5 {
		wg.Go(func() {
			s, err := Open(context.Background(), Config{DSN: dsn})
			if err == nil {
				err = s.Migrate(context.Background())
				s.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	s := open(t, dsn)
	var n int
	if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil || n != nMigrations(t) {
		t.Errorf("schema_migrations rows = %d, %v", n, err)
	}
}

// TestOutageAndRecovery stops the database under a store and starts it
// again: calls fail with an error meanwhile (never hang) and work again after,
// with no restart of the store.
func TestOutageAndRecovery(t *testing.T) {
	pg := testenv.NewPostgres(t)
	s := open(t, pg.DSN("postgres"))
	k := storetest.NewKey(t, s, screenshot.PlanFree, 0)
	h, err := s.Reserve(context.Background(), k.ID, "2026-11", 5, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	pg.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := s.KeyByHash(ctx, k.Hash); err == nil || screenshot.ErrorCode(err) == screenshot.ENOTFOUND {
		t.Errorf("lookup during the outage: %v, want a store error", err)
	}
	if _, err := s.Reserve(ctx, k.ID, "2026-11", 5, time.Minute); err == nil {
		t.Error("reserve during the outage succeeded")
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("calls during the outage took %s", d)
	}
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := s.KeyByHash(context.Background(), k.Hash)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("store did not recover: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n, err := s.Usage(context.Background(), k.ID, "2026-11"); err != nil || n != 1 {
		t.Errorf("usage after the restart = %d, %v (counters must survive)", n, err)
	}
}

func nMigrations(t *testing.T) int {
	all, err := migration.Load(migrations)
	if err != nil {
		t.Fatal(err)
	}
	return len(all)
}

func TestAccounts(t *testing.T) { storetest.RunAccounts(t, open(t, testenv.PostgresDB(t))) }

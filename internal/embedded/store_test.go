package embedded

import (
	"testing"

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

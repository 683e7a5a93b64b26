package embedded

import (
	"context"
	"testing"
	"time"

	"github.com/shutterhq/shutter/internal/screenshot"
)

func TestKeys(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k := &screenshot.Key{ID: "key_1", Name: "n", Prefix: "ss_test_abcd…", Hash: "h1", Plan: screenshot.PlanPro,
		Domains: []string{"a.example", "*.b.example"}, RateLimit: 5, MonthlyQuota: 7, CreatedAt: time.Now().UTC()}
	if err := s.CreateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateKey(ctx, k); err == nil {
		t.Error("duplicate key accepted")
	}
	got, err := s.KeyByHash(ctx, "h1")
	if err != nil || got.ID != "key_1" || got.Plan != screenshot.PlanPro || len(got.Domains) != 2 || got.RateLimit != 5 || got.MonthlyQuota != 7 || got.Revoked() {
		t.Fatalf("KeyByHash = %+v, %v", got, err)
	}
	if _, err := s.KeyByHash(ctx, "nope"); screenshot.ErrorCode(err) != screenshot.ENOTFOUND {
		t.Errorf("unknown hash: %v", err)
	}
	if err := s.RevokeKey(ctx, "key_1"); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeKey(ctx, "missing"); screenshot.ErrorCode(err) != screenshot.ENOTFOUND {
		t.Errorf("revoke missing: %v", err)
	}
	s.Close()

	// A second process sees the same data.
	s2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	keys, err := s2.ListKeys(ctx)
	if err != nil || len(keys) != 1 || !keys[0].Revoked() {
		t.Fatalf("after reopen: %+v %v", keys, err)
	}
}

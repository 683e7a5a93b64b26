// Package testenv finds the real components that tests run against. Under
// CI=true a missing component fails the test; elsewhere it skips it.
package testenv

import (
	"os"
	"testing"

	"github.com/shutterhq/shutter/internal/browserpath"
)

// Required reports whether missing components must fail tests.
func Required() bool { return os.Getenv("CI") == "true" }

// Missing fails (under CI) or skips the test for a missing component.
func Missing(tb testing.TB, what string, err error) {
	tb.Helper()
	if Required() {
		tb.Fatalf("%s is required under CI=true: %v", what, err)
	}
	tb.Skipf("%s not available: %v", what, err)
}

// Chrome returns the path of the browser binary for tests.
func Chrome(tb testing.TB) string {
	tb.Helper()
	p, err := browserpath.Find(os.Getenv("CHROME_PATH"))
	if err != nil {
		Missing(tb, "Chromium", err)
	}
	return p
}

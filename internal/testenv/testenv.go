// Package testenv finds the real components that tests run against. Under
// CI=true a missing component fails the test; elsewhere it skips it.
package testenv

import (
	"os"
	"testing"

	"github.com/shutterhq/shutter/internal/browserpath"
	"github.com/shutterhq/shutter/internal/config"
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

// EasyList returns the directory of the EasyList and EasyPrivacy snapshots
// that Debian's webext-ublock-origin-chromium installs (make deps).
func EasyList(tb testing.TB) string {
	tb.Helper()
	dir := "/usr/share/chromium/extensions/ublock-origin/assets/thirdparties/easylist"
	for _, f := range []string{"easylist.txt", "easyprivacy.txt"} {
		if _, err := os.Stat(dir + "/" + f); err != nil {
			Missing(tb, "EasyList (apt-get install webext-ublock-origin-chromium)", err)
		}
	}
	return dir
}

// Autoconsent returns the unpacked npm package of the consent engine that
// make deps puts in the tool cache.
func Autoconsent(tb testing.TB) string {
	tb.Helper()
	dir := config.AutoconsentCacheDir(os.Getenv)
	if _, err := os.Stat(dir + "/dist/autoconsent.playwright.js"); err != nil {
		Missing(tb, "the consent engine (make deps)", err)
	}
	return dir
}

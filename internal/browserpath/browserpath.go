// Package browserpath finds the Chromium binary to launch.
package browserpath

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// Find returns the browser to launch: path when given, else the first
// of the known names on PATH. Debian's /usr/bin/chromium-headless-shell is a
// wrapper script that does not exec, so the real binary is preferred: killing
// the wrapper would orphan the browser.
func Find(path string) (string, error) {
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("CHROME_PATH %q: %w", path, err)
		}
		return path, nil
	}
	for _, p := range []string{"/usr/lib/chromium/chromium-headless-shell"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	for _, name := range []string{"chromium-headless-shell", "chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no Chromium found: install Debian's chromium-headless-shell (apt-get install -y --no-install-recommends chromium-headless-shell), set CHROME_PATH, or set BROWSER_URLS")
}

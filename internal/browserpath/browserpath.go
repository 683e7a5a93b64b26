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

// envNames are the variables a browser inherits from the process that
// starts it.
var envNames = []string{"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "TZ", "FONTCONFIG_FILE", "FONTCONFIG_PATH"}

// Env is the minimal environment to start a browser with: a few harmless
// variables, never the server's secrets (DATABASE_URL, storage keys,
// AUTH_SECRET, BROWSER_TOKEN), which a compromised renderer could read.
func Env() []string {
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	for _, name := range envNames {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return env
}

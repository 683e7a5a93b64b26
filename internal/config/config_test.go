package config

import (
	"os"
	"strings"
	"testing"
	"time"
)

func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func TestDefaults(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Port != 3000 || c.NodeEnv != "development" || c.DataDir != "./data" || c.MaxConcurrent != 10 ||
		c.ScreenshotTimeout != 30*time.Second || c.PageLoadTimeout != 30*time.Second || c.RateLimitWindow != time.Minute ||
		c.RateLimitMax != 100 || c.MaxWidth != 3840 || c.MaxHeight != 2160 || c.DefaultWidth != 1280 ||
		c.DefaultHeight != 720 || c.APIKeyPrefix != "ss" || c.RedisPort != 6379 || c.DatabasePort != 5432 ||
		c.RedisHost != "localhost" || c.BillingEnvironment != "sandbox" || c.AllowPrivateTargets || c.LogFormat != "text" {
		t.Errorf("defaults = %+v", c)
	}
	if c.NetworkIdle != 30*time.Millisecond || c.ShutdownDelay != 0 || c.ShutdownGrace != 30*time.Second ||
		c.MetricsPort != 9464 || c.MaxQueued != 100 || c.QueueTimeout != 10*time.Second || c.LocalBrowsers != 1 {
		t.Errorf("added settings' defaults = %+v", c)
	}
	c, err = Load(env(map[string]string{"NETWORK_IDLE_MS": "200", "SHUTDOWN_DELAY_MS": "5000", "METRICS_PORT": "-1",
		"BROWSER_URLS": "http://a:9222, ws://b:9222/devtools/browser/x", "NODE_ENV": "production",
		"AUTH_SECRET": strings.Repeat("s", 32)}))
	if err != nil || c.NetworkIdle != 200*time.Millisecond || c.ShutdownDelay != 5*time.Second || c.MetricsPort != -1 ||
		len(c.BrowserURLs) != 2 || c.LogFormat != "json" || c.Signup != "closed" || c.SessionTTL != 30*24*time.Hour ||
		c.RequestLogRetention != 7*24*time.Hour || !c.UsageHistory {
		t.Errorf("settings = %+v, %v", c, err)
	}
	if c.UsesDatabase() || c.UsesRedis() || c.Storage.Configured() {
		t.Error("embedded default must need no backends")
	}
}

func TestBadValues(t *testing.T) {
	for _, tc := range []struct {
		kv   map[string]string
		want string
	}{
		{map[string]string{"PORT": "abc"}, `PORT: must be an integer from 0 to 65535, got "abc"`},
		{map[string]string{"MAX_CONCURRENT_SCREENSHOTS": "0"}, "MAX_CONCURRENT_SCREENSHOTS: must be an integer from 1"},
		{map[string]string{"NODE_ENV": "staging"}, `NODE_ENV: must be one of development, production, got "staging"`},
		{map[string]string{"ALLOW_PRIVATE_TARGETS": "maybe"}, "ALLOW_PRIVATE_TARGETS: must be true or false"},
		{map[string]string{"LOG_FORMAT": "xml"}, "LOG_FORMAT: must be one of json, text"},
		{map[string]string{"DATABASE_URL": "mysql://u:secret@h/db"}, "DATABASE_URL: must be a URL starting with postgres://"},
		{map[string]string{"DEFAULT_VIEWPORT_WIDTH": "4000"}, "DEFAULT_VIEWPORT_WIDTH: must not exceed MAX_SCREENSHOT_WIDTH"},
		{map[string]string{"DATABASE_HOST": "db"}, "DATABASE_NAME: required when DATABASE_HOST is set"},
		{map[string]string{"BROWSER_URLS": "127.0.0.1:9222"}, "BROWSER_URLS:"},
		{map[string]string{"SCREENSHOT_TIMEOUT": "-5"}, "SCREENSHOT_TIMEOUT: must be an integer from 1000"},
		{map[string]string{"NODE_ENV": "production"}, "AUTH_SECRET: required when NODE_ENV=production, at least 32 bytes"},
		{map[string]string{"AUTH_SECRET": "short"}, "AUTH_SECRET: must have at least 32 bytes"},
		{map[string]string{"AUTH_SECRET_PREVIOUS": "short"}, "AUTH_SECRET_PREVIOUS: must have at least 32 bytes"},
		{map[string]string{"SIGNUP": "maybe"}, "SIGNUP: must be one of closed, invite, open"},
		{map[string]string{"IDENTITY_CLIENT_ID": "shutter"}, "IDENTITY_ISSUER_URL: required when IDENTITY_CLIENT_ID is set"},
	} {
		_, err := Load(env(tc.kv))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.kv, err, tc.want)
		}
		if err != nil && (strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "\n")) {
			t.Errorf("%v: error leaks a value or spans lines: %v", tc.kv, err)
		}
	}
}

func TestDatabaseDSNFromParts(t *testing.T) {
	c, err := Load(env(map[string]string{"DATABASE_HOST": "db", "DATABASE_NAME": "shutter", "DATABASE_USER": "u", "DATABASE_PASSWORD": "p@ss"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.DatabaseDSN(); got != "postgres://u:p%40ss@db:5432/shutter" {
		t.Errorf("DSN = %q", got)
	}
}

// TestAutoconsentVersionMatchesMakefile: the server looks for the release
// that make deps installs.
func TestAutoconsentVersionMatchesMakefile(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mk), "AUTOCONSENT_VERSION := "+AutoconsentVersion+"\n") {
		t.Errorf("the Makefile does not pin autoconsent %s", AutoconsentVersion)
	}
	df, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(df), "ARG AUTOCONSENT_VERSION="+AutoconsentVersion+"\n") {
		t.Errorf("the server image does not install autoconsent %s", AutoconsentVersion)
	}
}

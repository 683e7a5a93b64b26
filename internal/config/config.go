// Package config reads the server's settings from the environment into one
// typed value with the specification's defaults. A bad value is an error that
// names the setting and what it allows, in one line.
package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Config is every setting of the server.
type Config struct {
	Port    int
	NodeEnv string // development | production

	DataDir string

	// Relational database. DatabaseURL wins over the parts.
	DatabaseURL      string
	DatabaseHost     string
	DatabasePort     int
	DatabaseName     string
	DatabaseUser     string
	DatabasePassword string

	// Key-value store. RedisURL wins over the parts.
	RedisURL      string
	RedisHost     string
	RedisPort     int
	RedisPassword string

	Storage Storage

	AuthSecret       string
	APIKeyPrefix     string
	IdentityClientID string

	// Accounts.
	AuthSecretPrevious   string
	Signup               string // closed | invite | open
	SessionTTL           time.Duration
	KeyRotationGrace     time.Duration
	UsageHistory         bool
	RequestLogRetention  time.Duration
	RequestLogPerKey     int
	IdentityIssuerURL    string
	IdentityClientSecret string
	// PublicURL is the public address of the API (VITE_SERVER_URL): links,
	// snippets and the sign-in callback; "" uses the request's own.
	PublicURL string

	BillingAccessToken  string
	BillingEnvironment  string
	RateLimitWindow     time.Duration
	RateLimitMax        int
	Plans               Plans
	KeyCacheTTL         time.Duration
	DatabaseMaxConns    int
	MaxConcurrent       int
	MaxQueued           int
	QueueTimeout        time.Duration
	ScreenshotTimeout   time.Duration
	PageLoadTimeout     time.Duration
	NetworkIdle         time.Duration
	MaxWidth, MaxHeight int
	DefaultWidth        int
	DefaultHeight       int

	FilterLists map[string][]string // category → files and URLs
	// EasyListDir holds easylist.txt and easyprivacy.txt (Debian's
	// webext-ublock-origin-chromium installs them); "" turns them off.
	EasyListDir string
	// AutoconsentDir is the unpacked npm package of the consent engine;
	// "" leaves consent dialogs to the hiding rules alone.
	AutoconsentDir      string
	FilterRefresh       time.Duration
	ChromePath          string
	BrowserURLs         []string
	LocalBrowsers       int
	AllowPrivateTargets bool
	// HealthDetails shows connection errors, paths, bucket names, process
	// ids and browser addresses in the public /health and /health/ready.
	HealthDetails bool
	// AllowedTargetsOnly refuses every target outside AllowedPrivate,
	// public addresses too.
	AllowedTargetsOnly bool
	// BrowserToken authenticates the API to the browser supervisors
	// (`server browser`), and BrowserTokenPrevious is still accepted
	// during a rotation.
	BrowserToken, BrowserTokenPrevious string
	// BrowserListen is the supervisor's address.
	BrowserListen  string
	AllowedPrivate string // ALLOWED_PRIVATE_TARGETS, parsed by netguard
	ProxyHost      string // where per-render proxies listen for the browsers
	ShutdownGrace  time.Duration
	ShutdownDelay  time.Duration
	MetricsPort    int // -1: no metrics listener

	LogLevel  string // debug | info | warn | error
	LogFormat string // json | text

	redisHostSet bool
}

// Plans are the figures of the plans: requests per rate window and
// screenshots per month (0: unlimited).
type Plans struct {
	FreeRate, FreeQuota             int
	ProRate, ProQuota               int
	EnterpriseRate, EnterpriseQuota int
}

// Storage is the S3-compatible object storage.
type Storage struct {
	AccessKeyID     string
	SecretAccessKey string
	Region          string
	Bucket          string
	URL             string
	Endpoint        string
	UsePathStyle    bool
}

// Configured reports whether object storage settings were given.
func (s Storage) Configured() bool { return s.URL != "" || s.Endpoint != "" || s.Bucket != "" }

// UsesDatabase reports whether a relational database is configured; without
// one the server uses its embedded store in DataDir.
func (c *Config) UsesDatabase() bool { return c.DatabaseURL != "" || c.DatabaseHost != "" }

// UsesRedis reports whether a key-value store is configured.
func (c *Config) UsesRedis() bool { return c.RedisURL != "" || c.redisHostSet }

// RedisAddr is host:port of the key-value store from the parts.
func (c *Config) RedisAddr() string { return fmt.Sprintf("%s:%d", c.RedisHost, c.RedisPort) }

// DefaultEasyListDir is where Debian's webext-ublock-origin-chromium puts
// its EasyList and EasyPrivacy snapshots.
const DefaultEasyListDir = "/usr/share/chromium/extensions/ublock-origin/assets/thirdparties/easylist"

// AutoconsentVersion is the consent engine's release that make deps
// installs into the tool cache (the Makefile pins the same one).
const AutoconsentVersion = "16.23.0"

// AutoconsentCacheDir is where make deps unpacks the consent engine: the
// tool cache, keyed by version; "" without a home or cache directory.
func AutoconsentCacheDir(getenv func(string) string) string {
	cache := getenv("XDG_CACHE_HOME")
	if cache == "" && getenv("HOME") != "" {
		cache = filepath.Join(getenv("HOME"), ".cache")
	}
	if cache == "" {
		return ""
	}
	return filepath.Join(cache, "shutter", "autoconsent-"+AutoconsentVersion, "package")
}

// defaultAutoconsentDir is the consent engine of the tool cache (make
// deps), else of the server image.
func defaultAutoconsentDir(getenv func(string) string) string {
	dirs := []string{"/usr/share/shutter/autoconsent"}
	if d := AutoconsentCacheDir(getenv); d != "" {
		dirs = append([]string{d}, dirs...)
	}
	for _, d := range dirs {
		if st, err := os.Stat(filepath.Join(d, "dist", "autoconsent.playwright.js")); err == nil && !st.IsDir() {
			return d
		}
	}
	return ""
}

// Load reads the settings through getenv (os.Getenv in production).
func Load(getenv func(string) string) (*Config, error) {
	r := reader{getenv: getenv}
	c := &Config{
		Port:                r.int("PORT", 3000, 0, 65535),
		NodeEnv:             r.enum("NODE_ENV", "development", "development", "production"),
		DataDir:             r.str("DATA_DIR", "./data"),
		DatabaseURL:         r.url("DATABASE_URL", "postgres", "postgresql"),
		DatabaseHost:        r.str("DATABASE_HOST", ""),
		DatabasePort:        r.int("DATABASE_PORT", 5432, 1, 65535),
		DatabaseName:        r.str("DATABASE_NAME", ""),
		DatabaseUser:        r.str("DATABASE_USER", ""),
		DatabasePassword:    r.str("DATABASE_PASSWORD", ""),
		RedisURL:            r.url("REDIS_URL", "redis", "rediss"),
		RedisHost:           r.str("REDIS_HOST", "localhost"),
		RedisPort:           r.int("REDIS_PORT", 6379, 1, 65535),
		RedisPassword:       r.str("REDIS_PASSWORD", ""),
		AuthSecret:          r.str("AUTH_SECRET", ""),
		APIKeyPrefix:        r.str("DEFAULT_API_KEY_PREFIX", "ss"),
		IdentityClientID:    r.str("IDENTITY_CLIENT_ID", ""),
		BillingAccessToken:  r.str("BILLING_ACCESS_TOKEN", ""),
		BillingEnvironment:  r.enum("BILLING_ENVIRONMENT", "sandbox", "sandbox", "production"),
		RateLimitWindow:     r.ms("RATE_LIMIT_WINDOW_MS", 60000, 1000, 24*3600*1000),
		RateLimitMax:        r.int("RATE_LIMIT_MAX_REQUESTS", 100, 1, 1_000_000),
		KeyCacheTTL:         r.ms("KEY_CACHE_TTL_MS", 5000, 0, 600_000),
		DatabaseMaxConns:    r.int("DATABASE_POOL_MAX_CONNS", 10, 1, 1000),
		MaxConcurrent:       r.int("MAX_CONCURRENT_SCREENSHOTS", 10, 1, 256),
		MaxQueued:           r.int("MAX_QUEUED_SCREENSHOTS", 100, 0, 100_000),
		QueueTimeout:        r.ms("QUEUE_TIMEOUT_MS", 10000, 1, 600_000),
		ScreenshotTimeout:   r.ms("SCREENSHOT_TIMEOUT", 30000, 1000, 600_000),
		PageLoadTimeout:     r.ms("MAX_PAGE_LOAD_TIMEOUT", 30000, 500, 600_000),
		NetworkIdle:         r.ms("NETWORK_IDLE_MS", 30, 1, 10_000),
		MaxWidth:            r.int("MAX_SCREENSHOT_WIDTH", 3840, 100, 16384),
		MaxHeight:           r.int("MAX_SCREENSHOT_HEIGHT", 2160, 100, 16384),
		DefaultWidth:        r.int("DEFAULT_VIEWPORT_WIDTH", 1280, 100, 16384),
		DefaultHeight:       r.int("DEFAULT_VIEWPORT_HEIGHT", 720, 100, 16384),
		ChromePath:          r.str("CHROME_PATH", ""),
		BrowserURLs:         r.list("BROWSER_URLS"),
		LocalBrowsers:       r.int("LOCAL_BROWSERS", 1, 1, 32),
		AllowPrivateTargets: r.bool("ALLOW_PRIVATE_TARGETS", false),
		ShutdownGrace:       r.ms("SHUTDOWN_GRACE_MS", 30000, 0, 600_000),
		ShutdownDelay:       r.ms("SHUTDOWN_DELAY_MS", 0, 0, 600_000),
		MetricsPort:         r.int("METRICS_PORT", 9464, -1, 65535),
		LogLevel:            r.enum("LOG_LEVEL", "info", "debug", "info", "warn", "error"),
		Storage: Storage{
			AccessKeyID:     r.str("STORAGE_ACCESS_KEY_ID", ""),
			SecretAccessKey: r.str("STORAGE_SECRET_ACCESS_KEY", ""),
			Region:          r.str("STORAGE_REGION", ""),
			Bucket:          r.str("STORAGE_BUCKET", ""),
			URL:             r.str("STORAGE_URL", ""),
			Endpoint:        r.str("STORAGE_ENDPOINT", ""),
			UsePathStyle:    r.bool("STORAGE_USE_PATH_STYLE_ENDPOINT", false),
		},
	}
	c.redisHostSet = r.str("REDIS_HOST", "") != ""
	c.AllowedPrivate = r.str("ALLOWED_PRIVATE_TARGETS", "")
	c.ProxyHost = r.str("PROXY_HOST", r.str("POD_IP", "127.0.0.1"))
	c.FilterLists = map[string][]string{
		"ads": r.list("FILTER_LISTS_ADS"), "trackers": r.list("FILTER_LISTS_TRACKERS"), "cookies": r.list("FILTER_LISTS_COOKIES"),
	}
	c.AllowedTargetsOnly = r.bool("ALLOWED_TARGETS_ONLY", false)
	c.BrowserToken = r.str("BROWSER_TOKEN", "")
	c.BrowserTokenPrevious = r.str("BROWSER_TOKEN_PREVIOUS", "")
	c.BrowserListen = r.str("BROWSER_LISTEN", ":9222")
	c.HealthDetails = r.bool("HEALTH_DETAILS", c.NodeEnv != "production")
	c.AutoconsentDir = r.str("AUTOCONSENT_DIR", defaultAutoconsentDir(getenv))
	if c.AutoconsentDir == "off" {
		c.AutoconsentDir = ""
	}
	c.EasyListDir = r.str("EASYLIST_DIR", DefaultEasyListDir)
	if r.getenv("EASYLIST_DIR") == "off" {
		c.EasyListDir = ""
	}
	c.readAccounts(&r)
	c.FilterRefresh = r.ms("FILTER_LISTS_REFRESH_MS", 24*3600*1000, 0, 30*24*3600*1000)
	c.Plans = Plans{
		FreeRate: r.int("PLAN_FREE_RATE_LIMIT", 10, 1, 1_000_000), FreeQuota: r.int("PLAN_FREE_MONTHLY_QUOTA", 100, 0, 1<<31-1),
		ProRate: r.int("PLAN_PRO_RATE_LIMIT", 60, 1, 1_000_000), ProQuota: r.int("PLAN_PRO_MONTHLY_QUOTA", 1000, 0, 1<<31-1),
		EnterpriseRate:  r.int("PLAN_ENTERPRISE_RATE_LIMIT", c.RateLimitMax, 1, 1_000_000),
		EnterpriseQuota: r.int("PLAN_ENTERPRISE_MONTHLY_QUOTA", 0, 0, 1<<31-1),
	}
	defaultFormat := "text"
	if c.NodeEnv == "production" {
		defaultFormat = "json"
	}
	c.LogFormat = r.enum("LOG_FORMAT", defaultFormat, "json", "text")
	if r.err != nil {
		return nil, r.err
	}
	switch {
	case c.DefaultWidth > c.MaxWidth:
		return nil, fmt.Errorf("DEFAULT_VIEWPORT_WIDTH: must not exceed MAX_SCREENSHOT_WIDTH (%d), got %d", c.MaxWidth, c.DefaultWidth)
	case c.DefaultHeight > c.MaxHeight:
		return nil, fmt.Errorf("DEFAULT_VIEWPORT_HEIGHT: must not exceed MAX_SCREENSHOT_HEIGHT (%d), got %d", c.MaxHeight, c.DefaultHeight)
	case c.PageLoadTimeout > c.ScreenshotTimeout:
		// The load wait happens inside the screenshot deadline.
		c.PageLoadTimeout = c.ScreenshotTimeout
	}
	if err := c.checkAccounts(); err != nil {
		return nil, err
	}
	if c.DatabaseHost != "" && c.DatabaseURL == "" {
		for _, s := range []struct{ name, v string }{{"DATABASE_NAME", c.DatabaseName}, {"DATABASE_USER", c.DatabaseUser}} {
			if s.v == "" {
				return nil, fmt.Errorf("%s: required when DATABASE_HOST is set", s.name)
			}
		}
	}
	for _, u := range c.BrowserURLs {
		if _, err := url.Parse(u); err != nil || !strings.Contains(u, "://") {
			return nil, fmt.Errorf("BROWSER_URLS: %q is not a URL such as http://127.0.0.1:9222 or ws://host:9222/devtools/browser/ID", u)
		}
	}
	return c, nil
}

// MinAuthSecret is the shortest AUTH_SECRET accepted.
const MinAuthSecret = 32

// readAccounts reads the settings of users, sessions and usage history.
func (c *Config) readAccounts(r *reader) {
	c.AuthSecretPrevious = r.str("AUTH_SECRET_PREVIOUS", "")
	signup := "open"
	if c.NodeEnv == "production" {
		signup = "closed"
	}
	c.Signup = r.enum("SIGNUP", signup, "closed", "invite", "open")
	c.SessionTTL = time.Duration(r.int("SESSION_TTL_HOURS", 30*24, 1, 365*24)) * time.Hour
	c.KeyRotationGrace = time.Duration(r.int("KEY_ROTATION_GRACE_HOURS", 24, 0, 30*24)) * time.Hour
	c.UsageHistory = r.bool("USAGE_HISTORY", true)
	c.RequestLogRetention = time.Duration(r.int("REQUEST_LOG_RETENTION", 7, 1, 365)) * 24 * time.Hour
	c.RequestLogPerKey = r.int("REQUEST_LOG_MAX_PER_KEY", 1000, 10, 1_000_000)
	c.IdentityIssuerURL = r.url("IDENTITY_ISSUER_URL", "https", "http")
	c.IdentityClientSecret = r.str("IDENTITY_CLIENT_SECRET", "")
	c.PublicURL = strings.TrimSuffix(r.url("VITE_SERVER_URL", "https", "http"), "/")
}

// checkAccounts refuses an AUTH_SECRET that cannot protect anything, and
// external sign-in without its issuer.
func (c *Config) checkAccounts() error {
	for _, s := range []struct{ name, v string }{{"AUTH_SECRET", c.AuthSecret}, {"AUTH_SECRET_PREVIOUS", c.AuthSecretPrevious}} {
		if s.v != "" && len(s.v) < MinAuthSecret {
			return fmt.Errorf("%s: must have at least %d bytes (e.g. openssl rand -hex 32), got %d", s.name, MinAuthSecret, len(s.v))
		}
	}
	if c.NodeEnv == "production" && c.AuthSecret == "" {
		return fmt.Errorf("AUTH_SECRET: required when NODE_ENV=production, at least %d bytes (e.g. openssl rand -hex 32)", MinAuthSecret)
	}
	if c.IdentityClientID != "" && c.IdentityIssuerURL == "" {
		return errors.New("IDENTITY_ISSUER_URL: required when IDENTITY_CLIENT_ID is set")
	}
	return nil
}

// DatabaseDSN is the connection string of the database, from DATABASE_URL or
// from the parts.
func (c *Config) DatabaseDSN() string {
	if c.DatabaseURL != "" || c.DatabaseHost == "" {
		return c.DatabaseURL
	}
	u := url.URL{Scheme: "postgres", Host: fmt.Sprintf("%s:%d", c.DatabaseHost, c.DatabasePort), Path: "/" + c.DatabaseName,
		User: url.UserPassword(c.DatabaseUser, c.DatabasePassword)}
	return u.String()
}

// reader collects the first error so that Load reads like a table.
type reader struct {
	getenv func(string) string
	err    error
}

func (r *reader) fail(name, rule, got string) {
	if r.err == nil {
		r.err = fmt.Errorf("%s: must be %s, got %q", name, rule, got)
	}
}

func (r *reader) str(name, def string) string {
	if v := strings.TrimSpace(r.getenv(name)); v != "" {
		return v
	}
	return def
}

func (r *reader) int(name string, def, lo, hi int) int {
	v := r.str(name, "")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		r.fail(name, fmt.Sprintf("an integer from %d to %d", lo, hi), v)
		return def
	}
	return n
}

func (r *reader) ms(name string, def, lo, hi int) time.Duration {
	return time.Duration(r.int(name, def, lo, hi)) * time.Millisecond
}

func (r *reader) bool(name string, def bool) bool {
	switch v := strings.ToLower(r.str(name, "")); v {
	case "":
		return def
	case "true", "1":
		return true
	case "false", "0":
		return false
	default:
		r.fail(name, "true or false", v)
		return def
	}
}

func (r *reader) enum(name, def string, allowed ...string) string {
	v := r.str(name, def)
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	r.fail(name, "one of "+strings.Join(allowed, ", "), v)
	return def
}

func (r *reader) url(name string, schemes ...string) string {
	v := r.str(name, "")
	if v == "" {
		return ""
	}
	u, err := url.Parse(v)
	if err == nil {
		for _, s := range schemes {
			if u.Scheme == s {
				return v
			}
		}
	}
	// Never echo the value: connection strings carry passwords.
	if r.err == nil {
		r.err = fmt.Errorf("%s: must be a URL starting with %s://", name, strings.Join(schemes, ":// or "))
	}
	return ""
}

func (r *reader) list(name string) []string {
	var out []string
	for p := range strings.SplitSeq(r.str(name, ""), ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

package screenshot

import (
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// NormalizeURL checks that raw is an absolute http or https URL without user
// information and returns it with a lower-case scheme and host.
func NormalizeURL(raw string) (*url.URL, error) {
	if strings.TrimSpace(raw) != raw {
		return nil, Errorf(EINVALID, "parameter url must not start or end with white space")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, Errorf(EINVALID, "parameter url is not a valid URL")
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, Errorf(EINVALID, "parameter url must start with http:// or https://")
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return nil, Errorf(EINVALID, "parameter url must name a host, as in https://example.com/")
	}
	if u.User != nil {
		return nil, Errorf(EINVALID, "parameter url must not contain user information (user:password@)")
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, Errorf(EINVALID, "parameter url: port %s is out of range (1 to 65535)", clip(port, 16))
		}
	}
	u.Host = strings.ToLower(u.Host)
	return u, nil
}

func applyURL(o *Options, v value) error {
	u, err := NormalizeURL(v.s)
	if err != nil {
		return err
	}
	o.URL = u.String()
	o.Target = u
	return nil
}

func applyUserAgent(o *Options, v value) error {
	if !httpguts.ValidHeaderFieldValue(v.s) {
		return Errorf(EINVALID, "parameter user_agent contains characters that are not allowed in a header")
	}
	o.UserAgent = v.s
	return nil
}

// lines are the non-empty lines of a list parameter, trimmed.
func lines(s string) []string {
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out
}

func applyBlockRequests(o *Options, v value) error {
	for _, line := range lines(v.s) {
		if strings.Trim(line, "*") == "" {
			return Errorf(EINVALID, "parameter block_requests: pattern %q would block every request, including the page itself", clip(line, 32))
		}
		o.BlockRequests = append(o.BlockRequests, line)
	}
	return nil
}

func applyBlockResources(o *Options, v value) error {
	o.BlockResources = v.arr
	return nil
}

// forbiddenHeaders may not be set by the client: they belong to the browser's
// own connection handling, or would let a request be smuggled.
var forbiddenHeaders = map[string]bool{
	"Host": true, "Content-Length": true, "Connection": true, "Keep-Alive": true,
	"Proxy-Authenticate": true, "Proxy-Authorization": true, "Proxy-Connection": true,
	"Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
}

// ParseHeaders parses `Name: Value` lines. Lines may end in CRLF; a CR or LF
// anywhere else, an invalid name or value, or a forbidden name is refused.
func ParseHeaders(s string) ([]Header, error) {
	var out []Header
	for n, line := range strings.Split(s, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		name, val, ok := strings.Cut(line, ":")
		if !ok {
			return nil, Errorf(EINVALID, "parameter headers: line %d is not of the form Name: Value", n+1)
		}
		val = strings.TrimSpace(val)
		if !httpguts.ValidHeaderFieldName(name) {
			return nil, Errorf(EINVALID, "parameter headers: line %d has an invalid header name", n+1)
		}
		if !httpguts.ValidHeaderFieldValue(val) || strings.ContainsAny(val, "\r\n") {
			return nil, Errorf(EINVALID, "parameter headers: line %d has an invalid header value", n+1)
		}
		canon := http.CanonicalHeaderKey(name)
		if forbiddenHeaders[canon] {
			return nil, Errorf(EINVALID, "parameter headers: %s may not be set", canon)
		}
		out = append(out, Header{Name: canon, Value: val})
	}
	return out, nil
}

func applyHeaders(o *Options, v value) error {
	h, err := ParseHeaders(v.s)
	o.Headers = h
	return err
}

// ParseCookies parses Set-Cookie lines. Lines may end in CRLF.
func ParseCookies(s string) ([]*http.Cookie, error) {
	var out []*http.Cookie
	for n, line := range strings.Split(s, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if strings.ContainsAny(line, "\r") {
			return nil, Errorf(EINVALID, "parameter cookies: line %d contains a carriage return", n+1)
		}
		c, err := http.ParseSetCookie(line)
		if err != nil {
			return nil, Errorf(EINVALID, "parameter cookies: line %d is not a valid Set-Cookie value (name=value; attributes)", n+1)
		}
		if c.Path == "" {
			c.Path = "/"
		}
		if err := cookieRules(c); err != nil {
			return nil, Errorf(EINVALID, "parameter cookies: line %d, cookie %q: %s", n+1, clip(c.Name, 64), err.Error())
		}
		out = append(out, c)
	}
	return out, nil
}

func applyCookies(o *Options, v value) error {
	c, err := ParseCookies(v.s)
	o.Cookies = c
	return err
}

// cookieRules refuses what Chromium would refuse to set, so that the client
// hears it as a 400 before any render.
func cookieRules(c *http.Cookie) error {
	switch {
	case !strings.HasPrefix(c.Path, "/"):
		return errors.New("its Path must start with /")
	case strings.HasPrefix(c.Name, "__Secure-") && !c.Secure:
		return errors.New("a __Secure- cookie must be Secure")
	case strings.HasPrefix(c.Name, "__Host-") && (!c.Secure || c.Path != "/" || c.Domain != ""):
		return errors.New("a __Host- cookie must be Secure, with Path=/ and no Domain")
	case c.SameSite == http.SameSiteNoneMode && !c.Secure:
		return errors.New("its SameSite=None needs Secure")
	}
	return nil
}

// cookieDomains checks every cookie's Domain against the target host: it
// must be the host or a parent domain of it (an IP-literal target takes no
// other Domain than itself); a cookie without one is a host-only cookie
// of the target (the browser sets it for the URL).
func cookieDomains(o *Options) error {
	host := o.Host()
	_, isIP := netipParse(host)
	for _, c := range o.Cookies {
		if c.Domain == "" {
			continue
		}
		d := strings.ToLower(strings.TrimPrefix(c.Domain, "."))
		if d != host && (isIP || !strings.HasSuffix(host, "."+d)) {
			return Errorf(EINVALID, "parameter cookies: cookie %q has Domain=%s, which does not match the target host %s (omit Domain, or name the host or a parent domain of it)",
				clip(c.Name, 64), clip(c.Domain, 64), host)
		}
	}
	return nil
}

func netipParse(host string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return a, err == nil
}

// MatchPattern reports whether the URL matches a block_requests pattern. `*`
// matches any run of characters; a pattern without `*` matches any URL that
// contains it. Matching is case-insensitive and linear in time.
func MatchPattern(pattern, u string) bool {
	pattern, u = strings.ToLower(pattern), strings.ToLower(u)
	if !strings.Contains(pattern, "*") {
		return strings.Contains(u, pattern)
	}
	parts := strings.Split(pattern, "*")
	// The first part anchors at the start, the last at the end; the middle
	// parts are found greedily left to right, which is correct for `*` alone.
	if !strings.HasPrefix(u, parts[0]) {
		return false
	}
	u = u[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(u, p)
		if i < 0 {
			return false
		}
		u = u[i+len(p):]
	}
	return strings.HasSuffix(u, last) && len(u) >= len(last)
}

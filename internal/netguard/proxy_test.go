package netguard

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

// TestProxyNeedsItsSessionCredentials: a client that finds a render's proxy
// port without the session's credentials gets 407, for plain requests and
// CONNECT alike, and the target receives nothing; with them it goes
// through.
func TestProxyNeedsItsSessionCredentials(t *testing.T) {
	var hits atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Header.Get("Proxy-Authorization") != "" {
			t.Error("the proxy passed its credentials on to the target")
		}
		io.WriteString(w, "reached")
	}))
	defer target.Close()
	p := &Proxy{Guard: &Guard{AllowNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}}
	s, err := p.start(func(string, error) {})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	proxyURL, _ := url.Parse(s.URL)

	for name, user := range map[string]*url.Userinfo{
		"no credentials":      nil,
		"wrong password":      url.UserPassword(s.User, "guess"),
		"another session's":   url.UserPassword(randomToken(), randomToken()),
		"right user, no pass": url.User(s.User),
	} {
		pu := *proxyURL
		pu.User = user
		c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(&pu)}}
		resp, err := c.Get(target.URL + "/")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusProxyAuthRequired {
			t.Errorf("%s: status %d, want 407", name, resp.StatusCode)
		}
	}
	// CONNECT without credentials.
	conn, err := net.Dial("tcp", proxyURL.Host)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", strings.TrimPrefix(target.URL, "http://"), strings.TrimPrefix(target.URL, "http://"))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if resp.StatusCode != http.StatusProxyAuthRequired {
		t.Errorf("CONNECT: status %d, want 407", resp.StatusCode)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the target received %d requests without credentials", n)
	}

	pu := *proxyURL
	pu.User = url.UserPassword(s.User, s.Password)
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(&pu)}}
	resp, err = c.Get(target.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "reached" || hits.Load() != 1 {
		t.Errorf("with the credentials: %d %q", resp.StatusCode, body)
	}
}

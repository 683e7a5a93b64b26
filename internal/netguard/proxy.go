package netguard

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"time"

	"github.com/shutterhq/shutter/internal/screenshot"
)

// Proxy is the wall that pins what the Guard checked: the browser sends all
// of a render's traffic (documents, subresources, redirects, iframes,
// fetch, WebSocket, EventSource, workers, prefetch) through it, and the
// proxy resolves every host itself, refuses the connection when any address
// fails the policy, and connects to the very address it checked. The
// browser never resolves names, so a DNS answer that changes between the
// check and the connection (rebinding) gains nothing.
//
// Each render gets a session: a listener of its own, so that a refusal is
// told to that render.
type Proxy struct {
	Guard *Guard
	// Host is the address the listeners bind and the browsers connect to:
	// 127.0.0.1 for local browsers, the pod's address for remote ones.
	Host string
	Log  *slog.Logger
}

// Session is one render's proxy listener.
type Session struct {
	// URL is the proxy server setting for the browser context.
	URL string
	// User and Password are the session's own random credentials: every
	// request without them is answered 407 and goes nowhere, so a client
	// that finds the port during a render cannot use it.
	User, Password string
	auth           string // the expected Proxy-Authorization value

	ln     net.Listener
	srv    *http.Server
	mu     sync.Mutex
	refuse func(host string, err error)
	wg     sync.WaitGroup
}

var _ screenshot.Outbound = (*Proxy)(nil)

// Open opens a render's session; onRefuse is told about every refused
// connection, by host.
func (p *Proxy) Open(onRefuse func(host string, err error)) (*screenshot.ProxySession, error) {
	s, err := p.start(onRefuse)
	if err != nil {
		return nil, err
	}
	return &screenshot.ProxySession{URL: s.URL, User: s.User, Password: s.Password, Close: s.Close}, nil
}

// start opens a session.
func (p *Proxy) start(onRefuse func(host string, err error)) (*Session, error) {
	host := p.Host
	if host == "" {
		host = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("outbound proxy: %w", err)
	}
	s := &Session{URL: "http://" + ln.Addr().String(), ln: ln, refuse: onRefuse, User: randomToken(), Password: randomToken()}
	s.auth = "Basic " + base64.StdEncoding.EncodeToString([]byte(s.User+":"+s.Password))
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = pr.In.URL // absolute-form request of a proxy client
			pr.Out.Host = pr.In.Host
			pr.Out.Header.Del("Proxy-Connection")
			pr.Out.Header.Del("Proxy-Authorization")
		},
		Transport: &http.Transport{
			DialContext:           s.dialer(p.Guard),
			Proxy:                 nil,
			ForceAttemptHTTP2:     false,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       30 * time.Second,
			ResponseHeaderTimeout: 5 * time.Minute,
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			// Close without an answer: the browser reports a network error
			// rather than rendering a proxy's page as if it were the site's.
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, herr := hj.Hijack(); herr == nil {
					c.Close()
					return
				}
			}
			w.WriteHeader(http.StatusBadGateway)
		},
		ErrorLog: nil,
	}
	s.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if subtle.ConstantTimeCompare([]byte(r.Header.Get("Proxy-Authorization")), []byte(s.auth)) != 1 {
				w.Header().Set("Proxy-Authenticate", `Basic realm="shutter"`)
				http.Error(w, "proxy authentication required", http.StatusProxyAuthRequired)
				return
			}
			if r.Method == http.MethodConnect {
				s.tunnel(w, r, p.Guard)
				return
			}
			if !r.URL.IsAbs() {
				http.Error(w, "proxy requests only", http.StatusBadRequest)
				return
			}
			rp.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 30 * time.Second,
	}
	if p.Log != nil {
		s.srv.ErrorLog = slog.NewLogLogger(p.Log.Handler(), slog.LevelDebug)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.srv.Serve(ln)
	}()
	return s, nil
}

// Close stops the session and every connection it carries.
func (s *Session) Close() {
	s.srv.Close()
	s.wg.Wait()
}

func (s *Session) refused(host string, err error) {
	s.mu.Lock()
	f := s.refuse
	s.mu.Unlock()
	if f != nil {
		f(host, err)
	}
}

// dialer resolves, checks and dials the checked address.
func (s *Session) dialer(g *Guard) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		ips, err := g.checkedAddrs(ctx, host)
		if err != nil {
			if errors.Is(err, ErrPrivate) {
				s.refused(host, err)
			}
			return nil, err
		}
		var d net.Dialer
		d.Timeout = 30 * time.Second
		var last error
		for _, ip := range ips {
			c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ip.String(), port))
			if err == nil {
				return c, nil
			}
			last = err
		}
		return nil, last
	}
}

// tunnel serves CONNECT (HTTPS and secure WebSockets).
func (s *Session) tunnel(w http.ResponseWriter, r *http.Request, g *Guard) {
	upstream, err := s.dialer(g)(r.Context(), "tcp", r.Host)
	if err != nil {
		http.Error(w, "refused", http.StatusForbidden)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		upstream.Close()
		http.Error(w, "no hijacking", http.StatusInternalServerError)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		upstream.Close()
		return
	}
	client.Write([]byte("HTTP/1.1 200 Connection Established\r\n\r\n"))
	done := make(chan struct{}, 2)
	go func() {
		if buf.Reader.Buffered() > 0 {
			io.CopyN(upstream, buf, int64(buf.Reader.Buffered()))
		}
		io.Copy(upstream, client)
		done <- struct{}{}
	}()
	go func() {
		io.Copy(client, upstream)
		done <- struct{}{}
	}()
	<-done
	client.Close()
	upstream.Close()
	<-done
}

// randomToken is 128 random bits in hex.
func randomToken() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b[:])
}

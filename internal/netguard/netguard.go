// Package netguard is the outbound-request policy: which URLs the browser may
// fetch. It reads hosts the way a browser does (numeric IPv4 forms included),
// resolves names, and refuses any target with an address that is not public
// unless private targets are allowed.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shutterhq/shutter/internal/netranges"
	"github.com/shutterhq/shutter/internal/screenshot"
)

// Guard checks target URLs.
type Guard struct {
	// AllowPrivate lets loopback, private and link-local targets through.
	AllowPrivate bool
	// AllowNets and AllowHosts let these non-public targets through while
	// the rest stay refused (ALLOWED_PRIVATE_TARGETS).
	AllowNets  []netip.Prefix
	AllowHosts []string
	// OnlyAllowed refuses every target outside AllowNets and AllowHosts,
	// public ones too, and resolves no name that AllowHosts does not list
	// (ALLOWED_TARGETS_ONLY: an instance that may capture only its
	// intranet, or a test that must not leave the machine).
	OnlyAllowed bool
	// Resolver resolves host names; nil means net.DefaultResolver.
	Resolver *net.Resolver
	// Lookup, when set, replaces the resolver (tests use it to answer as
	// public DNS would).
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	// Timeout bounds one resolution.
	Timeout time.Duration
}

// ParseAllowList reads ALLOWED_PRIVATE_TARGETS: CIDRs, addresses and host
// names, comma-separated.
func ParseAllowList(s string) (nets []netip.Prefix, hosts []string, err error) {
	for item := range strings.SplitSeq(s, ",") {
		item = strings.ToLower(strings.TrimSpace(item))
		switch {
		case item == "":
		case strings.Contains(item, "/"):
			p, err := netip.ParsePrefix(item)
			if err != nil {
				return nil, nil, fmt.Errorf("%q is not a CIDR", item)
			}
			nets = append(nets, p.Masked())
		default:
			if a, ok := ParseHost(item); ok {
				nets = append(nets, netip.PrefixFrom(a, a.BitLen()))
			} else {
				hosts = append(hosts, strings.TrimSuffix(item, "."))
			}
		}
	}
	return nets, hosts, nil
}

// allowed applies the policy to one resolved address of host.
func (g *Guard) allowed(a netip.Addr, host string) bool {
	if !g.OnlyAllowed && (g.AllowPrivate || IsPublic(a)) {
		return true
	}
	a = a.Unmap()
	for _, p := range g.AllowNets {
		if p.Contains(a) {
			return true
		}
	}
	h := normalizeHost(host)
	for _, allowed := range g.AllowHosts {
		if h == allowed {
			return true
		}
	}
	return false
}

func normalizeHost(h string) string {
	return strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(strings.ToLower(h), "["), "]"), ".")
}

// ErrPrivate marks a refused non-public target.
var ErrPrivate = errors.New("target address is not public")

var _ screenshot.Guard = (*Guard)(nil)

// CheckURL refuses a URL whose scheme is not http(s) or whose host resolves
// to any address that is not public. A name that does not resolve is an
// EUPSTREAM error; a refused address is EINVALID.
func (g *Guard) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return screenshot.Errorf(screenshot.EINVALID, "not a valid URL")
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	case "ws", "wss":
	default:
		return screenshot.Errorf(screenshot.EINVALID, "scheme %q is not allowed", u.Scheme)
	}
	if g.AllowPrivate && !g.OnlyAllowed {
		return nil
	}
	host := strings.ToLower(u.Hostname())
	if _, err := g.checkedAddrs(ctx, host); err != nil {
		var r *refusedError
		if errors.As(err, &r) {
			// The address stays in the log: a client that learned what an
			// internal name resolves to would have a DNS oracle.
			return &screenshot.Error{Code: screenshot.EINVALID,
				Message: fmt.Sprintf("target host %q is not a public address", host),
				Err:     r}
		}
		return &screenshot.Error{Code: screenshot.EUPSTREAM,
			Message: fmt.Sprintf("could not load the page: the host name %q could not be resolved", host), Err: err}
	}
	return nil
}

// refusedError is an address of host that the policy refuses.
type refusedError struct {
	host string
	addr netip.Addr
}

func (e *refusedError) Error() string {
	if !e.addr.IsValid() {
		return fmt.Sprintf("%s: %s is not an allowed target", ErrPrivate, e.host)
	}
	return fmt.Sprintf("%s: %s resolves to %s", ErrPrivate, e.host, e.addr)
}
func (e *refusedError) Unwrap() error { return ErrPrivate }

// checkedAddrs resolves host and returns its addresses when every one of
// them passes the policy; otherwise a resolution error or a *refusedError.
// The URL check and the proxy both decide through it.
func (g *Guard) checkedAddrs(ctx context.Context, host string) ([]netip.Addr, error) {
	if _, literal := ParseHost(host); g.OnlyAllowed && !literal && !slices.Contains(g.AllowHosts, normalizeHost(host)) {
		// Not even a DNS question leaves for a name outside the list.
		return nil, &refusedError{host: host}
	}
	addrs, err := g.resolve(ctx, normalizeHost(host))
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if !g.allowed(a, host) {
			return nil, &refusedError{host: host, addr: a}
		}
	}
	return addrs, nil
}

// CheckRequest is CheckURL for the requests a page makes: schemes that never
// reach the network (data:, blob:, about:) pass as they are.
func (g *Guard) CheckRequest(ctx context.Context, raw string) error {
	scheme, _, _ := strings.Cut(raw, ":")
	switch strings.ToLower(scheme) {
	case "data", "blob", "about":
		return nil
	}
	return g.CheckURL(ctx, raw)
}

func (g *Guard) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, ok := ParseHost(host); ok {
		return []netip.Addr{a}, nil
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	if g.Lookup != nil {
		return g.Lookup(ctx, host)
	}
	r := g.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	timeout := g.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ips, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	if len(ips) == 0 {
		return nil, errors.New("no addresses")
	}
	return ips, nil
}

// ParseHost reads host as a browser would when it is an IP address: IPv6 in
// brackets or not, and IPv4 in the WHATWG forms (decimal 2130706433, octal
// 0177.0.0.1, hex 0x7f.1, short 127.1).
func ParseHost(host string) (netip.Addr, bool) {
	h := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if a, err := netip.ParseAddr(h); err == nil {
		return a.WithZone(""), true
	}
	return parseIPv4(strings.TrimSuffix(host, "."))
}

func parseIPv4(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) == 0 || len(parts) > 4 {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, ok := parseIPv4Number(p)
		if !ok {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	for _, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, false
		}
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, false
	}
	v := last
	for i, n := range nums[:len(nums)-1] {
		v += n << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true //nolint:gosec // v < 2^32, checked above
}

func parseIPv4Number(p string) (uint64, bool) {
	if p == "" {
		return 0, false
	}
	base := 10
	switch {
	case strings.HasPrefix(p, "0x") || strings.HasPrefix(p, "0X"):
		p, base = p[2:], 16
		if p == "" {
			return 0, true
		}
	case len(p) > 1 && p[0] == '0':
		p, base = p[1:], 8
	}
	n, err := strconv.ParseUint(p, base, 32)
	return n, err == nil
}

// IsPublic reports whether a is a globally routable unicast address. IPv6
// forms that embed an IPv4 address (mapped, compatible, NAT64, 6to4, Teredo)
// are judged by the address they embed.
func IsPublic(a netip.Addr) bool {
	a = a.WithZone("")
	if a.Is4In6() {
		return IsPublic(a.Unmap())
	}
	if a.Is6() {
		b := a.As16()
		switch {
		case isZero(b[:12]): // IPv4-compatible ::a.b.c.d
			return IsPublic(netip.AddrFrom4([4]byte(b[12:])))
		case isZero(b[:8]) && b[8] == 0xff && b[9] == 0xff && isZero(b[10:12]): // SIIT ::ffff:0:a.b.c.d
			return IsPublic(netip.AddrFrom4([4]byte(b[12:])))
		case b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && isZero(b[4:12]): // NAT64 64:ff9b::/96
			return IsPublic(netip.AddrFrom4([4]byte(b[12:])))
		case b[0] == 0x20 && b[1] == 0x02: // 6to4 2002::/16
			return IsPublic(netip.AddrFrom4([4]byte(b[2:6])))
		case b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0: // Teredo 2001::/32, client address inverted
			v4 := [4]byte{^b[12], ^b[13], ^b[14], ^b[15]}
			return IsPublic(netip.AddrFrom4(v4))
		}
	}
	for _, r := range netranges.Refused {
		if r.Prefix.Contains(a) {
			return false
		}
	}
	return a.IsGlobalUnicast()
}

func isZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

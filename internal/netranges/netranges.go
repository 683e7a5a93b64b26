// Package netranges is the one table of address ranges that Shutter refuses
// as destinations of a page: the server's outbound policy (netguard) judges
// every address with it, and the operator's NetworkPolicies exclude the same
// ranges from the browsers' egress. It holds data only.
package netranges

import "net/netip"

// Range is a refused range and why.
type Range struct {
	Prefix netip.Prefix
	Why    string
}

// Refused are the ranges that are never a public destination.
var Refused = []Range{
	{netip.MustParsePrefix("0.0.0.0/8"), "this network"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("168.63.129.16/32"), "Azure's platform endpoint (wire server)"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local, cloud metadata"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("192.88.99.0/24"), "former 6to4 relay anycast"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved, broadcast"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64"},
	{netip.MustParsePrefix("100::/64"), "discard"},
	{netip.MustParsePrefix("2001:2::/48"), "benchmarking"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("fc00::/7"), "unique local"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local (deprecated)"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

// Embedding are the IPv6 ranges whose addresses carry an IPv4 address. The
// Go policy judges such an address by the IPv4 address inside; a
// NetworkPolicy cannot look inside, so it refuses the whole range (the
// public IPv4 addresses stay reachable directly).
var Embedding = []Range{
	{netip.MustParsePrefix("::/96"), "IPv4-compatible"},
	{netip.MustParsePrefix("::ffff:0:0/96"), "IPv4-mapped"},
	{netip.MustParsePrefix("::ffff:0:0:0/96"), "SIIT"},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64"},
	{netip.MustParsePrefix("2001::/32"), "Teredo"},
	{netip.MustParsePrefix("2002::/16"), "6to4"},
}

// Except returns the CIDRs a NetworkPolicy ipBlock must exclude from
// 0.0.0.0/0 (v6 false) or ::/0 (v6 true): every refused range of that
// family, and for IPv6 the embedding ranges. The IPv4-mapped range is left
// out: Kubernetes refuses such CIDRs, and a connection to a mapped address
// leaves the pod as IPv4, where the IPv4 exceptions apply.
func Except(v6 bool) []string {
	var out []string
	add := func(rs []Range) {
		for _, r := range rs {
			if r.Prefix.Addr().Is6() == v6 && !r.Prefix.Addr().Is4In6() {
				out = append(out, r.Prefix.String())
			}
		}
	}
	add(Refused)
	if v6 {
		add(Embedding)
	}
	return out
}

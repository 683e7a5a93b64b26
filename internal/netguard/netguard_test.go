package netguard

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/shutterhq/shutter/internal/netranges"
	"github.com/shutterhq/shutter/internal/screenshot"
)

func TestParseHost(t *testing.T) {
	for host, want := range map[string]string{
		"127.0.0.1":          "127.0.0.1",
		"2130706433":         "127.0.0.1",
		"0177.0.0.1":         "127.0.0.1",
		"0x7f.0.0.1":         "127.0.0.1",
		"0x7f000001":         "127.0.0.1",
		"127.1":              "127.0.0.1",
		"127.0.1":            "127.0.0.1",
		"10.1":               "10.0.0.1",
		"169.254.169.254.":   "169.254.169.254",
		"[::1]":              "::1",
		"[::ffff:127.0.0.1]": "::ffff:127.0.0.1",
		"[fe80::1%25eth0]":   "fe80::1",
		"example.com":        "",
		"1.2.3.4.5":          "",
		"256.0.0.1":          "",
		"0x":                 "0.0.0.0",
		"4294967296":         "",
	} {
		a, ok := ParseHost(host)
		got := ""
		if ok {
			got = a.String()
		}
		if got != want {
			t.Errorf("ParseHost(%q) = %q, want %q", host, got, want)
		}
	}
}

func TestIsPublic(t *testing.T) {
	for addr, want := range map[string]bool{
		"8.8.8.8": true, "1.1.1.1": true, "2606:4700::1111": true,
		"127.0.0.1": false, "10.0.0.1": false, "172.16.5.4": false, "192.168.1.1": false,
		"169.254.169.254": false, "100.64.0.1": false, "0.0.0.0": false, "224.0.0.1": false,
		"255.255.255.255": false, "::": false, "::1": false, "fe80::1": false, "fd00:ec2::254": false,
		"ff02::1": false, "::ffff:127.0.0.1": false, "::ffff:8.8.8.8": true, "::127.0.0.1": false,
		"64:ff9b::7f00:1": false, "64:ff9b::808:808": true, "2002:7f00:1::": false, "2002:808:808::": true,
		"2001:0:4136:e378:8000:63bf:80ff:fffe": false, // Teredo embedding 127.0.0.1
		"168.63.129.16":                        false, "168.63.129.17": true, "192.88.99.1": false, "fec0::1": false,
		"2001:2::1": false, "2001:3::1": true, "::ffff:0:10.0.0.1": false, "::ffff:0:8.8.8.8": true,
	} {
		if got := IsPublic(netip.MustParseAddr(addr)); got != want {
			t.Errorf("IsPublic(%s) = %v, want %v", addr, got, want)
		}
	}
}

func TestCheckURL(t *testing.T) {
	g := &Guard{}
	ctx := context.Background()
	for _, u := range []string{
		"http://127.0.0.1/", "http://LOCALHOST:8080/", "http://a.localhost/", "http://2130706433/",
		"http://0177.0.0.1/", "http://[::ffff:127.0.0.1]/", "http://169.254.169.254/latest/meta-data/",
		"http://[::1]:3000/", "http://0/", "http://127.1/",
	} {
		err := g.CheckURL(ctx, u)
		if screenshot.ErrorCode(err) != screenshot.EINVALID {
			t.Errorf("CheckURL(%s) = %v, want EINVALID", u, err)
		}
	}
	if err := g.CheckURL(ctx, "http://8.8.8.8/"); err != nil {
		t.Errorf("public address refused: %v", err)
	}
	if err := g.CheckURL(ctx, "file:///etc/passwd"); screenshot.ErrorCode(err) != screenshot.EINVALID {
		t.Errorf("file URL: %v", err)
	}
	if err := g.CheckURL(ctx, "http://name.invalid/"); screenshot.ErrorCode(err) != screenshot.EUPSTREAM {
		t.Errorf("unresolvable name: %v, want EUPSTREAM", err)
	}
	if err := (&Guard{AllowPrivate: true}).CheckURL(ctx, "http://127.0.0.1/"); err != nil {
		t.Errorf("AllowPrivate: %v", err)
	}
	if err := g.CheckRequest(ctx, "data:image/png;base64,AAAA"); err != nil {
		t.Errorf("data: subresource refused: %v", err)
	}
}

func FuzzParseHost(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "0x7f.1", "017700000001", "[::1]", "1.2.3", "example.com", "0x.0x.0x.0x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		a, ok := ParseHost(host)
		if ok && !a.IsValid() {
			t.Fatalf("ParseHost(%q) returned an invalid address", host)
		}
		if ok {
			IsPublic(a)
		}
	})
}

// TestRefusalSaysNoAddress: the client learns that an internal name is
// refused, not what it resolves to (the API is no DNS oracle); the log
// keeps the address through the wrapped error.
func TestRefusalSaysNoAddress(t *testing.T) {
	g := &Guard{Lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("10.96.0.1")}, nil
	}}
	err := g.CheckURL(context.Background(), "https://kubernetes.default.svc/")
	if screenshot.ErrorCode(err) != screenshot.EINVALID {
		t.Fatalf("err = %v", err)
	}
	if msg := screenshot.ErrorMessage(err); strings.Contains(msg, "10.96") || !strings.Contains(msg, "not a public address") {
		t.Errorf("client message %q", msg)
	}
	if !strings.Contains(err.Error(), "10.96.0.1") {
		t.Errorf("the log detail lost the address: %v", err)
	}
}

func TestOnlyAllowed(t *testing.T) {
	asked := 0
	g := &Guard{OnlyAllowed: true, AllowNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, AllowHosts: []string{"intranet.test"},
		Lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
			asked++
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}}
	ctx := context.Background()
	for _, ok := range []string{"http://127.0.0.1:8080/", "http://intranet.test/"} {
		if err := g.CheckURL(ctx, ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, refused := range []string{"http://8.8.8.8/", "http://example.com/", "http://[2606:4700::1111]/"} {
		if err := g.CheckURL(ctx, refused); screenshot.ErrorCode(err) != screenshot.EINVALID {
			t.Errorf("%s: %v, want refused", refused, err)
		}
	}
	if asked != 1 {
		t.Errorf("%d lookups; only the listed name may be resolved", asked)
	}
}

// TestEveryRefusedRangeIsRefused reads the shared table: its first and last
// addresses are not public, nor their IPv4-mapped and NAT64 forms.
func TestEveryRefusedRangeIsRefused(t *testing.T) {
	for _, r := range netranges.Refused {
		first := r.Prefix.Masked().Addr()
		if IsPublic(first) {
			t.Errorf("%s (%s) is public", first, r.Why)
		}
		if first.Is4() {
			b := first.As4()
			if IsPublic(netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff, 12: b[0], 13: b[1], 14: b[2], 15: b[3]})) ||
				IsPublic(netip.AddrFrom16([16]byte{0: 0, 1: 0x64, 2: 0xff, 3: 0x9b, 12: b[0], 13: b[1], 14: b[2], 15: b[3]})) {
				t.Errorf("an embedded form of %s is public", first)
			}
		}
	}
}

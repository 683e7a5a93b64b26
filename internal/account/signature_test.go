package account

import (
	"strings"
	"testing"
)

func TestSplitSignature(t *testing.T) {
	sig := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		raw, signed, sig string
		present, bad     bool
	}{
		{raw: "a=1&b=2", signed: "a=1&b=2"},
		{raw: "a=1&signature=" + sig, signed: "a=1", sig: sig, present: true},
		{raw: "signature=" + sig + "&a=1", bad: true},
		{raw: "a=1&signature=" + sig + "&b=2", bad: true},
		{raw: "a=1&signature=" + sig + "&signature=" + sig, bad: true},
		{raw: "a=1&signature=" + strings.ToUpper(sig), bad: true},
		{raw: "a=1&signature=abc", bad: true},
		{raw: "a=1&signature=", bad: true},
		{raw: "a=1&signaturex=1", signed: "a=1&signaturex=1"},
	} {
		signed, s, present, err := SplitSignature(tc.raw)
		if tc.bad {
			if err == nil {
				t.Errorf("%q: accepted", tc.raw)
			}
			continue
		}
		if err != nil || signed != tc.signed || s != tc.sig || present != tc.present {
			t.Errorf("%q: %q %q %v %v", tc.raw, signed, s, present, err)
		}
	}
}

// FuzzSplitSignature: never panics; what it accepts as signed puts back
// together into the raw query, and the signed part never holds a
// signature parameter.
func FuzzSplitSignature(f *testing.F) {
	for _, s := range []string{"", "a=1", "a=1&signature=" + strings.Repeat("0", 64), "signature=x", "&&signature=&", "a=%26signature%3D"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		signed, sig, present, err := SplitSignature(raw)
		if err != nil {
			return
		}
		if present && signed+"&signature="+sig != raw || !present && signed != raw {
			t.Fatalf("%q split into %q + %q", raw, signed, sig)
		}
		for p := range strings.SplitSeq(signed, "&") {
			if name, _, _ := strings.Cut(p, "="); name == SignatureParam {
				t.Fatalf("%q: the signed part has a signature", raw)
			}
		}
	})
}

func TestSecretsRotate(t *testing.T) {
	old := NewSecrets(strings.Repeat("o", 32), "")
	sealed := old.Seal("sig_x")
	csrf := old.CSRFToken("session")
	next := NewSecrets(strings.Repeat("n", 32), strings.Repeat("o", 32))
	if plain, stale, err := next.Open(sealed); err != nil || plain != "sig_x" || !stale {
		t.Errorf("open under the previous secret: %q %v %v", plain, stale, err)
	}
	if !next.CheckCSRF("session", csrf) || next.CheckCSRF("other", csrf) {
		t.Error("CSRF token of the previous secret")
	}
	if _, _, err := NewSecrets(strings.Repeat("z", 32), "").Open(sealed); err == nil {
		t.Error("a sealed secret opened under an unrelated AUTH_SECRET")
	}
	if plain, stale, err := next.Open(next.Seal("y")); err != nil || plain != "y" || stale {
		t.Errorf("round trip: %q %v %v", plain, stale, err)
	}
}

func TestPasswords(t *testing.T) {
	h := HashPassword("correct horse battery")
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") || !VerifyPassword(h, "correct horse battery") ||
		VerifyPassword(h, "correct horse batterx") || VerifyPassword("", "") || VerifyPassword("$argon2id$garbage", "x") {
		t.Errorf("hash %q", h)
	}
	if a, b := HashPassword("same"), HashPassword("same"); a == b {
		t.Error("no salt")
	}
}

package account

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/shutterhq/shutter/internal/screenshot"
)

// SignatureParam is the query parameter that carries a request signature.
const SignatureParam = "signature"

// Sign is the signature of a raw query string: lowercase hex HMAC-SHA256
// keyed by the signing secret (the string as shown to the key's owner).
func Sign(signingSecret, rawQuery string) string {
	m := hmac.New(sha256.New, []byte(signingSecret))
	m.Write([]byte(rawQuery))
	return hex.EncodeToString(m.Sum(nil))
}

// SplitSignature separates a raw query string into the signed part and the
// signature. The signature must be the last parameter; anywhere else is an
// error, and so is a second one. present is false when there is none.
func SplitSignature(rawQuery string) (signed, signature string, present bool, err error) {
	i := strings.LastIndex(rawQuery, "&"+SignatureParam+"=")
	if i >= 0 {
		signed, signature = rawQuery[:i], rawQuery[i+len(SignatureParam)+2:]
	} else {
		signed = rawQuery
	}
	for p := range strings.SplitSeq(signed, "&") {
		name, _, _ := strings.Cut(p, "=")
		if name == SignatureParam {
			return "", "", false, screenshot.Errorf(screenshot.EINVALID, "signature must be the last parameter of the query")
		}
	}
	if i < 0 {
		return signed, "", false, nil
	}
	if strings.Contains(signature, "&") || len(signature) != 64 || strings.ToLower(signature) != signature {
		return "", "", false, screenshot.Errorf(screenshot.EINVALID, "signature must be 64 lowercase hex digits and the last parameter")
	}
	return signed, signature, true, nil
}

// VerifySignature compares in constant time.
func VerifySignature(signingSecret, signed, signature string) bool {
	return hmac.Equal([]byte(Sign(signingSecret, signed)), []byte(signature))
}

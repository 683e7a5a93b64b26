// Package browserauth is the small protocol between the API's browser pool
// and the browser supervisors: before the API sends its token, the
// supervisor proves that it knows it, so a pod that only copied the browser
// labels learns nothing and gets no renders.
package browserauth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
)

// HelloPath is where a client asks the supervisor for its proof:
// GET HelloPath?nonce=<hex> answers Hello.
const HelloPath = "/shutter/hello"

// Hello is the answer to HelloPath: the proof of the nonce under every
// token the supervisor accepts (the current one and, during a rotation,
// the previous one).
type Hello struct {
	Browser string   `json:"browser"` // always "shutter"
	Proofs  []string `json:"proofs"`
}

// Proof is the HMAC-SHA256 of the nonce under token, in hex; only a holder
// of the token can compute it.
func Proof(token, nonce string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("shutter-browser-hello:" + nonce))
	return hex.EncodeToString(m.Sum(nil))
}

// Nonce is 128 random bits in hex.
func Nonce() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b[:])
}

// Verify returns the token of tokens that one of the proofs proves, or "".
func Verify(h Hello, nonce string, tokens []string) string {
	if h.Browser != "shutter" {
		return ""
	}
	for _, t := range tokens {
		want := Proof(t, nonce)
		for _, p := range h.Proofs {
			if hmac.Equal([]byte(p), []byte(want)) {
				return t
			}
		}
	}
	return ""
}

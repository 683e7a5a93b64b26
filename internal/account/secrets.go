package account

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"

	"golang.org/x/crypto/hkdf"
)

// Secrets are the keys derived from AUTH_SECRET: one that seals signing
// secrets at rest (AES-256-GCM) and one that makes CSRF tokens (HMAC). The
// previous AUTH_SECRET, while set, still opens and verifies, so that an
// operator can rotate it without signing everybody out or losing a key.
type Secrets struct {
	current, previous *derived
}

type derived struct {
	seal cipher.AEAD
	csrf []byte
}

func derive(root string) *derived {
	key := func(purpose string) []byte {
		b := make([]byte, 32)
		if _, err := io.ReadFull(hkdf.New(sha256.New, []byte(root), nil, []byte("shutter "+purpose)), b); err != nil {
			panic(err) // 32 bytes are far below HKDF's limit
		}
		return b
	}
	block, err := aes.NewCipher(key("signing-secret sealing"))
	if err != nil {
		panic(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return &derived{seal: aead, csrf: key("csrf")}
}

// NewSecrets derives the keys from the root secret and, when not empty, the
// previous one.
func NewSecrets(root, previous string) *Secrets {
	s := &Secrets{current: derive(root)}
	if previous != "" {
		s.previous = derive(previous)
	}
	return s
}

func (s *Secrets) all() []*derived {
	if s.previous == nil {
		return []*derived{s.current}
	}
	return []*derived{s.current, s.previous}
}

// Seal encrypts a secret for storage.
func (s *Secrets) Seal(plain string) string {
	nonce := make([]byte, s.current.seal.NonceSize())
	rand.Read(nonce)
	return "v1:" + base64.RawStdEncoding.EncodeToString(s.current.seal.Seal(nonce, nonce, []byte(plain), nil))
}

// ErrUnsealable says that a sealed secret opens with neither AUTH_SECRET.
var ErrUnsealable = errors.New("a sealed secret opens with neither AUTH_SECRET nor AUTH_SECRET_PREVIOUS")

// Open decrypts a sealed secret. stale is true when only the previous
// secret opened it (it should be sealed again).
func (s *Secrets) Open(sealed string) (plain string, stale bool, err error) {
	raw, err := base64.RawStdEncoding.DecodeString(sealed[min(len(sealed), 3):])
	if len(sealed) < 3 || sealed[:3] != "v1:" || err != nil {
		return "", false, ErrUnsealable
	}
	for i, d := range s.all() {
		n := d.seal.NonceSize()
		if len(raw) < n {
			break
		}
		if b, err := d.seal.Open(nil, raw[:n], raw[n:], nil); err == nil {
			return string(b), i > 0, nil
		}
	}
	return "", false, ErrUnsealable
}

// CSRFToken is the CSRF token of a session: an HMAC of its hash, so it
// needs no storage and dies with the session.
func (s *Secrets) CSRFToken(sessionHash string) string {
	return csrf(s.current.csrf, sessionHash)
}

// CheckCSRF reports whether token is the session's CSRF token under the
// current or the previous secret.
func (s *Secrets) CheckCSRF(sessionHash, token string) bool {
	for _, d := range s.all() {
		if hmac.Equal([]byte(csrf(d.csrf, sessionHash)), []byte(token)) {
			return true
		}
	}
	return false
}

func csrf(key []byte, sessionHash string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("csrf:" + sessionHash))
	return hex.EncodeToString(m.Sum(nil))
}

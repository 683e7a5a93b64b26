package account

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Argon2id parameters: OWASP's first recommendation (19 MiB, two passes,
// one lane), about 30 ms here.
const (
	argonTime    = 2
	argonMemory  = 19 * 1024
	argonThreads = 1
	argonKeyLen  = 32
)

// MinPasswordLength is the shortest password accepted.
const MinPasswordLength = 10

// CheckPassword says what is wrong with a new password, or nil.
func CheckPassword(p string) error {
	if len([]rune(p)) < MinPasswordLength {
		return fmt.Errorf("password must have at least %d characters", MinPasswordLength)
	}
	if len(p) > 1024 {
		return fmt.Errorf("password must have at most 1024 bytes")
	}
	return nil
}

// HashPassword returns the argon2id hash of p in PHC string form.
func HashPassword(p string) string {
	salt := make([]byte, 16)
	rand.Read(salt)
	sum := argon2.IDKey([]byte(p), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		b64.EncodeToString(salt), b64.EncodeToString(sum))
}

// dummyHash is compared against when there is no user, so that an unknown
// email costs the same time as a wrong password.
var dummyHash = HashPassword("no such user; this never matches")

// VerifyPassword reports whether p matches hash. An empty or malformed hash
// is compared against a dummy one so that every "no" takes as long.
func VerifyPassword(hash, p string) bool {
	ok := hash != ""
	if !ok {
		hash = dummyHash
	}
	parts := strings.Split(hash, "$")
	var m, t uint32
	var threads uint8
	var v int
	if len(parts) != 6 || parts[1] != "argon2id" {
		parts, ok = strings.Split(dummyHash, "$"), false
	}
	_, err1 := fmt.Sscanf(parts[2], "v=%d", &v)
	_, err2 := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &threads)
	salt, err3 := base64.RawStdEncoding.DecodeString(parts[4])
	want, err4 := base64.RawStdEncoding.DecodeString(parts[5])
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || m > 1<<20 || t > 16 || threads == 0 || len(want) == 0 {
		return false
	}
	got := argon2.IDKey([]byte(p), salt, t, m, threads, uint32(len(want))) //nolint:gosec // len(want) is a decoded hash length
	return subtle.ConstantTimeCompare(got, want) == 1 && ok
}

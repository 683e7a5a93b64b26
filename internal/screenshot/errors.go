package screenshot

import (
	"errors"
	"fmt"
	"time"
)

// Code classifies an error for the client. The HTTP layer maps each code to
// one status in one table; nothing else decides statuses.
type Code string

const (
	EINVALID       Code = "invalid"       // the request is malformed: 400
	EUNAUTHORIZED  Code = "unauthorized"  // missing, unknown or revoked key: 403
	EFORBIDDEN     Code = "forbidden"     // the key may not do this (domain, quota): 403
	ENOTFOUND      Code = "not_found"     // 404
	EUNPROCESSABLE Code = "unprocessable" // well-formed but impossible (selector matched nothing): 422
	ERATELIMIT     Code = "rate_limited"  // 429
	EUPSTREAM      Code = "upstream"      // the target could not be reached: 502
	EUNAVAILABLE   Code = "unavailable"   // no capacity or a dependency is down: 503
	ETIMEOUT       Code = "timeout"       // the render ran past its deadline: 504
	EINTERNAL      Code = "internal"      // a bug or an unexpected failure: 500

	// The management API's own cases.
	EUNAUTHENTICATED Code = "unauthenticated" // no or bad session or token: 401
	ECONFLICT        Code = "conflict"        // the object exists already (an email in use): 409
	ETOOLARGE        Code = "too_large"       // a request body over its limit: 413
)

// Error is an error with a code and a message that is safe to show to the
// client. The wrapped Err carries the detail for the log only.
type Error struct {
	Code    Code
	Message string
	// RetryAfter, when positive, is sent as a Retry-After header.
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with a formatted client message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, or EINTERNAL.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the client message of err. Errors without a code get
// a generic message so that internal detail never reaches a client.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

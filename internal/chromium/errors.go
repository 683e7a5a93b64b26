package chromium

import (
	"context"
	"errors"
	"strings"

	"github.com/chromedp/chromedp"

	"github.com/shutterhq/shutter/internal/screenshot"
)

// classify turns an error of the DevTools layer into a coded error. This is
// the one place where the browser's error strings are read.
func classify(ctx context.Context, err error) error {
	var se *screenshot.Error
	if errors.As(err, &se) {
		return err
	}
	if errors.Is(err, errCrashed) {
		return &screenshot.Error{Code: screenshot.EUPSTREAM, Message: "the page crashed the browser's renderer", Err: err}
	}
	if ctx.Err() == context.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded) {
		return &screenshot.Error{Code: screenshot.ETIMEOUT, Message: "the screenshot was not ready within the time limit", Err: err}
	}
	if ctx.Err() != nil {
		// The client went away; nobody reads this answer.
		return &screenshot.Error{Code: screenshot.EUNAVAILABLE, Message: "the request was canceled", Err: err}
	}
	var le *chromedp.LoadError
	if errors.As(err, &le) {
		return &screenshot.Error{Code: screenshot.EUPSTREAM, Message: loadMessage(le.ErrorText), Err: err}
	}
	if strings.Contains(err.Error(), "Not attached to an active page") {
		// The page replaced itself (a reload, a navigation) under a step.
		return &screenshot.Error{Code: screenshot.EUPSTREAM, Message: "the page navigated away while it was being captured; it may reload itself", Err: err}
	}
	return err
}

// loadMessage explains a network error of Chromium (net/base/net_error_list.h).
func loadMessage(text string) string {
	switch {
	case text == "net::ERR_NAME_NOT_RESOLVED" || text == "net::ERR_NAME_RESOLUTION_FAILED":
		return "could not load the page: the host name could not be resolved (" + text + ")"
	case text == "net::ERR_CONNECTION_REFUSED":
		return "could not load the page: the connection was refused (" + text + ")"
	case text == "net::ERR_CONNECTION_TIMED_OUT" || text == "net::ERR_TIMED_OUT":
		return "could not load the page: the connection timed out (" + text + ")"
	case strings.Contains(text, "CERT") || strings.Contains(text, "SSL"):
		return "could not load the page: TLS error (" + text + ")"
	case text == "net::ERR_ABORTED":
		return "could not load the page: the navigation was aborted, for example by a download (" + text + ")"
	default:
		return "could not load the page (" + text + ")"
	}
}

package screenshot

import (
	"context"
	"time"
)

// The interfaces that the adapters implement, declared once here with the
// domain's own types. Each adapter asserts it: var _ screenshot.X = (*T)(nil).

// Guard is the outbound policy's check of a target before anything fetches
// it (netguard.Guard).
type Guard interface {
	CheckURL(ctx context.Context, rawURL string) error
}

// Locker takes short cross-replica locks (redisstore.Limiter). ok is false
// when another holder has the lock.
type Locker interface {
	Lock(ctx context.Context, name string, ttl time.Duration) (unlock func(), ok bool, err error)
}

// ContentFilter matches a page's requests against the filter lists of the
// enabled categories and gives the stylesheet that hides what they
// describe (blocking.Filter).
type ContentFilter interface {
	// Block says whether one of the categories blocks a request of the page
	// at pageURL, and which. subframe marks the document of an iframe; the
	// page's own document is never blocked.
	Block(categories []string, requestURL, pageURL, resourceType string, subframe bool) (category string, blocked bool)
	// CSS returns the stylesheet to apply as it is, and generic
	// element-hiding selectors by the class or id they need, for the page
	// to apply once it has such an element.
	CSS(categories []string, host string) (css string, lazy map[string][]string)
}

// ProxySession is one render's outbound proxy: the proxy server setting
// of its browser context, the session's credentials, and how to close it.
type ProxySession struct {
	URL, User, Password string
	Close               func()
}

// Outbound opens per-render proxies through which a browser context sends
// all of its traffic (netguard.Proxy). onRefuse is told each host whose
// connection the policy refused.
type Outbound interface {
	Open(onRefuse func(host string, err error)) (*ProxySession, error)
}

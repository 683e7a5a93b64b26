package account

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Identity is sign-in through an external OpenID Connect provider: the
// authorization code flow with PKCE and a nonce. The provider's metadata
// is discovered on first use (and again after a failure), so that a
// provider that is down does not keep the server from starting.
type Identity struct {
	Issuer, ClientID, ClientSecret string
	// HTTP is the client for the provider; nil uses a 10 s timeout.
	HTTP *http.Client

	mu       sync.Mutex
	provider *oidc.Provider
}

func (i *Identity) ctx(ctx context.Context) context.Context {
	c := i.HTTP
	if c == nil {
		c = &http.Client{Timeout: 10 * time.Second}
	}
	return oidc.ClientContext(ctx, c)
}

func (i *Identity) discover(ctx context.Context) (*oidc.Provider, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.provider != nil {
		return i.provider, nil
	}
	p, err := oidc.NewProvider(i.ctx(ctx), i.Issuer)
	if err != nil {
		return nil, fmt.Errorf("identity provider %s: %w", i.Issuer, err)
	}
	i.provider = p
	return p, nil
}

func (i *Identity) config(p *oidc.Provider, redirectURL string) *oauth2.Config {
	return &oauth2.Config{ClientID: i.ClientID, ClientSecret: i.ClientSecret, Endpoint: p.Endpoint(),
		RedirectURL: redirectURL, Scopes: []string{oidc.ScopeOpenID, "email"}}
}

// Flow is what one sign-in must remember between the redirect to the
// provider and its answer (kept sealed in a short-lived cookie).
type Flow struct {
	State    string    `json:"s"`
	Nonce    string    `json:"n"`
	Verifier string    `json:"v"`
	Return   string    `json:"r"` // a local path to go to afterwards
	Expires  time.Time `json:"e"`
}

// Start returns the provider's authorization URL for a new flow.
func (i *Identity) Start(ctx context.Context, redirectURL, returnTo string) (string, *Flow, error) {
	p, err := i.discover(ctx)
	if err != nil {
		return "", nil, err
	}
	f := &Flow{State: randomHex(16), Nonce: randomHex(16), Verifier: oauth2.GenerateVerifier(), Return: returnTo,
		Expires: time.Now().Add(10 * time.Minute)}
	u := i.config(p, redirectURL).AuthCodeURL(f.State, oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier))
	return u, f, nil
}

// ErrUnverifiedEmail is a provider's answer without a verified email.
var ErrUnverifiedEmail = errors.New("the identity provider did not vouch for an email address")

// Finish exchanges the code (with the flow's PKCE verifier), verifies the
// ID token (signature, issuer, audience, expiry, nonce) and returns its
// verified email.
func (i *Identity) Finish(ctx context.Context, redirectURL, code string, f *Flow) (string, error) {
	p, err := i.discover(ctx)
	if err != nil {
		return "", err
	}
	ctx = i.ctx(ctx)
	tok, err := i.config(p, redirectURL).Exchange(ctx, code, oauth2.VerifierOption(f.Verifier))
	if err != nil {
		return "", fmt.Errorf("code exchange: %w", err)
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok {
		return "", errors.New("the token response has no id_token")
	}
	id, err := p.Verifier(&oidc.Config{ClientID: i.ClientID}).Verify(ctx, raw)
	if err != nil {
		return "", fmt.Errorf("id token: %w", err)
	}
	if id.Nonce != f.Nonce {
		return "", errors.New("id token: the nonce does not match")
	}
	var claims struct {
		Email    string `json:"email"`
		Verified bool   `json:"email_verified"`
	}
	if err := id.Claims(&claims); err != nil {
		return "", fmt.Errorf("id token claims: %w", err)
	}
	if claims.Email == "" || !claims.Verified {
		return "", ErrUnverifiedEmail
	}
	return NormalizeEmail(claims.Email), nil
}

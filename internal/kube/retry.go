package kube

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Backoff is the retry policy for API calls: exponential with jitter,
// bounded in attempts and in total time.
type Backoff struct {
	Initial  time.Duration
	Max      time.Duration
	Attempts int
}

// DefaultBackoff retries for roughly half a minute before giving up.
var DefaultBackoff = Backoff{Initial: 200 * time.Millisecond, Max: 5 * time.Second, Attempts: 10}

// Retriable says whether an API error is worth another try: throttling,
// server-side timeouts and errors, conflicts, and connections that failed.
func Retriable(err error) bool {
	if err == nil {
		return false
	}
	switch {
	case apierrors.IsTooManyRequests(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
		apierrors.IsInternalError(err), apierrors.IsServiceUnavailable(err), apierrors.IsConflict(err):
		return true
	}
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		code := se.Status().Code
		return code == 429 || code >= 500
	}
	if untrusted(err) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}

// Unreachable says whether err means the API server could not be reached at
// all (connection refused, reset or cut off), as opposed to an answer from
// it. Once one call has used up its retries this way, the next ones will
// not fare better.
func Unreachable(err error) bool {
	if err == nil || untrusted(err) {
		return false
	}
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// Retry calls fn until it succeeds, returns a non-retriable error, the
// attempts run out, or ctx ends. fn is called at least once.
func (b Backoff) Retry(ctx context.Context, fn func() error) error {
	delay := b.Initial
	var err error
	for attempt := 1; ; attempt++ {
		if err = fn(); err == nil || !Retriable(err) || attempt >= b.Attempts {
			return err
		}
		wait := delay/2 + rand.N(delay/2+1)
		if s, ok := apierrors.SuggestsClientDelay(err); ok && time.Duration(s)*time.Second > wait {
			wait = time.Duration(s) * time.Second
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-time.After(wait):
		}
		if delay *= 2; delay > b.Max {
			delay = b.Max
		}
	}
}

// untrusted reports certificate errors: no retry will fix them.
func untrusted(err error) bool {
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	var cv *tls.CertificateVerificationError
	return errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci) || errors.As(err, &cv)
}

package sidecarset

import (
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
)

// retryOnConflict is retry.RetryOnConflict returning fn's last error as it is. client-go's returns
// nil when that error wraps context.DeadlineExceeded or context.Canceled (it takes them for its
// own backoff being interrupted), which would turn a write whose outcome is unknown into one that
// did nothing.
func retryOnConflict(backoff wait.Backoff, fn func() error) error {
	var last error
	err := retry.RetryOnConflict(backoff, func() error {
		last = fn()
		return last
	})
	if last != nil {
		return last
	}
	return err
}

// Package testrun holds the few helpers every component test needs around a running loop: run it
// in the background for the length of a test (and stop it, and wait for it, before the test's
// database goes), wait on a witness with a failsafe deadline, and log through the test.
//
// Tooling only: test files import it, product packages never do (internal/layout checks).
package testrun

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// Failsafe bounds every wait on a witness. It is never what a test asserts: a healthy run meets
// its witness long before, even with every core busy.
const Failsafe = 30 * time.Second

// WaitFor polls witness until it holds and fails t after Failsafe.
func WaitFor(t testing.TB, what string, witness func() bool) {
	t.Helper()
	deadline := time.Now().Add(Failsafe)
	for !witness() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Receive returns the next value from ch, failing t after Failsafe.
func Receive[T any](t testing.TB, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(Failsafe):
		t.Fatalf("gave up waiting for: %s", what)
		panic("unreachable")
	}
}

// Go runs run in the background until the test ends, then cancels its context and waits for it
// to return. Cleanups run last-registered first, so call Go after creating what run uses (its
// pool, its NATS connection): run stops before they close. A run that returns an error (other
// than context.Canceled) fails the test. The returned stop ends it early and returns that error.
func Go(t testing.TB, what string, run func(ctx context.Context) error) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			err = <-done
		})
		return err
	}
	t.Cleanup(func() {
		if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("%s returned %v", what, err)
		}
	})
	return stop
}

// Logger returns a logger writing through t.Log (shown for failing tests and with -v), silent
// once the test has finished so a straggling goroutine cannot log into a completed test.
func Logger(t testing.TB) *slog.Logger {
	return slog.New(&testHandler{state: newTestState(t)})
}

type testState struct {
	t    testing.TB
	mu   sync.Mutex
	done bool
}

func newTestState(t testing.TB) *testState {
	s := &testState{t: t}
	t.Cleanup(func() {
		s.mu.Lock()
		s.done = true
		s.mu.Unlock()
	})
	return s
}

type testHandler struct {
	state *testState
	attrs []slog.Attr
	group string
}

func (h *testHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *testHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
	for _, a := range h.attrs {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
	}
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s%s=%v", h.group, a.Key, a.Value)
		return true
	})
	h.state.mu.Lock()
	defer h.state.mu.Unlock()
	if !h.state.done {
		h.state.t.Log(b.String())
	}
	return nil
}

func (h *testHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &testHandler{state: h.state, attrs: append(append([]slog.Attr(nil), h.attrs...), attrs...), group: h.group}
}

func (h *testHandler) WithGroup(name string) slog.Handler {
	return &testHandler{state: h.state, attrs: h.attrs, group: h.group + name + "."}
}

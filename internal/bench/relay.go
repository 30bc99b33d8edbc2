package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/streamseal/streamseal/internal/harness"
)

// RelayRounds is how many (streamseal, outbox) pairs `bench relay` alternates; its ratio is the
// median of the pairs' ratios.
const RelayRounds = 3

// RelayResult carries `bench relay`'s figures: the medians over its pairs.
type RelayResult struct {
	RelayP50, RelayP99, RawRelayP99 time.Duration
	RelayP99Ratio                   float64
}

// Relay measures the relay-lag phase of `bench repair` alone (issue 20), without the redelivery
// before it: the origin holds opts.Missing stamped and relayed events, then streamseal's relay
// and the raw outbox relay (RawPipeline.OutboxRelay) take the same steady append in RelayRounds
// alternating pairs, so load that drifts weighs on both; each pair prints streamseal's lag by
// stage. relay_p99_ratio is the median of the pairs' ratios.
func Relay(ctx context.Context, newDB harness.NewDatabase, opts RepairOptions, out io.Writer) (RelayResult, error) {
	var r RelayResult
	load := watchLoad(out)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	h, err := harness.New(ctx, newDB, quiet)
	if err != nil {
		return r, err
	}
	defer h.Close()
	rounds := &relayRounds{}
	orders, err := h.Start(ctx, "orders", harness.Options{}, rounds.observe)
	if err != nil {
		return r, err
	}
	billing, err := h.Start(ctx, "billing", harness.Options{}, nil)
	if err != nil {
		return r, err
	}
	if err := appendHistory(ctx, orders.Pool, opts.Missing, opts.PayloadBytes); err != nil {
		return r, err
	}
	if err := waitUntil(ctx, func() (bool, error) {
		var through int64
		err := orders.Pool.QueryRow(ctx, "select published_through from streamseal.relay_state").Scan(&through)
		return through == int64(opts.Missing), err
	}); err != nil {
		return r, err
	}
	raw, closeRaw, err := rawPipelineOn(h, orders, billing)
	if err != nil {
		return r, err
	}
	defer closeRaw()
	fmt.Fprintf(out, "relay benchmark: %d events of history; relay lag at %d events/s for %s, %d pairs (streamseal, outbox relay)\n",
		opts.Missing, opts.RelayRate, opts.RelayFor, RelayRounds)
	var p50s, p99s, rawP99s, ratios []float64
	for i := range RelayRounds {
		lags, err := relayLags(ctx, out, orders, opts, rounds)
		if err != nil {
			return r, err
		}
		rawLags, err := raw.OutboxRelay(ctx, out, "orders", opts)
		if err != nil {
			return r, err
		}
		_, rawP99 := quantiles(rawLags)
		ratio := float64(lags.p99) / float64(rawP99)
		fmt.Fprintf(out, "pair %d: relay p50 %s p99 %s, outbox relay p99 %s: relay_p99_ratio %.3f\n", i+1,
			lags.p50.Round(100*time.Microsecond), lags.p99.Round(100*time.Microsecond), rawP99.Round(100*time.Microsecond), ratio)
		p50s = append(p50s, ms64(lags.p50))
		p99s = append(p99s, ms64(lags.p99))
		rawP99s = append(rawP99s, ms64(rawP99))
		ratios = append(ratios, ratio)
	}
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	r.RelayP50, r.RelayP99, r.RawRelayP99 = ms(medianOf(p50s)), ms(medianOf(p99s)), ms(medianOf(rawP99s))
	r.RelayP99Ratio = medianOf(ratios)
	fmt.Fprintf(out, "RESULT relay relay_p50_ms=%.2f relay_p99_ms=%.2f raw_relay_p99_ms=%.2f relay_p99_ratio=%.3f busy=%d\n",
		ms64(r.RelayP50), ms64(r.RelayP99), ms64(r.RawRelayP99), r.RelayP99Ratio, load.End())
	return r, nil
}
